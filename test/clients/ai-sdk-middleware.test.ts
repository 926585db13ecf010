/**
 * offloadMiddleware with the AI SDK's real provider packages against a fake provider on 127.0.0.1:
 * @ai-sdk/anthropic, @ai-sdk/openai (Responses and Chat), @ai-sdk/google and @ai-sdk/openai-compatible, each
 * with generateText and streamText and tools. The middleware works on the provider-neutral prompt, so what
 * the fake receives is each provider's own wire format with our stub and our tool in it; what the app reads
 * has no trace of our tool.
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { APICallError, generateText, stepCountIs, streamText, wrapLanguageModel } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { offloadMiddleware } from "../../src/integrations/ai-sdk.ts";
import type { OffloadCallReport, OffloadProblem } from "../../src/integrations/options.ts";
import type { ComposedStore } from "../../src/store/composed.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { anthropicMessage, ON, RECALL_NAME } from "../support/providers.ts";
import { FakeProvider } from "./fake-provider.ts";
import {
  aiMessages,
  aiTools,
  brokenStore,
  expectCompacted,
  expectResponsesThenChat,
  hop,
  names,
  statusCalls,
} from "./scripts.ts";

const fake = new FakeProvider();
let base = "";
beforeAll(async () => {
  base = await fake.start();
});
afterAll(async () => {
  await fake.stop();
});

let n = 0;
function wrap(model: LanguageModelV4, opts: { store?: ComposedStore; config?: object } = {}) {
  n++;
  const reports: OffloadCallReport[] = [];
  const problems: OffloadProblem[] = [];
  const wrapped = wrapLanguageModel({
    model,
    middleware: offloadMiddleware({
      store: opts.store ?? new MemoryStore(),
      session: `middleware-${n}`,
      secret: "middleware-clients-secret-0123456789",
      config: opts.config ?? ON,
      maxHops: 2,
      onReport: (r) => reports.push(r),
      onProblem: (p) => problems.push(p),
      log: () => {},
    }),
  });
  return { model: wrapped, reports, problems };
}

const anthropic = () => createAnthropic({ apiKey: "k", baseURL: `${base}/anthropic/v1` });
const openai = () => createOpenAI({ apiKey: "k", baseURL: `${base}/openai/v1` });

/** The stream read whole (our tool never in it), and its text. */
async function streamedText(result: {
  fullStream: AsyncIterable<unknown>;
  text: PromiseLike<string>;
}): Promise<string> {
  const parts: string[] = [];
  for await (const p of result.fullStream) parts.push(JSON.stringify(p));
  expect(parts.join("\n")).not.toContain(RECALL_NAME);
  return result.text;
}

describe("offloadMiddleware with @ai-sdk/anthropic", () => {
  it("generateText and streamText, each over a recall hop answered from the ledger", async () => {
    const w = wrap(anthropic()("claude-sonnet-4-6"));
    const from = fake.received.length;
    fake.reply(
      ...hop("anthropic", "item-1499 costs 2248.5."),
      ...hop("anthropic", "still item-1499.", { stream: true, before: [{ text: "Checking. " }] }),
    );
    const out = await generateText({ model: w.model, messages: aiMessages(), tools: aiTools });
    expect(out.text).toBe("item-1499 costs 2248.5.");
    expect(JSON.stringify(out.steps)).not.toContain(RECALL_NAME);
    expect(out.usage.inputTokens).toBe(1800);
    const text = await streamedText(
      streamText({ model: w.model, messages: aiMessages(), tools: aiTools }),
    );
    expect(text).toBe("Checking. still item-1499.");
    const got = fake.since(from);
    expect(got.map((r) => r.path)).toEqual(Array(4).fill("/anthropic/v1/messages"));
    expectCompacted(
      got[0]!,
      names(got[0]!.json.tools, (t) => t.name),
    );
    expect(got[1]!.body).toContain("item-1499");
    // The same prompt, the same bytes: the second turn's first request is the first turn's.
    expect(got[2]!.json.messages).toEqual(got[0]!.json.messages);
    expect(w.reports.map((r) => r.summary.proxy?.hops)).toEqual([1, 1]);
  });

  it("a hop sends the model's thinking back with its signature, as tool use with thinking requires", async () => {
    const w = wrap(anthropic()("claude-sonnet-4-6"));
    const from = fake.received.length;
    fake.reply(
      ...hop("anthropic", "item-1499.", {
        before: [{ thinking: "Read the stub.", signature: "sig-1" }],
      }),
      ...hop("anthropic", "again item-1499.", {
        stream: true,
        before: [{ thinking: "Read it again.", signature: "sig-2" }],
      }),
    );
    const out = await generateText({ model: w.model, messages: aiMessages(), tools: aiTools });
    expect(out.text).toBe("item-1499.");
    expect(out.reasoningText).toBe("Read the stub.");
    await streamedText(streamText({ model: w.model, messages: aiMessages(), tools: aiTools }));
    const [, generatedHop, , streamedHop] = fake.since(from);
    for (const [hopReq, signature] of [
      [generatedHop!, "sig-1"],
      [streamedHop!, "sig-2"],
    ] as const) {
      const assistant = (
        hopReq.json.messages as { role: string; content: { type: string }[] }[]
      ).at(-2)!;
      expect(assistant.content[0]).toMatchObject({ type: "thinking", signature });
      expect(assistant.content.at(-1)).toMatchObject({ type: "tool_use", name: RECALL_NAME });
    }
  });

  it("a mixed step: the app's tool runs, ours never shows, and the next step carries our recall", async () => {
    const w = wrap(anthropic()("claude-sonnet-4-6"));
    const from = fake.received.length;
    const before = statusCalls.length;
    fake.reply(
      ...hop("anthropic", "item-1499, and all is well.", {
        stream: true,
        after: [{ call: "status", id: "toolu_s", input: {} }],
      }),
    );
    const text = await streamedText(
      streamText({
        model: w.model,
        messages: aiMessages(),
        tools: aiTools,
        stopWhen: stepCountIs(3),
      }),
    );
    expect(text).toBe("item-1499, and all is well.");
    expect(statusCalls.length).toBe(before + 1);
    const second = fake.since(from)[1]!.json.messages as {
      content: { type: string; id?: string; tool_use_id?: string }[];
    }[];
    const ids = (blocks: { id?: string; tool_use_id?: string }[]) =>
      blocks.flatMap((b) => b.id ?? b.tool_use_id ?? []).map((id) => id.replace(/\d+$/, ""));
    expect(ids(second.at(-2)!.content)).toEqual(["toolu_s", "toolu_r"]);
    expect(ids(second.at(-1)!.content)).toEqual(["toolu_s", "toolu_r"]);
    expect(JSON.stringify(second.at(-1))).toContain("item-1499");
  });

  it("a provider error reaches the app as it would without the middleware", async () => {
    const script = {
      status: 429,
      headers: { "retry-after": "3" },
      json: { type: "error", error: { type: "rate_limit_error", message: "slow down" } },
    };
    fake.reply(script, script);
    const plain = await generateText({
      model: anthropic()("claude-sonnet-4-6"),
      messages: aiMessages(),
      tools: aiTools,
      maxRetries: 0,
    }).catch((e: unknown) => e);
    const ours = await generateText({
      model: wrap(anthropic()("claude-sonnet-4-6")).model,
      messages: aiMessages(),
      tools: aiTools,
      maxRetries: 0,
    }).catch((e: unknown) => e);
    expect(APICallError.isInstance(ours)).toBe(true);
    expect(ours).toMatchObject({
      statusCode: (plain as APICallError).statusCode,
      message: (plain as APICallError).message,
      responseHeaders: expect.objectContaining({ "retry-after": "3" }),
    });
  });

  it("a failing store: the call goes out full, the app hears why", async () => {
    const w = wrap(anthropic()("claude-sonnet-4-6"), { store: brokenStore() });
    const from = fake.received.length;
    fake.reply({ json: anthropicMessage("m", [{ text: "fine" }], { input: 1, output: 1 }) });
    const out = await generateText({ model: w.model, messages: aiMessages(), tools: aiTools });
    expect(out.text).toBe("fine");
    expect(fake.since(from)[0]!.body).toContain("item-1499");
    expect(w.problems).toEqual([expect.objectContaining({ code: "storage_error" })]);
  });
});

describe("offloadMiddleware with @ai-sdk/openai", () => {
  it("Responses (generateText) and Chat Completions (streamText), over a recall hop", async () => {
    const w = wrap(openai()("gpt-4.1"));
    const chat = wrap(openai().chat("gpt-4.1"));
    const from = fake.received.length;
    fake.reply(
      ...hop("responses", "item-1499."),
      ...hop("chat", "still item-1499.", { stream: true }),
    );
    const out = await generateText({
      model: w.model,
      messages: aiMessages(),
      tools: aiTools,
      providerOptions: { openai: { store: false } },
    });
    expect(out.text).toBe("item-1499.");
    expect(
      await streamedText(streamText({ model: chat.model, messages: aiMessages(), tools: aiTools })),
    ).toBe("still item-1499.");
    const got = fake.since(from);
    expectResponsesThenChat(got);
    expect(w.reports[0]!.summary).toMatchObject({ priced_as: "gpt-4.1", proxy: { hops: 1 } });
  });
});

describe("offloadMiddleware with providers the proxy does not speak", () => {
  it("@ai-sdk/google: generateText and streamText over a recall hop (priced as configured)", async () => {
    const google = createGoogleGenerativeAI({ apiKey: "k", baseURL: `${base}/google/v1beta` });
    // Gemini is not in the price table: the config names a model to price it as.
    const w = wrap(google("gemini-2.5-flash"), {
      config: { ...ON, tool_result_pricing_model: "gpt-4.1" },
    });
    const from = fake.received.length;
    fake.reply(
      ...hop("gemini", "item-1499."),
      ...hop("gemini", "still item-1499.", { stream: true }),
    );
    const out = await generateText({ model: w.model, messages: aiMessages(), tools: aiTools });
    expect(out.text).toBe("item-1499.");
    expect(JSON.stringify(out.steps)).not.toContain(RECALL_NAME);
    expect(
      await streamedText(streamText({ model: w.model, messages: aiMessages(), tools: aiTools })),
    ).toBe("still item-1499.");
    const got = fake.since(from);
    expect(got[0]!.path).toBe("/google/v1beta/models/gemini-2.5-flash:generateContent");
    expect(got[2]!.path).toBe(
      "/google/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    );
    const declared = (got[0]!.json.tools as { functionDeclarations: { name: string }[] }[]).flatMap(
      (t) => t.functionDeclarations.map((f) => f.name),
    );
    expectCompacted(got[0]!, declared);
    expect(got[1]!.body).toContain("item-1499");
    expect(w.reports[0]!.summary).toMatchObject({ priced_as: "gpt-4.1", offloaded: 1 });
  });

  it("@ai-sdk/google without a price: never offloads, and the report says it was not priced", async () => {
    const google = createGoogleGenerativeAI({ apiKey: "k", baseURL: `${base}/google/v1beta` });
    const w = wrap(google("gemini-2.5-flash"));
    const from = fake.received.length;
    fake.reply(...hop("gemini", "unused").slice(1));
    await generateText({ model: w.model, messages: aiMessages(), tools: aiTools });
    expect(fake.since(from)[0]!.body).toContain("item-1499");
    expect(w.reports[0]!.summary).toMatchObject({
      model: "gemini-2.5-flash",
      priced_as: null,
      offloaded: 0,
    });
  });

  it("@ai-sdk/openai-compatible (a local server): streamText over a recall hop", async () => {
    const local = createOpenAICompatible({
      name: "local",
      apiKey: "k",
      baseURL: `${base}/compat/v1`,
    });
    const w = wrap(local.chatModel("gpt-4.1"));
    const from = fake.received.length;
    fake.reply(...hop("chat", "item-1499.", { stream: true }));
    expect(
      await streamedText(streamText({ model: w.model, messages: aiMessages(), tools: aiTools })),
    ).toBe("item-1499.");
    const got = fake.since(from);
    expect(got.map((r) => r.path)).toEqual(Array(2).fill("/compat/v1/chat/completions"));
    expectCompacted(
      got[0]!,
      names(got[0]!.json.tools, (t) => (t.function as { name: string }).name),
    );
  });
});

/**
 * offloadFetch with the real clients, in this process, against a fake provider on 127.0.0.1: the official
 * SDKs (@anthropic-ai/sdk, openai), the AI SDK's provider packages (@ai-sdk/anthropic, @ai-sdk/openai) with
 * generateText and streamText and tools, and LangChain's chat models (@langchain/anthropic,
 * @langchain/openai). Each gets `fetch` and nothing else changes. We assert on what the fake received (our
 * stub, our tool last, the recall answered from the ledger on the hop) and on what the client parsed (no
 * trace of our tool, one answer, provider errors as the provider sent them).
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import Anthropic from "@anthropic-ai/sdk";
import { ChatAnthropic } from "@langchain/anthropic";
import { ChatOpenAI } from "@langchain/openai";
import { generateText, stepCountIs, streamText } from "ai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { offloadFetch } from "../../src/integrations/fetch.ts";
import type { OffloadCallReport, OffloadProblem } from "../../src/integrations/options.ts";
import type { ComposedStore } from "../../src/store/composed.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import {
  anthropicMessage,
  anthropicRequest,
  catalog,
  chatRequest,
  ON,
  RECALL_NAME,
  responsesRequest,
} from "../support/providers.ts";
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

const SECRET = "in-process-test-secret-0123456789";
const fake = new FakeProvider();
let base = "";

beforeAll(async () => {
  base = await fake.start();
});
afterAll(async () => {
  await fake.stop();
});

interface Harness {
  store: ComposedStore;
  fetch: typeof fetch;
  reports: OffloadCallReport[];
  problems: OffloadProblem[];
}

let n = 0;
function harness(
  opts: {
    store?: ComposedStore;
    config?: object;
    session?: string | ((r: Request) => string);
  } = {},
): Harness {
  n++;
  const store = opts.store ?? new MemoryStore();
  const reports: OffloadCallReport[] = [];
  const problems: OffloadProblem[] = [];
  const f = offloadFetch({
    store,
    session: opts.session ?? `in-process-${n}`,
    secret: SECRET,
    config: opts.config ?? ON,
    maxHops: 2,
    onReport: (r) => reports.push(r),
    onProblem: (p) => problems.push(p),
    log: () => {},
  });
  return { store, fetch: f, reports, problems };
}

function anthropicClient(h: Harness): Anthropic {
  return new Anthropic({
    apiKey: "sk-ant-fake",
    baseURL: `${base}/anthropic`,
    fetch: h.fetch,
    maxRetries: 0,
  });
}

function openaiClient(h: Harness): OpenAI {
  return new OpenAI({
    apiKey: "sk-openai-fake",
    baseURL: `${base}/openai/v1`,
    fetch: h.fetch,
    maxRetries: 0,
  });
}

describe("@anthropic-ai/sdk with offloadFetch", () => {
  it("buffered: the recall hop is answered in this process; one message, summed usage", async () => {
    const h = harness();
    const from = fake.received.length;
    fake.reply(...hop("anthropic", "item-1499 costs 2248.5."));
    const msg = await anthropicClient(h).messages.create(
      anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming,
    );
    expect(msg.content).toEqual([{ type: "text", text: "item-1499 costs 2248.5." }]);
    expect(msg.usage).toMatchObject({ input_tokens: 1800, output_tokens: 30 });
    expect(JSON.stringify(msg)).not.toContain(RECALL_NAME);
    const [first, second] = fake.since(from);
    expect(fake.since(from)).toHaveLength(2);
    expect(first!.path).toBe("/anthropic/v1/messages");
    expect(first!.headers.authorization ?? first!.headers["x-api-key"]).toContain("sk-ant-fake");
    expectCompacted(
      first!,
      names(first!.json.tools, (t) => t.name),
    );
    expect(second!.body).toContain("item-1499");
    expect(h.reports).toHaveLength(1);
    expect(h.reports[0]!.summary).toMatchObject({
      offloaded: 1,
      recall_tool: "added",
      proxy: { hops: 1, recalls: 1, ending: "done" },
    });
    expect(h.problems).toEqual([]);
    // The session's state is the store's: the decision is sticky and the hop is on the turn's line.
    const detail = await h.store.describeSession(h.reports[0]!.session!);
    expect(detail!.turns.at(-1)!.proxy).toEqual({ hops: 1, recalls: 1, exhausted: false });
  });

  it("streamed: one well-formed stream over the hop, our tool never in it", async () => {
    const h = harness();
    fake.reply(
      ...hop("anthropic", "It is item-1499.", {
        stream: true,
        before: [{ text: "Let me check. " }],
      }),
    );
    const stream = anthropicClient(h).messages.stream(
      anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming,
    );
    const final = await stream.finalMessage();
    expect(final.content).toEqual([
      { type: "text", text: "Let me check. " },
      { type: "text", text: "It is item-1499." },
    ]);
    expect(final.usage.output_tokens).toBe(30);
    expect(JSON.stringify(final)).not.toContain(RECALL_NAME);
    // A stream's report comes at its end, with the hops.
    expect(h.reports[0]!.summary.proxy).toMatchObject({ stream: true, hops: 1, recalls: 1 });
  });

  it("a provider error reaches the SDK as the provider sent it (status, body, headers)", async () => {
    const h = harness();
    fake.reply({
      status: 429,
      headers: { "retry-after": "7", "x-should-retry": "false" },
      json: { type: "error", error: { type: "rate_limit_error", message: "slow down" } },
    });
    const err = await anthropicClient(h)
      .messages.create(anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(429);
    expect((err as InstanceType<typeof Anthropic.APIError>).headers?.get("retry-after")).toBe("7");
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toEqual({
      type: "error",
      error: { type: "rate_limit_error", message: "slow down" },
    });
  });

  it("a dropped connection is the same connection error the SDK gets without us", async () => {
    const plain = new Anthropic({ apiKey: "k", baseURL: `${base}/anthropic`, maxRetries: 0 });
    fake.reply({ drop: true }, { drop: true });
    const without = await plain.messages
      .create(anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    const withUs = await anthropicClient(harness())
      .messages.create(anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    expect(without).toBeInstanceOf(Anthropic.APIConnectionError);
    expect(withUs).toBeInstanceOf(Anthropic.APIConnectionError);
    expect((withUs as Error).message).toBe((without as Error).message);
  });

  it("a failing store: the request goes out full, the app hears why, the call succeeds", async () => {
    const broken = brokenStore();
    const h = harness({ store: broken });
    const from = fake.received.length;
    fake.reply({ json: anthropicMessage("msg_f", [{ text: "fine" }], { input: 10, output: 1 }) });
    const msg = await anthropicClient(h).messages.create(
      anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming,
    );
    expect(msg.content).toEqual([{ type: "text", text: "fine" }]);
    expect(fake.since(from)[0]!.body).toBe(JSON.stringify(anthropicRequest()));
    expect(h.problems).toEqual([
      expect.objectContaining({
        code: "storage_error",
        message: expect.stringContaining("passed through"),
      }),
    ]);
  });

  it("a ledger that fails keeps the result full (nothing lost) and says so", async () => {
    const h = harness({ store: brokenStore({ ledger: true }) });
    const from = fake.received.length;
    fake.reply({ json: anthropicMessage("msg_l", [{ text: "fine" }], { input: 10, output: 1 }) });
    await anthropicClient(h).messages.create(
      anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming,
    );
    expect(fake.since(from)[0]!.body).toContain("item-1499");
    expect(h.problems).toEqual([
      expect.objectContaining({ code: "storage_error", tool_use_id: "toolu_1" }),
    ]);
  });

  it("other endpoints and bodies pass through untouched", async () => {
    const seen: { url: string; init?: RequestInit }[] = [];
    const f = offloadFetch({
      store: new MemoryStore(),
      session: "s",
      secret: SECRET,
      config: ON,
      fetch: async (url, init) => {
        seen.push({ url: String(url), ...(init === undefined ? {} : { init }) });
        return new Response("{}");
      },
    });
    const count = { method: "POST", body: JSON.stringify(anthropicRequest()) };
    await f("https://api.anthropic.com/v1/messages/count_tokens", count);
    await f("https://api.anthropic.com/v1/messages", { method: "POST", body: "not json" });
    await f("https://api.openai.com/v1/models");
    expect(seen.map((s) => s.url)).toEqual([
      "https://api.anthropic.com/v1/messages/count_tokens",
      "https://api.anthropic.com/v1/messages",
      "https://api.openai.com/v1/models",
    ]);
    expect(seen[0]!.init).toBe(count);
    expect(seen[1]!.init!.body).toBe("not json");
  });
});

describe("openai with offloadFetch", () => {
  it("chat completions, buffered and streamed, over a recall hop", async () => {
    const h = harness();
    const from = fake.received.length;
    fake.reply(...hop("chat", "item-1499."), ...hop("chat", "still item-1499.", { stream: true }));
    const client = openaiClient(h);
    const done = await client.chat.completions.create(
      chatRequest() as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming,
    );
    expect(done.choices[0]!.message.content).toBe("item-1499.");
    expect(done.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(done.usage).toMatchObject({ prompt_tokens: 1800, completion_tokens: 30 });
    const stream = await client.chat.completions.create({
      ...(chatRequest() as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming),
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    for await (const chunk of stream) {
      expect(JSON.stringify(chunk)).not.toContain(RECALL_NAME);
      text += chunk.choices[0]?.delta.content ?? "";
    }
    expect(text).toBe("still item-1499.");
    const got = fake.since(from);
    expect(got).toHaveLength(4);
    expectCompacted(
      got[0]!,
      names(got[0]!.json.tools, (t) => (t.function as { name: string }).name),
    );
    expect(got[1]!.body).toContain("item-1499");
  });

  it("responses, buffered and streamed, over a recall hop", async () => {
    const h = harness();
    const from = fake.received.length;
    fake.reply(
      ...hop("responses", "item-1499."),
      ...hop("responses", "still item-1499.", { stream: true }),
    );
    const client = openaiClient(h);
    const done = await client.responses.create(
      responsesRequest() as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming,
    );
    expect(done.output_text).toBe("item-1499.");
    expect(JSON.stringify(done)).not.toContain(RECALL_NAME);
    const stream = client.responses.stream(
      responsesRequest() as unknown as OpenAI.Responses.ResponseCreateParamsStreaming,
    );
    const final = await stream.finalResponse();
    expect(final.output_text).toBe("still item-1499.");
    expect(JSON.stringify(final)).not.toContain(RECALL_NAME);
    const got = fake.since(from);
    expect(got).toHaveLength(4);
    expectCompacted(
      got[0]!,
      names(got[0]!.json.tools, (t) => t.name),
    );
  });

  it("a provider error on the first call reaches the SDK as sent", async () => {
    const h = harness();
    fake.reply({
      status: 400,
      json: {
        error: { message: "bad model", type: "invalid_request_error", param: "model", code: null },
      },
    });
    const err = await openaiClient(h)
      .chat.completions.create(
        chatRequest() as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming,
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.APIError>).param).toBe("model");
  });
});

const aiAnthropic = (h: Harness) =>
  createAnthropic({ apiKey: "k", baseURL: `${base}/anthropic/v1`, fetch: h.fetch });

describe("the AI SDK's provider packages with offloadFetch", () => {
  it("@ai-sdk/anthropic, generateText: a recall-only step is invisible to the SDK", async () => {
    const h = harness();
    const anthropic = aiAnthropic(h);
    const from = fake.received.length;
    fake.reply(...hop("anthropic", "item-1499 costs 2248.5."));
    const out = await generateText({
      model: anthropic("claude-sonnet-4-6"),
      messages: aiMessages(),
      tools: aiTools,
      stopWhen: stepCountIs(3),
    });
    expect(out.text).toBe("item-1499 costs 2248.5.");
    expect(out.steps).toHaveLength(1);
    expect(JSON.stringify(out.steps)).not.toContain(RECALL_NAME);
    expect(out.usage.inputTokens).toBe(1800);
    const got = fake.since(from);
    expectCompacted(
      got[0]!,
      names(got[0]!.json.tools, (t) => t.name),
    );
    expect(got[1]!.body).toContain("item-1499");
  });

  it("@ai-sdk/anthropic, streamText: a mixed turn (our tool and the app's) runs the app's tool, and the next step gets our recall back", async () => {
    const h = harness();
    const anthropic = aiAnthropic(h);
    const from = fake.received.length;
    const before = statusCalls.length;
    fake.reply(
      ...hop("anthropic", "item-1499, and all is well.", {
        stream: true,
        after: [{ call: "status", id: "toolu_s", input: {} }],
      }),
    );
    const result = streamText({
      model: anthropic("claude-sonnet-4-6"),
      messages: aiMessages(),
      tools: aiTools,
      stopWhen: stepCountIs(3),
    });
    const parts: string[] = [];
    for await (const p of result.fullStream) parts.push(JSON.stringify(p));
    expect(await result.text).toBe("item-1499, and all is well.");
    expect(statusCalls.length).toBe(before + 1);
    expect(parts.join("\n")).not.toContain(RECALL_NAME);
    const got = fake.since(from);
    expect(got).toHaveLength(2);
    // The second step's request carries the app's call and result, and ours spliced back beside them.
    const second = got[1]!.json.messages as {
      role: string;
      content: { type: string; id?: string; tool_use_id?: string; content?: unknown }[];
    }[];
    const assistant = second.at(-2)!;
    const ids = (blocks: { id?: string; tool_use_id?: string }[]) =>
      blocks.flatMap((b) => b.id ?? b.tool_use_id ?? []).map((id) => id.replace(/\d+$/, ""));
    expect(ids(assistant.content).sort()).toEqual(["toolu_r", "toolu_s"]);
    const results = second.at(-1)!.content.filter((b) => b.type === "tool_result");
    expect(ids(results).sort()).toEqual(["toolu_r", "toolu_s"]);
    expect(JSON.stringify(results)).toContain("item-1499");
  });

  it("@ai-sdk/openai (Responses and Chat), generateText and streamText over a recall hop", async () => {
    const h = harness();
    const openai = createOpenAI({ apiKey: "k", baseURL: `${base}/openai/v1`, fetch: h.fetch });
    const from = fake.received.length;
    fake.reply(
      ...hop("responses", "item-1499."),
      ...hop("chat", "still item-1499.", { stream: true }),
    );
    const viaResponses = await generateText({
      model: openai("gpt-4.1"),
      messages: aiMessages(),
      tools: aiTools,
      providerOptions: { openai: { store: false } },
    });
    expect(viaResponses.text).toBe("item-1499.");
    const viaChat = streamText({
      model: openai.chat("gpt-4.1"),
      messages: aiMessages(),
      tools: aiTools,
    });
    expect(await viaChat.text).toBe("still item-1499.");
    expect(JSON.stringify(await viaChat.steps)).not.toContain(RECALL_NAME);
    const got = fake.since(from);
    expectResponsesThenChat(got);
  });

  it("a provider error reaches generateText as the provider package reports it", async () => {
    const h = harness();
    const anthropic = aiAnthropic(h);
    fake.reply({
      status: 401,
      json: {
        type: "error",
        error: { type: "authentication_error", message: "invalid x-api-key" },
      },
    });
    const err = await generateText({
      model: anthropic("claude-sonnet-4-6"),
      messages: aiMessages(),
      tools: aiTools,
      maxRetries: 0,
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ statusCode: 401, message: "invalid x-api-key" });
  });
});

describe("LangChain chat models with offloadFetch", () => {
  it("@langchain/anthropic (clientOptions.fetch): invoke and stream over a recall hop", async () => {
    const h = harness();
    const model = new ChatAnthropic({
      model: "claude-sonnet-4-6",
      apiKey: "k",
      maxRetries: 0,
      clientOptions: { baseURL: `${base}/anthropic`, fetch: h.fetch },
    });
    const from = fake.received.length;
    fake.reply(
      ...hop("anthropic", "item-1499."),
      ...hop("anthropic", "still item-1499.", { stream: true }),
    );
    const history = langchainHistory();
    const answer = await model.invoke(history);
    expect(answer.content).toBe("item-1499.");
    expect(answer.tool_calls ?? []).toEqual([]);
    let streamed = "";
    for await (const chunk of await model.stream(history)) {
      expect(chunk.tool_call_chunks ?? []).toEqual([]);
      streamed +=
        typeof chunk.content === "string"
          ? chunk.content
          : chunk.content.map((c) => ("text" in c ? c.text : "")).join("");
    }
    expect(streamed).toBe("still item-1499.");
    const got = fake.since(from);
    expect(got).toHaveLength(4);
    expectCompacted(
      got[0]!,
      names(got[0]!.json.tools ?? [{ name: RECALL_NAME }], (t) => t.name),
    );
  });

  it("@langchain/openai (configuration.fetch): invoke and stream over a recall hop", async () => {
    const h = harness();
    const model = new ChatOpenAI({
      model: "gpt-4.1",
      apiKey: "k",
      maxRetries: 0,
      configuration: { baseURL: `${base}/openai/v1`, fetch: h.fetch },
    });
    const from = fake.received.length;
    fake.reply(...hop("chat", "item-1499."), ...hop("chat", "still item-1499.", { stream: true }));
    const history = langchainHistory("call");
    const answer = await model.invoke(history);
    expect(answer.content).toBe("item-1499.");
    expect(answer.tool_calls ?? []).toEqual([]);
    let streamed = "";
    for await (const chunk of await model.stream(history)) streamed += String(chunk.content);
    expect(streamed).toBe("still item-1499.");
    const got = fake.since(from);
    expect(got.map((r) => r.path)).toEqual(Array(4).fill("/openai/v1/chat/completions"));
    expect(got[0]!.body).not.toContain("item-1499");
    expect(got[1]!.body).toContain("item-1499");
  });
});

/** The same conversation as LangChain messages (tool call ids prefixed as each provider names them). */
function langchainHistory(prefix = "toolu") {
  return [
    { role: "user", content: "Load the catalog and tell me the most expensive item." },
    { role: "assistant", content: "", tool_calls: [{ id: `${prefix}_1`, name: "dump", args: {} }] },
    { role: "tool", tool_call_id: `${prefix}_1`, content: catalog() },
    {
      role: "assistant",
      content: "",
      tool_calls: [{ id: `${prefix}_2`, name: "status", args: {} }],
    },
    { role: "tool", tool_call_id: `${prefix}_2`, content: "ok" },
  ];
}

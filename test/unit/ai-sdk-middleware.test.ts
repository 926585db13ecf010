// offloadMiddleware over the AI SDK's MockLanguageModelV4: what the model is sent (stubs, our tool last,
// recalls answered from the ledger on the hop), what the app reads (one result or stream, never our tool),
// and the failure paths (a failing store, an unknown model, compaction off, provider errors, a short stream).
import type {
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
} from "@ai-sdk/provider";
import {
  APICallError,
  generateText,
  type ModelMessage,
  stepCountIs,
  streamText,
  tool,
  wrapLanguageModel,
} from "ai";
import { convertArrayToReadableStream, MockLanguageModelV4 } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { offloadMiddleware } from "../../src/integrations/ai-sdk.ts";
import type { OffloadCallReport, OffloadProblem } from "../../src/integrations/options.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { MemoryIndex } from "../../src/store/memory-index.ts";
import { MemoryLedger } from "../../src/store/memory-ledger.ts";
import { MemorySessionState } from "../../src/store/memory-state.ts";
import { aiMessages } from "../support/ai-sdk.ts";
import { memIdIn, ON, RECALL_NAME } from "../support/providers.ts";

const SECRET = "middleware-test-secret-0123456789";
const USAGE = {
  inputTokens: { total: 900, noCache: 900, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 15, text: 15, reasoning: 0 },
};

type Answer = (call: LanguageModelV4CallOptions) => LanguageModelV4Content[];

const said =
  (text: string): Answer =>
  () => [{ type: "text", text }];
/** The model reads item 1499 back through our tool (with `also` beside it). */
const recalls =
  (also: LanguageModelV4Content[] = [], id = "call_r"): Answer =>
  (call) => [
    {
      type: "tool-call",
      toolCallId: id,
      toolName: RECALL_NAME,
      input: JSON.stringify({
        mem_id: memIdIn(JSON.stringify(call.prompt)),
        json_path: "$.items[1499]",
      }),
    },
    ...also,
  ];

function generated(content: LanguageModelV4Content[]): LanguageModelV4GenerateResult {
  const calls = content.some((c) => c.type === "tool-call");
  return {
    content,
    finishReason: { unified: calls ? "tool-calls" : "stop", raw: calls ? "tool_use" : "end_turn" },
    usage: USAGE,
    warnings: [],
    response: { id: `resp-${content.length}` },
  };
}

function streamed(content: LanguageModelV4Content[], cut = false): LanguageModelV4StreamPart[] {
  const parts: LanguageModelV4StreamPart[] = [{ type: "stream-start", warnings: [] }];
  content.forEach((c, i) => {
    if (c.type === "text") {
      parts.push(
        { type: "text-start", id: `${i}` },
        { type: "text-delta", id: `${i}`, delta: c.text.slice(0, 3) },
        { type: "text-delta", id: `${i}`, delta: c.text.slice(3) },
        { type: "text-end", id: `${i}` },
      );
    } else if (c.type === "tool-call") {
      parts.push(
        { type: "tool-input-start", id: c.toolCallId, toolName: c.toolName },
        { type: "tool-input-delta", id: c.toolCallId, delta: c.input },
        { type: "tool-input-end", id: c.toolCallId },
        c,
      );
    }
  });
  if (!cut)
    parts.push({ type: "finish", usage: USAGE, finishReason: generated(content).finishReason });
  return parts;
}

/** A model that answers from a script, in order (buffered or streamed), and keeps what it was sent. */
function model(
  answers: Answer[],
  opts: { modelId?: string; provider?: string; cut?: number } = {},
) {
  let n = 0;
  const next = (call: LanguageModelV4CallOptions) => {
    const answer = answers[n++];
    if (answer === undefined) throw new Error(`unexpected model call #${n}`);
    return answer(call);
  };
  return new MockLanguageModelV4({
    provider: opts.provider ?? "anthropic.messages",
    modelId: opts.modelId ?? "claude-sonnet-4-6",
    doGenerate: async (call) => generated(next(call)),
    doStream: async (call) => ({
      stream: convertArrayToReadableStream(streamed(next(call), opts.cut === n)),
    }),
  });
}

const tools = {
  status: tool({
    description: "Check the status",
    inputSchema: z.object({}),
    execute: async () => "ok",
  }),
};

function harness(opts: { store?: ComposedStore; config?: object; maxHops?: number } = {}) {
  const reports: OffloadCallReport[] = [];
  const problems: OffloadProblem[] = [];
  const middleware = offloadMiddleware({
    store: opts.store ?? new MemoryStore(),
    session: "chat-1",
    secret: SECRET,
    config: opts.config ?? ON,
    maxHops: opts.maxHops ?? 2,
    onReport: (r) => reports.push(r),
    onProblem: (p) => problems.push(p),
    log: () => {},
  });
  return { middleware, reports, problems };
}

const sentText = (call: LanguageModelV4CallOptions) => JSON.stringify(call.prompt);
const toolNames = (call: LanguageModelV4CallOptions) => (call.tools ?? []).map((t) => t.name);

describe("offloadMiddleware, generate", () => {
  it("compacts the prompt, answers a recall-only step itself, and gives the app one result", async () => {
    const h = harness();
    const inner = model([recalls(), said("item-1499 costs 2248.5.")]);
    const out = await generateText({
      model: wrapLanguageModel({ model: inner, middleware: h.middleware }),
      messages: aiMessages(),
      tools,
    });
    expect(out.text).toBe("item-1499 costs 2248.5.");
    expect(out.steps).toHaveLength(1);
    expect(JSON.stringify(out.steps)).not.toContain(RECALL_NAME);
    expect(out.finishReason).toBe("stop");
    expect(out.usage).toMatchObject({ inputTokens: 1800, outputTokens: 30 });
    const [first, hop] = inner.doGenerateCalls;
    expect(sentText(first!)).not.toContain("item-1499");
    expect(toolNames(first!)).toEqual(["status", RECALL_NAME]);
    // The hop: our call and the ledger's answer appended after the model's answer.
    expect(hop!.prompt.slice(0, -2)).toEqual(first!.prompt);
    expect(hop!.prompt.at(-1)).toMatchObject({
      role: "tool",
      content: [{ type: "tool-result", toolName: RECALL_NAME, output: { type: "text" } }],
    });
    expect(JSON.stringify(hop!.prompt.at(-1))).toContain("item-1499");
    expect(h.reports).toHaveLength(1);
    expect(h.reports[0]!.summary).toMatchObject({
      format: "ai-sdk",
      offloaded: 1,
      priced_as: "claude-sonnet-4-6",
      proxy: { stream: false, hops: 1, recalls: 1, ending: "done" },
    });
    expect(h.problems).toEqual([]);
  });

  it("is deterministic and sticky: the same prompt gives the model the same bytes, later turns keep the stub", async () => {
    const store = new MemoryStore();
    const h = harness({ store });
    const inner = model([said("a"), said("b"), said("c")]);
    const wrapped = wrapLanguageModel({ model: inner, middleware: h.middleware });
    await generateText({ model: wrapped, messages: aiMessages(), tools });
    await generateText({ model: wrapped, messages: aiMessages(), tools });
    const longer: ModelMessage[] = [
      ...aiMessages(),
      { role: "assistant", content: "b" },
      { role: "user", content: "more?" },
    ];
    await generateText({ model: wrapped, messages: longer, tools });
    const [a, b, c] = inner.doGenerateCalls;
    expect(sentText(b!)).toBe(sentText(a!));
    expect(JSON.stringify(b!.tools)).toBe(JSON.stringify(a!.tools));
    expect(JSON.stringify(c!.prompt.slice(0, a!.prompt.length))).toBe(sentText(a!));
  });

  it("a mixed step: the app's tool runs, and the next step gets our recall back beside it", async () => {
    const h = harness();
    const inner = model([
      recalls([{ type: "tool-call", toolCallId: "call_s", toolName: "status", input: "{}" }]),
      said("item-1499, and all is well."),
    ]);
    const out = await generateText({
      model: wrapLanguageModel({ model: inner, middleware: h.middleware }),
      messages: aiMessages(),
      tools,
      stopWhen: stepCountIs(3),
    });
    expect(out.text).toBe("item-1499, and all is well.");
    expect(out.steps[0]!.toolCalls.map((c) => c.toolName)).toEqual(["status"]);
    expect(JSON.stringify(out.steps)).not.toContain(RECALL_NAME);
    const second = inner.doGenerateCalls[1]!;
    const assistant = second.prompt.at(-2)!;
    const results = second.prompt.at(-1)!;
    expect(assistant.role).toBe("assistant");
    expect((assistant.content as { toolCallId?: string }[]).map((p) => p.toolCallId)).toEqual([
      "call_s",
      "call_r",
    ]);
    expect((results.content as { toolCallId?: string }[]).map((p) => p.toolCallId)).toEqual([
      "call_s",
      "call_r",
    ]);
    expect(JSON.stringify(results)).toContain("item-1499");
    expect(h.reports.map((r) => r.summary.proxy?.ending)).toEqual(["mixed", "done"]);
    expect(h.reports[1]!.summary.proxy?.spliced).toBe(1);
  });

  it("stops at the hop limit with a notice, never showing our tool", async () => {
    const h = harness({ maxHops: 1 });
    const inner = model([recalls(), recalls([], "call_r2")]);
    const out = await generateText({
      model: wrapLanguageModel({ model: inner, middleware: h.middleware }),
      messages: aiMessages(),
      tools,
    });
    expect(out.text).toContain("more than 1 times");
    expect(out.finishReason).toBe("stop");
    expect(out.toolCalls).toEqual([]);
    expect(h.reports[0]!.summary.proxy).toMatchObject({ hops: 1, ending: "exhausted" });
  });

  it("never offloads for a model the price table does not know, and the report says so", async () => {
    const h = harness();
    const inner = model([said("ok")], {
      modelId: "gemini-9-ultra",
      provider: "google.generative-ai",
    });
    await generateText({
      model: wrapLanguageModel({ model: inner, middleware: h.middleware }),
      messages: aiMessages(),
      tools,
    });
    expect(sentText(inner.doGenerateCalls[0]!)).toContain("item-1499");
    expect(toolNames(inner.doGenerateCalls[0]!)).toEqual(["status"]);
    expect(h.reports[0]!.summary).toMatchObject({ priced_as: null, offloaded: 0, changed: false });
  });

  it("leaves the call as made when compaction is off, and keeps the app's bytes as objects", async () => {
    const h = harness({ config: {} });
    const inner = model([said("ok")]);
    const bytes = new Uint8Array([1, 2, 3]);
    const withFile: ModelMessage[] = [
      { role: "user", content: [{ type: "file", data: bytes, mediaType: "image/png" }] },
      ...aiMessages().slice(1),
    ];
    await generateText({
      model: wrapLanguageModel({ model: inner, middleware: h.middleware }),
      messages: withFile,
      tools,
    });
    expect(sentText(inner.doGenerateCalls[0]!)).toContain("item-1499");
    expect(h.reports[0]!.summary).toMatchObject({ enabled: false });
    // On as well: parts the turn did not rewrite keep their identity (the bytes are not serialized back).
    const on = harness();
    const inner2 = model([recalls(), said("ok")]);
    await generateText({
      model: wrapLanguageModel({ model: inner2, middleware: on.middleware }),
      messages: withFile,
      tools,
    });
    const file = inner2.doGenerateCalls[0]!.prompt[0]!.content[0] as { data: unknown };
    expect(file.data).toEqual({ type: "data", data: bytes });
    expect(sentText(inner2.doGenerateCalls[0]!)).not.toContain("item-1499");
  });

  it("a failing store: the call goes out full and the app hears why", async () => {
    const sessions = new MemorySessionState();
    const down = async (): Promise<never> => {
      throw new Error("backend down");
    };
    Object.assign(sessions, { begin: down });
    const store = new ComposedStore({
      sessions,
      ledger: new MemoryLedger(),
      index: new MemoryIndex(),
      log: () => {},
    });
    const h = harness({ store });
    const inner = model([said("fine")]);
    const out = await generateText({
      model: wrapLanguageModel({ model: inner, middleware: h.middleware }),
      messages: aiMessages(),
      tools,
    });
    expect(out.text).toBe("fine");
    expect(sentText(inner.doGenerateCalls[0]!)).toContain("item-1499");
    expect(h.problems).toEqual([
      expect.objectContaining({
        code: "storage_error",
        message: expect.stringContaining("passed through"),
      }),
    ]);
  });

  it("a provider error reaches the app as the provider package raised it", async () => {
    const h = harness();
    const error = new APICallError({
      message: "overloaded",
      url: "https://provider.test",
      requestBodyValues: {},
      statusCode: 529,
      isRetryable: false,
    });
    const inner = new MockLanguageModelV4({
      provider: "anthropic.messages",
      modelId: "claude-sonnet-4-6",
      doGenerate: async () => {
        throw error;
      },
    });
    const err = await generateText({
      model: wrapLanguageModel({ model: inner, middleware: h.middleware }),
      messages: aiMessages(),
      tools,
      maxRetries: 0,
    }).catch((e: unknown) => e);
    expect(err).toBe(error);
  });
});

describe("offloadMiddleware, stream", () => {
  it("one stream over the hop: text of both hops, our tool's parts held back, usage summed", async () => {
    const h = harness();
    const inner = model([recalls(), said("It is item-1499.")]);
    const result = streamText({
      model: wrapLanguageModel({ model: inner, middleware: h.middleware }),
      messages: aiMessages(),
      tools,
    });
    const parts: string[] = [];
    for await (const p of result.fullStream) parts.push(JSON.stringify(p));
    expect(await result.text).toBe("It is item-1499.");
    expect(parts.join("\n")).not.toContain(RECALL_NAME);
    expect(await result.finishReason).toBe("stop");
    expect((await result.usage).inputTokens).toBe(1800);
    expect(inner.doStreamCalls).toHaveLength(2);
    expect(JSON.stringify(inner.doStreamCalls[1]!.prompt.at(-1))).toContain("item-1499");
    expect(h.reports[0]!.summary.proxy).toMatchObject({ stream: true, hops: 1, recalls: 1 });
  });

  it("a stream that ends before its finish part ends with an error part", async () => {
    const h = harness();
    const inner = model([recalls(), said("never finished")], { cut: 2 });
    const result = streamText({
      model: wrapLanguageModel({ model: inner, middleware: h.middleware }),
      messages: aiMessages(),
      tools,
      onError: () => {},
    });
    const types: string[] = [];
    for await (const p of result.fullStream) types.push(p.type);
    expect(types).toContain("error");
    expect(h.reports[0]!.summary.proxy).toMatchObject({ hops: 1 });
  });
});

describe("offloadMiddleware, its count option", () => {
  const base = { store: new MemoryStore(), session: "s", secret: "a-middleware-secret-0123" };
  it("refuses an unknown provider or an empty key at setup, naming the option", () => {
    const bad = (count: unknown, path: string) => {
      try {
        offloadMiddleware({ ...base, count } as never);
        throw new Error("accepted");
      } catch (e) {
        expect(e).toMatchObject({ type: "invalid_argument", path });
      }
    };
    bad({ provider: "google", apiKey: "k" }, "count.provider");
    bad({ provider: "anthropic", apiKey: " " }, "count.apiKey");
    expect(() =>
      offloadMiddleware({ ...base, count: { provider: "openai", apiKey: "k" } }),
    ).not.toThrow();
  });
});

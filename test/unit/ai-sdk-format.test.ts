// What is particular to the AI SDK prompt's adapter (the shared invariant cases run in formats.test.ts):
// JSON outputs measured as the JSON text providers send, error and denial outputs, the provider's own tool
// results inside assistant messages, and the two caching models (Anthropic markers, automatic prefixes).
import { describe, expect, it } from "vitest";
import { usageTokens } from "../../src/core/billing.ts";
import { adapterFor, compact } from "../../src/core/compact.ts";
import { parseJsonSpans } from "../../src/core/json/scan.ts";
import { rebuild } from "../../src/integrations/ai-sdk-prompt.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { aiSdkKit as kit, type Req } from "../support/formats.ts";
import { jsonBody, ON } from "../support/requests.ts";

const analyze = (req: Req) => {
  const text = JSON.stringify(req);
  return adapterFor("ai-sdk").analyze(text, parseJsonSpans(text));
};

async function run(req: Req, config: object = ON, sendsBetas = false) {
  const out = await compact({
    format: "ai-sdk",
    request: JSON.stringify(req),
    session: "s",
    store: new MemoryStore(),
    config,
    sendsBetas,
  });
  return { ...out, req: JSON.parse(out.request) as Req };
}

/** The output of the tool-result answering `id`. */
function outputOf(req: Req, id: string): Req {
  for (const m of req.prompt)
    if (m.role === "tool")
      for (const p of m.content) if (p.toolCallId === id) return p.output as Req;
  throw new Error(`no result ${id}`);
}

/** t1's output replaced by `output`, t2 small and hot. */
function withOutput(output: Req, model?: string): Req {
  const req = kit.conversation(
    [
      { id: "t1", result: "x" },
      { id: "t2", result: "ok" },
    ],
    model === undefined ? {} : { model },
  );
  req.prompt[2].content[0].output = output;
  return req;
}

describe("the AI SDK prompt adapter", () => {
  it("measures a json output as its JSON text and replaces it by a text output naming the mem_id", async () => {
    const value = JSON.parse(jsonBody(80_000));
    const out = await run(withOutput({ type: "json", value, providerOptions: { x: { y: 1 } } }));
    expect(out.decisions[0]).toMatchObject({
      action: "offloaded",
      chars: JSON.stringify(value).length,
      tool_name: "bash",
    });
    const stub = outputOf(out.req, "t1");
    expect(stub).toEqual({
      type: "text",
      value: expect.stringContaining("trm_"),
      providerOptions: { x: { y: 1 } },
    });
  });

  it("keeps an error an error (error-json becomes error-text) and leaves a denial alone", async () => {
    const value = JSON.parse(jsonBody(80_000));
    const err = await run(withOutput({ type: "error-json", value }));
    expect(outputOf(err.req, "t1")).toMatchObject({ type: "error-text" });
    const denied = await run(withOutput({ type: "execution-denied", reason: "no" }));
    expect(denied.changed).toBe(false);
    expect(denied.decisions[0]).toMatchObject({ chars: 0, action: "kept" });
  });

  it("never decides the provider's own tool results inside assistant messages", async () => {
    const req = kit.conversation([
      { id: "t1", result: "x" },
      { id: "t2", result: "ok" },
    ]);
    req.prompt[1].content.push(
      {
        type: "tool-call",
        toolCallId: "ws1",
        toolName: "web_search",
        input: {},
        providerExecuted: true,
      },
      {
        type: "tool-result",
        toolCallId: "ws1",
        toolName: "web_search",
        output: { type: "text", value: jsonBody(90_000) },
      },
    );
    const out = await run(req);
    expect(out.decisions.map((d) => d.tool_use_id)).toEqual(["t1", "t2"]);
    expect(out.changed).toBe(false);
  });

  it("reads Anthropic markers from providerOptions on tools, messages and parts", () => {
    const req = withOutput({ type: "text", value: "x" });
    const marker = { anthropic: { cacheControl: { type: "ephemeral", ttl: "1h" } } };
    req.tools[0].providerOptions = marker;
    req.prompt[0].providerOptions = marker;
    req.prompt[2].content[0].providerOptions = {
      anthropic: { cacheControl: { type: "ephemeral" } },
    };
    const a = analyze(req);
    expect(a.breakpoints.map((b) => b.ttl)).toEqual(["1h", "1h", "5m"]);
    expect(a.client_caches).toBe(true);
    expect(a.auto_cache).toBe(false);
    expect(analyze(withOutput({ type: "text", value: "x" })).client_caches).toBe(false);
  });

  it("reads reasoning parts as thinking blocks: a preserved-thinking model's earlier results stay as sent", async () => {
    const req = withOutput({ type: "text", value: jsonBody(80_000) }, "claude-sonnet-5-5");
    expect(analyze(req).last_thinking_position).toBeUndefined();
    // the model reasoned after t1's result (prompt: user, call t1, result t1, call t2, result t2)
    req.prompt[3].content.unshift({ type: "reasoning", text: "t1 shows the bug" });
    const a = analyze(req);
    expect(a.last_thinking_position).toBeGreaterThan(a.sites[0]!.position);
    const out = await run(req);
    expect(out.decisions[0]).toMatchObject({ tool_use_id: "t1", action: "kept" });
    expect(out.decisions[0]!.reason).toMatch(/preserved thinking follows it/);
    expect(outputOf(out.req, "t1")).toEqual(outputOf(req, "t1"));
    // the same request to a model without the check has it offloaded
    const older = await run({ ...req, model: "claude-sonnet-4-6" });
    expect(older.decisions[0]).toMatchObject({ tool_use_id: "t1", action: "offloaded" });
  });

  describe("the recall tool declared mid-conversation (Anthropic's provider package, toolChanges)", () => {
    const inline = (req: Req, after: number): Req | null => {
      const text = JSON.stringify(req);
      const edit = adapterFor("ai-sdk").declareRecallToolInline!(
        text,
        parseJsonSpans(text),
        "both",
        after,
      );
      return edit === null
        ? null
        : (JSON.parse(text.slice(0, edit.start) + edit.text + text.slice(edit.end)) as Req);
    };
    // prompt: 0 user, 1 call t1, 2 result t1, 3 call t2, 4 result t2
    const req = () => withOutput({ type: "text", value: "x" }, "claude-opus-4-8");

    it("goes in a system message after the run of results, before the next assistant message, or at the end", () => {
      const mid = inline(req(), 2)!;
      expect(mid.prompt.map((m: Req) => m.role).join()).toBe(
        "user,assistant,tool,system,assistant,tool",
      );
      expect(mid.prompt[3]).toEqual({
        role: "system",
        content: "",
        providerOptions: {
          anthropic: {
            toolChanges: [
              {
                type: "tool_addition",
                tool: expect.objectContaining({ type: "function", name: "recall_tool_result" }),
              },
            ],
          },
        },
      });
      // the adapter reads its own declaration as a system message
      expect(analyze(mid).sites).toHaveLength(2);
      expect(inline(req(), 4)!.prompt.at(-1).role).toBe("system");
    });

    it("fits nowhere else: another provider, the app's system message next, or after an assistant message", () => {
      expect(inline({ ...req(), provider: "openai.responses" }, 2)).toBeNull();
      expect(inline({ ...req(), provider: "amazon-bedrock" }, 2)).toBeNull();
      const own = req();
      own.prompt.splice(3, 0, { role: "system", content: "Be brief." });
      expect(inline(own, 2)).toBeNull();
      expect(inline(req(), 1)).toBeNull();
    });

    it("a caller that sends the betas gets it inline; the call rebuilt keeps the app's objects and the stubs in place", async () => {
      const params = withOutput({ type: "text", value: jsonBody(80_000) }, "claude-opus-4-8");
      params.prompt[4].content[0].output = { type: "text", value: jsonBody(90_000) };
      params.prompt.push({ role: "assistant", content: [{ type: "text", text: "reading" }] });
      const out = await run(params, { ...ON, tool_result_compaction_keep_last_n: 0 }, true);
      expect(out.decisions.map((d) => d.action)).toEqual(["offloaded", "offloaded"]);
      expect(out.report.anthropic_beta).toEqual(["inline-tools-2026-09-15"]);
      const call = rebuild(
        { prompt: params.prompt, tools: params.tools } as never,
        out.request,
        out.decisions,
      );
      // the declaration after the earliest stub's result; the second result's stub in its own message
      expect(call.prompt.map((m) => m.role).join()).toBe(
        "user,assistant,tool,system,assistant,tool,assistant",
      );
      expect(call.tools).toEqual(params.tools);
      const stubOf = (m: number) =>
        JSON.stringify((call.prompt[m] as { content: { output: unknown }[] }).content[0]!.output);
      expect(stubOf(2)).toContain("trm_");
      expect(stubOf(5)).toContain("trm_");
      expect(call.prompt[4]).toBe(params.prompt[3]);
      expect(call.prompt[6]).toBe(params.prompt[5]);
      // without the promise, the tool goes in `tools`
      const plain = await run(params);
      expect(plain.report.anthropic_beta).toBeUndefined();
      expect(plain.req.prompt.some((m: Req) => m.role === "system")).toBe(false);
    });
  });

  it("models the breakpoints the Anthropic package sends: the first four of the prompt's, then the tools'", () => {
    const marker = { anthropic: { cacheControl: { type: "ephemeral" } } };
    const req = kit.conversation(
      [1, 2, 3, 4, 5].map((i) => ({ id: `t${i}`, result: `result ${i}` })),
      { model: "claude-sonnet-4-6" },
    );
    // the app marked every tool message and its tool: six markers
    for (const m of req.prompt) if (m.role === "tool") m.providerOptions = marker;
    req.tools[0].providerOptions = marker;
    const a = analyze(req);
    const tools = (m: Req) => JSON.stringify(m.tools).length;
    expect(a.breakpoints).toHaveLength(4);
    // the package counts the messages' markers first: the tools' and the last tool message's are dropped
    expect(a.breakpoints.every((b) => b.position > tools(req))).toBe(true);
    const last = analyze({ ...req, provider: "google.vertex.anthropic" });
    expect(last.breakpoints).toHaveLength(6);
  });

  it("leaves the provider-specific parts its package drops out of the token estimate", async () => {
    const req = withOutput({ type: "text", value: "x" }, "claude-sonnet-4-6");
    const meta = {
      type: "custom",
      kind: "anthropic.message_start",
      providerOptions: { anthropic: { id: "msg_1", usage: { input_tokens: 1 } } },
    };
    const plain = await run(req);
    req.prompt[1].content.unshift(meta);
    const withMeta = await run(req);
    expect(analyze(req).unsent_chars).toBe(JSON.stringify(meta).length);
    expect(withMeta.report.tokens_before).toBe(plain.report.tokens_before);
    // a kind the package sends back counts
    req.prompt[1].content[0] = { ...meta, kind: "anthropic.fallback" };
    expect(analyze(req).unsent_chars).toBeUndefined();
  });

  it("reads the AI SDK's usage: the provider's own object where it knows it, else the neutral fields", () => {
    const neutral = {
      inputTokens: { total: 1000, noCache: 100, cacheRead: 800, cacheWrite: 100 },
      outputTokens: { total: 50, text: 50, reasoning: undefined },
    };
    expect(usageTokens("ai-sdk", neutral)).toEqual({
      input: 100,
      cache_read: 800,
      cache_write_5m: 100,
      cache_write_1h: 0,
      output: 50,
    });
    const anthropic = {
      ...neutral,
      raw: {
        input_tokens: 100,
        cache_read_input_tokens: 800,
        cache_creation_input_tokens: 100,
        cache_creation: { ephemeral_5m_input_tokens: 40, ephemeral_1h_input_tokens: 60 },
        output_tokens: 50,
      },
    };
    expect(usageTokens("ai-sdk", anthropic)).toMatchObject({
      cache_write_5m: 40,
      cache_write_1h: 60,
    });
    const chat = {
      ...neutral,
      raw: {
        prompt_tokens: 1000,
        prompt_tokens_details: { cached_tokens: 900 },
        completion_tokens: 50,
      },
    };
    expect(usageTokens("ai-sdk", chat)).toMatchObject({ input: 100, cache_read: 900, output: 50 });
    expect(usageTokens("ai-sdk", { inputTokens: {}, outputTokens: {} })).toBeNull();
  });

  it("prices other providers' models with automatic prefix caching (OpenAI's model)", () => {
    const req = {
      ...withOutput({ type: "text", value: "y".repeat(8000) }, "gpt-4.1"),
      provider: "openai.responses",
    };
    const a = analyze(req);
    expect(a.auto_cache).toBe(true);
    expect(a.breakpoints).toHaveLength(1);
    expect(a.sites[0]!.position).toBeLessThan(a.breakpoints[0]!.position);
  });

  it("declares the recall tool as the AI SDK's function tool", async () => {
    const out = await run(withOutput({ type: "text", value: jsonBody(80_000) }));
    expect(out.req.tools.at(-1)).toMatchObject({
      type: "function",
      name: "recall_tool_result",
      inputSchema: { type: "object", required: ["mem_id"] },
    });
  });
});

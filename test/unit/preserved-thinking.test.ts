/**
 * Preserved thinking (src/core/turn/frozen.ts): on a model that checks the prefix of every thinking block
 * sent back, an agent loop through compact() never changes what came before a thinking block. The check
 * below is written from Anthropic's documented rule, not from the product's code: a thinking block is
 * valid when `system`, `tools` and the messages before it, cache breakpoints aside, are what was sent
 * when it was produced.
 */
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config.ts";
import { compact } from "../../src/core/compact.ts";
import { anthropicDialect } from "../../src/proxy/anthropic.ts";
import { proxyTurn } from "../../src/proxy/turn.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { jsonBody, ON } from "../support/requests.ts";
import {
  blockPrefix,
  failedBlocks,
  type Json,
  type Msg,
  prefixOf,
  type ThinkingReq,
} from "../support/thinking-prefix.ts";

type Req = ThinkingReq & { model: string; max_tokens: number };

/**
 * An agent loop: each call goes through compact(); the model answers with a thinking block signed over
 * the prefix it was produced after (the request as sent, plus nothing: the block opens its message) and a
 * tool call; the client appends its own history (never our output) and the tool's result.
 */
async function loop(
  model: string,
  config: Record<string, unknown>,
  results: string[],
  sendsBetas = true,
) {
  const store = new MemoryStore();
  const tools: Json = [
    { name: "bash", description: "run a command", input_schema: { type: "object" } },
  ];
  const messages: Msg[] = [{ role: "user", content: "Find the failing test and fix it." }];
  const sent: Req[] = [];
  const outputs = [];
  for (let call = 0; call <= results.length; call++) {
    const request: Req = {
      model,
      max_tokens: 1024,
      system: "You are a coding agent.",
      tools,
      messages,
    };
    const out = await compact({
      request: JSON.stringify(request),
      session: `pt-${model.replace(/[^A-Za-z0-9._:-]/g, "_")}`,
      store,
      config,
      // as the proxy calls it: the betas the report names go out with the call
      sendsBetas,
    });
    const req = JSON.parse(out.request as string) as Req;
    sent.push(req);
    outputs.push(out);
    if (call === results.length) break;
    const id = `toolu_${call}`;
    messages.push(
      {
        role: "assistant",
        content: [
          {
            type: "thinking",
            thinking: `step ${call}`,
            signature: prefixOf(req, req.messages.length),
          },
          { type: "tool_use", id, name: "bash", input: { command: `cat file${call}.json` } },
        ],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: id, content: results[call]! }],
      },
    );
  }
  return { sent, outputs };
}

/** A client request whose last message holds a fresh large result. */
const fresh = (model: string, tools?: Json[]): string =>
  JSON.stringify({
    model,
    max_tokens: 1024,
    system: "You are a coding agent.",
    tools: [
      { name: "bash", description: "run a command", input_schema: { type: "object" } },
      ...(tools ?? []),
    ],
    messages: [
      { role: "user", content: "Read the file." },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "read it", signature: "sig-0" },
          { type: "tool_use", id: "toolu_1", name: "bash", input: { command: "cat a.json" } },
        ],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_1", content: jsonBody(90_000) }],
      },
    ],
  });

const big = (i: number) => jsonBody(60_000 + i);
const RESULTS = [big(0), big(1), big(2), big(3), big(4)];

describe("preserved thinking", () => {
  it("the check has teeth: on a model without it, the defaults change what a thinking block follows", async () => {
    const { sent, outputs } = await loop("claude-sonnet-4-6", ON, RESULTS);
    // the defaults offload here (the recall tool declared on the way) ...
    expect(outputs.some((o) => o.decisions.some((d) => d.action === "offloaded"))).toBe(true);
    // ... which a preserved-thinking model would reject
    expect(sent.some((r) => failedBlocks(r).length > 0)).toBe(true);
  });

  it("on a preserved-thinking model the defaults declare the recall tool inline after the first stub, and nothing before a thinking block changes", async () => {
    const { sent, outputs } = await loop("claude-sonnet-5-5", ON, RESULTS);
    for (const r of sent) expect(failedBlocks(r)).toEqual([]);
    // tools never change: the tool comes in a system message right after the first stub's results
    for (const r of sent) expect(r.tools).toEqual(sent[0]!.tools);
    const stubbed = outputs.findIndex((o) => o.decisions.some((d) => d.action === "offloaded"));
    expect(stubbed).toBeGreaterThan(0);
    expect(outputs[stubbed]!.report).toMatchObject({
      recall_tool: "added",
      anthropic_beta: ["inline-tools-2026-09-15"],
    });
    for (const r of sent.slice(stubbed)) {
      const at = r.messages.findIndex((m) => m.role === "system");
      expect(r.messages[at - 1]!.role).toBe("user");
      expect(JSON.stringify(r.messages[at - 1])).toContain("trm_");
      expect(r.messages[at]!.content).toMatchObject([
        {
          type: "tool_addition",
          tool: { type: "tool_definition", definition: { name: "recall_tool_result" } },
        },
      ]);
    }
    // every stub landed on its result's arrival (first delivery) and stayed as it was
    for (const o of outputs)
      for (const d of o.decisions.filter((x) => x.action === "offloaded"))
        expect(d.sticky || d.gate?.inputs.first_delivery === true).toBe(true);
    expect(JSON.stringify(sent.at(-1)).length).toBeLessThan(RESULTS.join("").length / 2);
  });

  it("stubs nothing where no system message can follow the fresh results to declare the tool", async () => {
    const run = async (clear: string) => {
      const req = JSON.parse(fresh("claude-sonnet-5-5")) as Req;
      req.messages.push({
        role: "system",
        content: [{ type: "text", text: "reminder" }],
        clear_at: clear,
      } as Msg);
      return compact({
        request: JSON.stringify(req),
        session: `clear-${clear}`,
        store: new MemoryStore(),
        config: ON,
        sendsBetas: true,
      });
    };
    // a reminder shown only until the next user turn would take the tool away with it
    const cleared = await run("next_user_message");
    expect(cleared.decisions[0]).toMatchObject({ action: "kept" });
    expect(cleared.decisions[0]!.reason).toMatch(/declaring the recall tool now/);
    expect(cleared.changed).toBe(false);
    // one that stays carries the declaration at its end
    const kept = await run("never");
    expect(kept.decisions[0]!.action).toBe("offloaded");
    const last = (JSON.parse(kept.request as string) as Req).messages.at(-1)!;
    expect(last.content).toMatchObject([
      { type: "text", text: "reminder" },
      { type: "tool_addition" },
    ]);
  });

  it("a compact() caller that does not send betas gets no inline declaration: nothing is added under the thinking", async () => {
    const { sent, outputs } = await loop("claude-sonnet-5-5", ON, RESULTS, false);
    for (const r of sent) expect(failedBlocks(r)).toEqual([]);
    for (const r of sent) expect(r.messages.some((m) => m.role === "system")).toBe(false);
    for (const o of outputs) expect(o.report.anthropic_beta).toBeUndefined();
    expect(outputs.at(-1)!.decisions.at(-1)!.reason).toMatch(/declaring the recall tool now/);
  });

  it("with the inline declaration off, the recall tool is never added under the model's thinking", async () => {
    const { sent, outputs } = await loop(
      "claude-sonnet-5-5",
      { ...ON, tool_result_recall_tool_inline: false },
      RESULTS,
    );
    for (const r of sent) expect(failedBlocks(r)).toEqual([]);
    for (const r of sent) expect(r.tools).toEqual(sent[0]!.tools);
    const last = outputs.at(-1)!.decisions;
    expect(last.every((d) => d.action === "kept")).toBe(true);
    expect(last.at(-1)!.reason).toMatch(/declaring the recall tool now would change tools/);
    expect(last[0]!.reason).toMatch(/preserved thinking follows it/);
  });

  it("with the recall tool declared from the first call, fresh results are still stubbed on arrival", async () => {
    const eager = { ...ON, tool_result_recall_tool_declaration: "eager" };
    const { sent, outputs } = await loop("claude-sonnet-5-5", eager, RESULTS);
    for (const r of sent) expect(failedBlocks(r)).toEqual([]);
    const offloaded = outputs.flatMap((o) => o.decisions.filter((d) => d.action === "offloaded"));
    expect(offloaded.length).toBeGreaterThan(0);
    // every stub landed on its result's arrival (first delivery) and stayed as it was
    for (const d of offloaded)
      expect(d.sticky || d.gate?.inputs.first_delivery === true).toBe(true);
    const sizes = sent.map((r) => JSON.stringify(r).length);
    expect(sizes.at(-1)!).toBeLessThan(RESULTS.join("").length / 2);
  });

  it("a dated or prefixed id of such a model is frozen too, and an unknown Claude model is treated alike", async () => {
    for (const model of [
      "claude-sonnet-5-5-20260928",
      "anthropic/claude-opus-5-5",
      "claude-nova-9",
    ]) {
      const { sent } = await loop(model, ON, RESULTS.slice(0, 3));
      for (const r of sent) expect(failedBlocks(r)).toEqual([]);
    }
  });

  describe("where recalls are answered by hops the history does not keep (the AI SDK middleware)", () => {
    const EAGER = { ...ON, tool_result_recall_tool_declaration: "eager" };

    it("compact({hops: true}) offloads nothing new on a preserved-thinking model, and says why", async () => {
      const run = (model: string, hops: boolean, tools?: Json[]) =>
        compact({
          request: fresh(model, tools),
          session: `h-${model}-${hops}-${tools === undefined}`,
          store: new MemoryStore(),
          config: EAGER,
          hops,
        });
      const held = await run("claude-sonnet-5-5", true);
      expect(held.decisions[0]).toMatchObject({ action: "kept" });
      expect(held.decisions[0]!.reason).toMatch(/recall hop's exchange is not kept/);
      // without hops the reason is the other one: this session never declared the tool before the model thought
      const unhopped = (await run("claude-sonnet-5-5", false)).decisions[0]!;
      expect(unhopped.action).toBe("kept");
      expect(unhopped.reason).toMatch(/declaring the recall tool now/);
      // as it is where the model has no such check
      expect((await run("claude-sonnet-4-6", true)).decisions[0]!.action).toBe("offloaded");
      // and where the client declared the recall tool itself (it answers its recalls)
      const own = {
        name: "recall_tool_result",
        description: "read back",
        input_schema: { type: "object" },
      };
      expect((await run("claude-sonnet-5-5", true, [own])).decisions[0]!.action).toBe("offloaded");
    });
  });

  it("the proxy sends an inline declaration with its beta, the client's own betas kept", async () => {
    let headers = new Headers();
    let body = "";
    const fetcher = (async (url: RequestInfo | URL, init?: RequestInit) => {
      if (String(url).endsWith("/count_tokens"))
        return new Response(JSON.stringify({ input_tokens: 100 }), {
          headers: { "content-type": "application/json" },
        });
      headers = new Headers(init?.headers);
      body = String(init?.body);
      return new Response(
        JSON.stringify({
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: "m",
          content: [{ type: "text", text: "done" }],
          stop_reason: "end_turn",
          usage: { input_tokens: 10, output_tokens: 2 },
        }),
        { headers: { "content-type": "application/json" } },
      );
    }) as typeof fetch;
    const text = fresh("claude-sonnet-5-5");
    const res = await proxyTurn({
      dialect: anthropicDialect,
      fetch: fetcher,
      url: "https://fake.test/v1/messages",
      headers: new Headers({
        "content-type": "application/json",
        "x-api-key": "sk-test",
        "anthropic-beta": "context-1m-2025-08-07",
      }),
      body: { bytes: async () => new TextEncoder().encode(text), text: async () => text },
      ref: { tenant: "acme", session: "inline-beta" },
      store: new MemoryStore(),
      config: (layer) => resolveConfig(layer, ON),
      secret: () => "a-preserved-thinking-secret-0123",
      maxHops: 3,
      log: () => {},
    });
    expect(res.status).toBe(200);
    expect(headers.get("anthropic-beta")).toBe("context-1m-2025-08-07,inline-tools-2026-09-15");
    const sent = JSON.parse(body) as Req;
    expect(sent.tools).toEqual((JSON.parse(text) as Req).tools);
    expect(sent.messages.at(-1)).toMatchObject({
      role: "system",
      content: [{ type: "tool_addition" }],
    });
    expect(JSON.parse(res.headers.get("x-offload-summary")!)).toMatchObject({
      anthropic_beta: ["inline-tools-2026-09-15"],
    });
  });

  it("a turn the proxy answered in hops goes back to the model split into its hops, so its thinking holds", async () => {
    // A provider that signs each thinking block over what precedes it, and rejects a request where that
    // changed (the documented prefix check); it also answers as a scripted model.
    const received: Req[] = [];
    const bounced: string[][] = [];
    let step = 0;
    const fetcher = (async (url: RequestInfo | URL, init?: RequestInit) => {
      // The proxy's side count of what it stubbed on arrival (token-count.ts): not a model call.
      if (String(url).endsWith("/count_tokens"))
        return new Response(JSON.stringify({ input_tokens: 100 }), {
          headers: { "content-type": "application/json" },
        });
      const req = JSON.parse(String(init?.body)) as Req;
      received.push(req);
      const bad = failedBlocks(req);
      if (bad.length > 0) {
        bounced.push(bad);
        return new Response(
          JSON.stringify({
            type: "error",
            error: { type: "invalid_request_error", message: "thinking prefix changed" },
          }),
          { status: 400, headers: { "content-type": "application/json" } },
        );
      }
      const think = {
        type: "thinking",
        thinking: `step ${step}`,
        signature: blockPrefix(req, req.messages.length, 0),
      };
      const text = JSON.stringify(req.messages.at(-1));
      const memId = /trm_[0-9a-f]+/.exec(text)?.[0];
      const next: Json[] =
        step === 0
          ? [{ type: "tool_use", id: "toolu_1", name: "bash", input: { command: "cat big.json" } }]
          : step === 1 && memId !== undefined
            ? [
                {
                  type: "tool_use",
                  id: "toolu_r",
                  name: "recall_tool_result",
                  input: { mem_id: memId, query: "items" },
                },
              ]
            : step === 2
              ? [{ type: "tool_use", id: "toolu_2", name: "bash", input: { command: "ls" } }]
              : [{ type: "text", text: "done" }];
      step++;
      const stop =
        next[0] !== undefined && (next[0] as { type: string }).type === "tool_use"
          ? "tool_use"
          : "end_turn";
      return new Response(
        JSON.stringify({
          id: `msg_${step}`,
          type: "message",
          role: "assistant",
          model: "claude-sonnet-5-5",
          content: [think, ...next],
          stop_reason: stop,
          usage: { input_tokens: 10, output_tokens: 5 },
        }),
        { headers: { "content-type": "application/json" } },
      );
    }) as typeof fetch;
    const store = new MemoryStore();
    const call = async (body: Req) => {
      const text = JSON.stringify(body);
      const res = await proxyTurn({
        dialect: anthropicDialect,
        fetch: fetcher,
        url: "https://fake.test/v1/messages",
        headers: new Headers({ "content-type": "application/json", "x-api-key": "sk-test" }),
        body: { bytes: async () => new TextEncoder().encode(text), text: async () => text },
        ref: { tenant: "acme", session: "hops" },
        store,
        config: (layer) =>
          resolveConfig(layer, { ...ON, tool_result_recall_tool_declaration: "eager" }),
        secret: () => "a-preserved-thinking-secret-0123",
        maxHops: 3,
        log: () => {},
      });
      return { status: res.status, answer: (await res.json()) as { content: Json[] } };
    };
    const tools: Json = [
      { name: "bash", description: "run a command", input_schema: { type: "object" } },
    ];
    const history: Msg[] = [{ role: "user", content: "Find the failing test." }];
    const request = (): Req => ({
      model: "claude-sonnet-5-5",
      max_tokens: 1024,
      system: "agent",
      tools,
      messages: history,
    });

    const first = await call(request());
    expect(first.status).toBe(200);
    history.push({ role: "assistant", content: first.answer.content });
    history.push({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_1", content: jsonBody(90_000) }],
    });
    // The big result is stubbed on arrival; the model recalls it; the proxy hops and answers once.
    const second = await call(request());
    expect(second.status).toBe(200);
    expect(received).toHaveLength(3);
    const merged = second.answer.content as { type: string }[];
    expect(merged.filter((b) => b.type === "thinking")).toHaveLength(2);
    expect(merged.some((b) => JSON.stringify(b).includes("recall_tool_result"))).toBe(false);
    history.push({ role: "assistant", content: second.answer.content });
    history.push({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_2", content: "a.json b.json" }],
    });
    // As the client holds it, the next request would fail the check ...
    expect(failedBlocks(request())).not.toEqual([]);
    // ... as the proxy sends it, the turn's hops are back in place and it passes.
    const third = await call(request());
    expect(bounced).toEqual([]);
    expect(third.status).toBe(200);
    const sent = received.at(-1)!;
    expect(sent.messages.length).toBe(history.length + 2);
    expect(JSON.stringify(sent.messages)).toContain('"name":"recall_tool_result"');
  });
});

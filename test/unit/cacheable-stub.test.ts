/**
 * A stub sized to keep a caching client's prompt cacheable: where the plain stub would bring the prompt below
 * the model's minimum cacheable length, the same stub with a larger preview, priced by the gate against it.
 */
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import {
  CACHEABLE_MARGIN,
  CACHEABLE_STUB_MAX_SHARE,
  cacheableStubTokens,
  type GateInput,
  offloadGate,
} from "../../src/core/gate.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { conversation, jsonBody, ON } from "../support/requests.ts";

// Opus 4.5: 4,096 tokens minimum. 3,000 tokens with the stub, 12,000 with the result.
const near: GateInput = {
  model: "claude-opus-4-5",
  result_tokens: 9_300,
  stub_tokens: 300,
  horizon: 5,
  recall_probability: 0.3,
  cached_side: true,
  tokens_to_breakpoint: 400,
  context_tokens: 3_000,
  client_caches: true,
};

describe("cacheableStubTokens", () => {
  it("sizes the stub so the prompt reaches the minimum with its margin", () => {
    const stub = cacheableStubTokens(near)!;
    expect(stub).toBe(300 + Math.ceil(4096 * (1 + CACHEABLE_MARGIN)) - 3_000);
    const padded = { ...near, stub_tokens: stub, context_tokens: 3_000 - 300 + stub };
    expect(padded.context_tokens).toBeGreaterThanOrEqual(4096);
    // priced by the gate's own algebra: no uncached loss, a larger carry, and here it nets more
    const plain = offloadGate(near);
    const kept = offloadGate(padded);
    expect(kept.invalidation_cost_usd).toBeLessThan(plain.invalidation_cost_usd);
    expect(kept.stub_carry_cost_usd).toBeGreaterThan(plain.stub_carry_cost_usd);
    expect(kept.net_usd).toBeGreaterThan(plain.net_usd);
    // and once there, nothing more to pad
    expect(cacheableStubTokens(padded)).toBeNull();
  });

  it("is null when the prompt stays above the minimum, or was below it with the result", () => {
    expect(cacheableStubTokens({ ...near, context_tokens: 5_000 })).toBeNull();
    expect(
      cacheableStubTokens({ ...near, result_tokens: 1_000, context_tokens: 3_000 }),
    ).toBeNull();
  });

  it("takes a prompt estimated just under the minimum with the result as cached (the estimate's margin)", () => {
    // What the stub costs the cache when the prompt it leaves stays cacheable: only the suffix it rewrites.
    const rewriteOnly = (i: GateInput) =>
      offloadGate({ ...i, context_tokens: 4_200 }).invalidation_cost_usd;
    // 4,048 tokens with the result: 1% under Opus's 4,096 by the estimate, which can run 5% low, so the
    // prompt may well be cached with the result; the plain stub (3,000) is priced as uncaching it.
    const edge = { ...near, result_tokens: 1_348 };
    expect(3_000 - 300 + 1_348).toBeLessThan(4096);
    expect(offloadGate(edge).invalidation_cost_usd).toBeGreaterThan(rewriteOnly(edge));
    // 6% under: outside the margin, uncacheable with the result too, so the stub uncaches nothing
    const under = { ...near, result_tokens: 1_150 };
    expect(3_000 - 300 + 1_150).toBeLessThan(4096 * (1 - CACHEABLE_MARGIN));
    expect(offloadGate(under).invalidation_cost_usd).toBe(rewriteOnly(under));
    expect(cacheableStubTokens(under)).toBeNull();
  });

  it("is null for a client that does not cache, or an unpriced model", () => {
    expect(cacheableStubTokens({ ...near, client_caches: false, cached_side: false })).toBeNull();
    expect(cacheableStubTokens({ ...near, model: "no-such-model" })).toBeNull();
  });

  it("is null when the stub would take more than its share of the result", () => {
    // 1,601 tokens needed: within half of 3,300 tokens, not of 3,100
    expect(cacheableStubTokens({ ...near, result_tokens: 3_300 })).toBe(1_601);
    expect(cacheableStubTokens({ ...near, result_tokens: 3_100 })).toBeNull();
    expect(CACHEABLE_STUB_MAX_SHARE).toBe(0.5);
  });

  it("applies OpenAI's minimum the same way (automatic caching counts as caching)", () => {
    const gpt = { ...near, model: "gpt-5.4", context_tokens: 800, cached_side: false };
    expect(cacheableStubTokens(gpt)).toBe(300 + Math.ceil(1024 * (1 + CACHEABLE_MARGIN)) - 800);
  });
});

describe("the turn near the minimum cacheable length", () => {
  const big = jsonBody(70_000);
  // a caching client (a breakpoint on its last block), a settled 70K-char result, the rest ~3K tokens
  const request = (systemChars: number, cached: boolean, more = false): string => {
    const turns = [
      { id: "big", result: big },
      { id: "b", result: "ok" },
      ...(more ? [{ id: "c", result: "ok" }] : []),
    ];
    const req = conversation(turns, { system: "s ".repeat(systemChars / 2) }) as {
      messages: { content: unknown }[];
    };
    if (cached) {
      const last = req.messages.at(-1)!.content as Record<string, unknown>[];
      last[0]!.cache_control = { type: "ephemeral" };
    }
    return JSON.stringify(req);
  };
  const run = async (
    session: string,
    systemChars: number,
    cached: boolean,
    store = new MemoryStore(),
  ) => {
    const out = await compact({
      request: request(systemChars, cached),
      session,
      store,
      config: ON,
    });
    return out.decisions.find((d) => d.tool_use_id === "big")!;
  };

  it("raises the preview to keep the prompt cacheable when that pays, and replays the same stub", async () => {
    const store = new MemoryStore();
    const first = await compact({
      request: request(9_000, true),
      session: "pad-1",
      store,
      config: ON,
    });
    const d = first.decisions.find((x) => x.tool_use_id === "big")!;
    expect(d.action).toBe("offloaded");
    expect(d.reason).toMatch(/preview raised to \d+ chars to keep the prompt cacheable/);
    // the prompt as sent is at or above Opus's minimum (estimated tokens)
    expect(d.gate!.inputs.context_tokens).toBeGreaterThanOrEqual(4096);
    const plain = await run("pad-plain", 9_000, false);
    expect(d.sent_tokens).toBeGreaterThan(plain.sent_tokens + 500);
    // sticky: the next turn renders the same bytes from the record
    const next = await compact({
      request: request(9_000, true, true),
      session: "pad-1",
      store,
      config: ON,
    });
    const stub = (o: typeof first) => {
      const msgs = JSON.parse(o.request as string).messages as { content: unknown }[];
      return JSON.stringify(msgs[2]!.content);
    };
    expect(stub(next)).toBe(stub(first));
    expect(next.decisions.find((x) => x.tool_use_id === "big")).toMatchObject({
      action: "offloaded",
      sticky: true,
      mem_id: d.mem_id,
    });
  });

  it("keeps the plain stub when the prompt stays above the minimum, or the client does not cache", async () => {
    const above = await run("pad-2", 14_000, true);
    expect(above.action).toBe("offloaded");
    expect(above.reason).not.toMatch(/preview raised/);
    const uncached = await run("pad-3", 9_000, false);
    expect(uncached.action).toBe("offloaded");
    expect(uncached.reason).not.toMatch(/preview raised/);
    expect(above.sent_tokens).toBe(uncached.sent_tokens);
  });

  it("prices a result stubbed after another in the same turn on the prompt with the first stub in place", async () => {
    const req = conversation(
      [
        { id: "one", result: big },
        { id: "two", result: big },
        { id: "b", result: "ok" },
        { id: "c", result: "ok" },
        { id: "d", result: "ok" },
        { id: "e", result: "ok" },
      ],
      { system: "s ".repeat(7_000) },
    );
    // (a client without breakpoints: stubbing a settled result rewrites nothing cached)
    const out = await compact({
      request: JSON.stringify(req),
      session: "pad-4",
      store: new MemoryStore(),
      config: ON,
    });
    const [one, two] = ["one", "two"].map((id) => out.decisions.find((d) => d.tool_use_id === id)!);
    expect(one!.action).toBe("offloaded");
    expect(two!.action).toBe("offloaded");
    // the same body: without the first stub in place both would see the same prompt
    expect(two!.gate!.inputs.context_tokens).toBeLessThan(
      one!.gate!.inputs.context_tokens - 10_000,
    );
  });
});

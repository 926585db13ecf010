/** The cold-cache moment: the gate's `cache_cold` input, when a session counts as cold, and the transform using it. */
import { describe, expect, it } from "vitest";
import {
  COLD_MARGIN_SECONDS,
  cacheCold,
  lapseSeconds,
  waitsForColdCache,
} from "../../src/core/cold.ts";
import { compact } from "../../src/core/compact.ts";
import { type GateInput, offloadGate } from "../../src/core/gate.ts";
import { ratesFor, resolveModel, usd } from "../../src/core/pricing.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { conversation, jsonBody, ON } from "../support/requests.ts";

const sonnet = resolveModel("claude-sonnet-4-6")!;
const warm: GateInput = {
  model: "claude-sonnet-4-6",
  result_tokens: 20_000,
  stub_tokens: 300,
  horizon: 5,
  recall_probability: 0.5,
  cached_side: true,
  tokens_to_breakpoint: 150_000,
  context_tokens: 160_000,
  client_caches: true,
  tool_declaration: { tool_tokens: 120, prefix_tokens: 8_000 },
};

describe("the gate on a cold cache", () => {
  it("zeroes the invalidation and the declaration's rewrite, and counts this turn's write", () => {
    const hot = offloadGate(warm);
    const cold = offloadGate({ ...warm, cache_cold: true });
    const r = ratesFor(sonnet, warm.context_tokens);
    expect(hot.invalidation_cost_usd).toBeGreaterThan(0);
    expect(cold.invalidation_cost_usd).toBe(0);
    expect(cold.tool_declaration_cost_usd).toBeCloseTo(usd(5 * 120, r.cache_read), 9);
    expect(cold.reprefill_saving_usd).toBeCloseTo(
      usd(20_000, r.cache_write_5m) + usd(5 * 20_000, r.cache_read),
      9,
    );
    expect(cold.stub_carry_cost_usd).toBeCloseTo(
      usd(300, r.cache_write_5m) + usd(5 * 300, r.cache_read),
      9,
    );
    expect(cold.inputs.cache_cold).toBe(true);
    expect(hot.inputs.cache_cold).toBe(false);
    // a long cached suffix makes the warm offload too dear; the cold one pays
    expect(hot.fire).toBe(false);
    expect(cold.fire).toBe(true);
    expect(cold.reason).toMatch(/cold cache side/);
    expect(cold.net_usd).toBeCloseTo(
      cold.reprefill_saving_usd -
        cold.stub_carry_cost_usd -
        cold.expected_recall_hop_cost_usd -
        cold.tool_declaration_cost_usd,
      8,
    );
  });

  it("changes nothing on the uncached side", () => {
    const unc = { ...warm, cached_side: false, client_caches: false, tokens_to_breakpoint: 0 };
    const a = offloadGate(unc);
    const b = offloadGate({ ...unc, cache_cold: true });
    expect({ ...b, inputs: a.inputs }).toEqual(a);
  });

  it("keeps open only the declines a lapse would turn around", () => {
    expect(waitsForColdCache(warm)).toBe(true);
    expect(waitsForColdCache({ ...warm, cache_cold: true })).toBe(false);
    expect(waitsForColdCache({ ...warm, result_tokens: 200 })).toBe(false); // never worth it
    expect(waitsForColdCache({ ...warm, cached_side: false })).toBe(false);
    expect(waitsForColdCache({ ...warm, first_delivery: true })).toBe(false);
  });
});

describe("when a session counts as cold", () => {
  it("needs a breakpoint and an idle time past the longest TTL plus the margin", () => {
    const five = [{ ttl: "5m" as const }];
    expect(cacheCold("anthropic", five, null)).toBe(false);
    expect(cacheCold("anthropic", five, undefined)).toBe(false);
    expect(cacheCold("anthropic", [], 10_000)).toBe(false);
    expect(cacheCold("anthropic", five, 300 + COLD_MARGIN_SECONDS)).toBe(false);
    expect(cacheCold("anthropic", five, 301 + COLD_MARGIN_SECONDS)).toBe(true);
    expect(cacheCold("anthropic", [...five, { ttl: "1h" }], 1000)).toBe(false);
    expect(cacheCold("anthropic", [{ ttl: "1h" }], 3601 + COLD_MARGIN_SECONDS)).toBe(true);
    // OpenAI keeps prefixes up to an hour idle: the conservative bound
    expect(lapseSeconds("openai-chat", "5m")).toBe(3600);
    expect(cacheCold("openai-responses", five, 1000)).toBe(false);
  });
});

describe("the transform at the cold-cache moment", () => {
  // A 70K-char JSON result early in a long cached conversation: on a warm cache the suffix after it is too
  // dear to rewrite, once the session has been idle for 10 minutes it is free.
  const big = JSON.stringify(
    Array.from({ length: 700 }, (_, i) => ({ id: i, name: `item-${i}`, note: "x".repeat(60) })),
  );
  const filler = "y".repeat(150_000);
  const request = (n: number) => {
    const messages: unknown[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: [{ type: "tool_use", id: "t0", name: "dump", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t0", content: big }] },
    ];
    for (let i = 1; i <= n; i++) {
      messages.push(
        {
          role: "assistant",
          content: [{ type: "tool_use", id: `t${i}`, name: "read", input: {} }],
        },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: `t${i}`,
              content: i === 1 ? filler : "ok",
              ...(i === n ? { cache_control: { type: "ephemeral" } } : {}),
            },
          ],
        },
      );
    }
    return { model: "claude-sonnet-4-6", max_tokens: 100, messages };
  };
  const config = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

  it("keeps the result while warm (a record of its own, replayed while warm), and offloads it once the cache has lapsed", async () => {
    let now = 1_000_000;
    const store = new MemoryStore({ now: () => now });
    const turn = async (n: number) => {
      const out = await compact({ request: request(n), session: "cold-1", store, config });
      return out.decisions.find((d) => d.tool_use_id === "t0")!;
    };
    const first = await turn(3);
    expect(first.action).toBe("kept");
    expect(first.sticky).toBe(false);
    expect(first.reason).toMatch(/^kept while the cache is warm/);
    now += 60_000;
    // Still warm: the kept-while-warm record stands (nothing is weighed again, so compacting a turn's
    // output again decides nothing new).
    expect(await turn(4)).toMatchObject({ action: "kept", sticky: true, reason: first.reason });
    now += 10 * 60_000; // idle past the 5-minute TTL and the margin
    const cold = await turn(5);
    expect(cold.action).toBe("offloaded");
    expect(cold.gate?.inputs.cache_cold).toBe(true);
    expect(cold.gate?.invalidation_cost_usd).toBe(0);
    now += 10_000;
    const after = await turn(6);
    expect(after).toMatchObject({ action: "offloaded", sticky: true, mem_id: cold.mem_id });
  });

  it("never calls a first turn or a store without idle times cold", async () => {
    const store = new MemoryStore({ now: () => 5 });
    const out = await compact({ request: request(3), session: "cold-2", store, config });
    expect(out.decisions[0]!.gate?.inputs.cache_cold).toBe(false);
  });
});

describe("the gate near the minimum cacheable length", () => {
  const r = ratesFor(resolveModel("claude-opus-4-5")!, 3000);
  // 4,500 tokens with the result (cached), 2,300 with the stub: under Opus 4.5's 4,096 minimum
  const input: GateInput = {
    model: "claude-opus-4-5",
    result_tokens: 2500,
    stub_tokens: 300,
    horizon: 5,
    recall_probability: 0.5,
    cached_side: true,
    tokens_to_breakpoint: 0,
    context_tokens: 2300,
    client_caches: true,
    first_delivery: true,
  };

  it("counts the cache a caching client loses when the stub brings its prompt below the minimum", () => {
    const g = offloadGate(input);
    expect(g.invalidation_cost_usd).toBeCloseTo(usd(5 * 2300, r.input - r.cache_read), 9);
    expect(g.fire).toBe(false);
    // far above the minimum either way, or a client that does not cache: nothing of the kind
    expect(offloadGate({ ...input, context_tokens: 9000 }).invalidation_cost_usd).toBe(0);
    expect(
      offloadGate({ ...input, client_caches: false, cached_side: false }).invalidation_cost_usd,
    ).toBe(0);
  });

  it("counts it only until the prompt has grown past the minimum again, then one write of it", () => {
    const long = { ...input, horizon: 8 };
    const unknown = offloadGate(long);
    expect(unknown.invalidation_cost_usd).toBeCloseTo(usd(8 * 2300, r.input - r.cache_read), 9);
    // 600 tokens a call: past 4,096 after 3 calls (2,300 + 3 · 600), then written anew once
    const growing = offloadGate({ ...long, prompt_growth_tokens: 600 });
    expect(growing.invalidation_cost_usd).toBeCloseTo(
      usd(3 * 2300, r.input - r.cache_read) + usd(2300, r.cache_write_5m - r.cache_read),
      9,
    );
    expect(growing.inputs.prompt_growth_tokens).toBe(600);
    expect(growing.net_usd).toBeGreaterThan(unknown.net_usd);
    // growing too slowly to get there within the horizon: the whole horizon, as before
    expect(offloadGate({ ...long, prompt_growth_tokens: 100 }).invalidation_cost_usd).toBeCloseTo(
      unknown.invalidation_cost_usd,
      9,
    );
    expect(unknown.inputs.prompt_growth_tokens).toBeUndefined();
  });

  it("measures the growth from the session's earlier messages of results, never from the result priced", async () => {
    const store = new MemoryStore();
    const body = (n: number) => `${"x".repeat(n)}\n`;
    const turns = [
      { id: "a", result: body(1500) },
      { id: "b", result: body(1500) },
      { id: "c", result: body(1500) },
      { id: "big", result: jsonBody(20_000) },
    ];
    const first = await compact({
      request: JSON.stringify(
        conversation([{ id: "big", result: jsonBody(20_000) }], { model: "claude-opus-4-5" }),
      ),
      session: "growth-1",
      store,
      config: ON,
    });
    expect(first.decisions[0]!.gate?.inputs.prompt_growth_tokens).toBe(0);
    const later = await compact({
      request: JSON.stringify(conversation(turns, { model: "claude-opus-4-5" })),
      session: "growth-2",
      store,
      config: ON,
    });
    const growth = later.decisions.at(-1)!.gate?.inputs.prompt_growth_tokens ?? 0;
    // three calls of ~1,500 chars of result and an answer each: a few hundred tokens a call
    expect(growth).toBeGreaterThan(400);
    expect(growth).toBeLessThan(800);
  });
});

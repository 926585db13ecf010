/**
 * The reports' billed figures from scripted turn lines: the bill is the usage × the price table, the hops'
 * calls apart; the counterfactual is the measured prompt plus what offloading took out, cached as the
 * client's breakpoint would have cached it; a turn sent as the client sent it is its own counterfactual.
 */
import { describe, expect, it } from "vitest";
import type { TurnUsage, UsageTokens } from "../../src/core/billing.ts";
import type { TurnEstimate, TurnLog } from "../../src/core/types.ts";
import { billedTotals, billedTurns } from "../../src/store/billing-report.ts";

const none: UsageTokens = {
  input: 0,
  cache_read: 0,
  cache_write_5m: 0,
  cache_write_1h: 0,
  output: 0,
};
const usage = (first: Partial<UsageTokens>, hop?: Partial<UsageTokens>): TurnUsage => {
  const f = { ...none, ...first };
  const h = { ...none, ...hop };
  return {
    source: "proxy",
    model: "claude-sonnet-4-6",
    calls: hop === undefined ? 1 : 2,
    first: f,
    tokens: {
      input: f.input + h.input,
      cache_read: f.cache_read + h.cache_read,
      cache_write_5m: f.cache_write_5m + h.cache_write_5m,
      cache_write_1h: 0,
      output: f.output + h.output,
    },
    answer_output: hop === undefined ? f.output : h.output,
  };
};
const estimate = (sent: Record<string, number>, removed: Record<string, number>): TurnEstimate => ({
  sent,
  removed,
  cached_share: 1,
  ttl: "5m",
  calibrated: false,
  model: "claude-sonnet-4-6",
});
const line = (at: number, e: TurnEstimate, u?: TurnUsage): TurnLog & { at: number } => ({
  turn: 1,
  results: 1,
  kept: 0,
  compacted: 0,
  offloaded: 0,
  new_decisions: 0,
  tokens_before: 0,
  tokens_after: 0,
  saved_usd: 0,
  errors: 0,
  shadow: false,
  gate_fired: 0,
  gate_declined: 0,
  at,
  estimate: e,
  ...(u === undefined ? {} : { usage: u }),
});

describe("billed figures (Sonnet 4.6: $3 in, $3.75 write, $0.30 read, $15 out per MTok)", () => {
  const turns = [
    // Sent as the client sent it: its own counterfactual.
    line(
      0,
      estimate({ request: 1000, json: 9000 }, {}),
      usage({ cache_write_5m: 10_000, output: 10 }),
    ),
    // The JSON result becomes a 100-token stub: read up to it, the rest rewritten; one recall hop.
    line(
      1000,
      estimate({ request: 1500 }, { json: 9000, request: -100 }),
      usage(
        { cache_read: 1000, cache_write_5m: 1500, output: 20 },
        { cache_read: 2500, input: 600, output: 30 },
      ),
    ),
    // Not measured (a compact call whose usage was not posted): out of the totals.
    line(2000, estimate({ request: 1600 }, { json: 9000, request: -100 })),
  ];

  it("bills each measured turn, the hops apart, and prices the client's own request beside it", () => {
    const [one, two, three] = billedTurns(turns);
    expect(one).toEqual({
      usd: expect.closeTo(10_000 * 3.75e-6 + 10 * 15e-6, 12),
      hops_usd: 0,
      calls: 1,
      prompt_tokens: 10_000,
      cache_read_tokens: 0,
      counterfactual_usd: expect.closeTo(10_000 * 3.75e-6 + 10 * 15e-6, 12),
      saved_usd: 0,
    });
    // Unchanged, the request would hold 2,500 + 8,900 tokens: 400 of them new since turn 1 (by the
    // estimate's growth), written; the rest read. The answer's output is the hop's (30).
    const cf = 11_000 * 0.3e-6 + 400 * 3.75e-6 + 30 * 15e-6;
    const first = 1000 * 0.3e-6 + 1500 * 3.75e-6 + 20 * 15e-6;
    const hop = 2500 * 0.3e-6 + 600 * 3e-6 + 30 * 15e-6;
    expect(two!.usd).toBeCloseTo(first + hop, 12);
    expect(two!.hops_usd).toBeCloseTo(hop, 12);
    expect(two!.counterfactual_usd).toBeCloseTo(cf, 12);
    // The turn the stub lands costs more than it saves (the rewrite, and the hop).
    expect(two!.saved_usd).toBeCloseTo(cf - first - hop, 12);
    expect(two!.saved_usd).toBeLessThan(0);
    expect(three).toBeNull();

    const totals = billedTotals(turns);
    expect(totals.turns_measured).toBe(2);
    expect(totals.calls).toBe(3);
    expect(totals.usd).toBeCloseTo(one!.usd + two!.usd, 9);
    expect(totals.hops_usd).toBeCloseTo(hop, 9);
    expect(totals.cache_read_share).toBeCloseTo(3500 / (10_000 + 2500 + 3100), 9);
    expect(totals.saved_usd).toBeCloseTo(two!.saved_usd, 9);
  });

  it("an uncached client whose request got our anchor is counted as all input", () => {
    const e = { ...estimate({ request: 5000 }, {}), cached_share: 0 };
    const [b] = billedTurns([line(0, e, usage({ cache_write_5m: 5000, output: 5 }))]);
    expect(b!.counterfactual_usd).toBeCloseTo(5000 * 3e-6 + 5 * 15e-6, 12);
  });

  it("a shadow turn saves nothing: what went out is what the client sent", () => {
    const shadow = {
      ...line(0, estimate({ request: 900 }, { json: 5000 }), usage({ input: 900 })),
    };
    shadow.shadow = true;
    const [b] = billedTurns([shadow]);
    expect(b!.saved_usd).toBe(0);
    expect(b!.counterfactual_usd).toBe(b!.usd);
  });
});

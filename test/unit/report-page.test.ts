// The tenant page's sums (GET /v1/report): a session offloading made dearer is counted, not netted away.
import { describe, expect, it } from "vitest";
import { calibrationErrors } from "../../src/core/calibration.ts";
import { dearerSessions, pageTotals, type SessionRow } from "../../src/report.ts";
import type { BilledTotals } from "../../src/store/billing-report.ts";

/** A session's billed totals: `counterfactual` what its own requests would have cost, `saved` the saving. */
function billed(counterfactual: number, saved: number, measured = 3): BilledTotals {
  return {
    turns_measured: measured,
    turns_unmeasured: 0,
    complete: true,
    unmeasured_saved_usd: 0,
    calls: measured,
    usd: counterfactual - saved,
    hops_usd: 0,
    prompt_tokens: 1000 * measured,
    cache_read_tokens: 500 * measured,
    cache_write_tokens: 100 * measured,
    output_tokens: 50 * measured,
    cache_read_share: measured === 0 ? null : 0.5,
    estimated_prompt_tokens: 1000 * measured,
    counterfactual_usd: counterfactual,
    saved_usd: saved,
    removed: { tokens: 0, results: 0, measured: 0 },
    model_check: { turns: 0, read_share_error: null },
    estimate_error: calibrationErrors(null),
    estimate_basis: "modelled",
  };
}

/** A page row with the given billed totals (the other sums are not what these tests read). */
function row(session: string, b: BilledTotals): SessionRow {
  return {
    session,
    created_at: "2026-12-07T00:00:00.000Z",
    last_active: "2026-12-07T00:00:00.000Z",
    mode: "live",
    calls: b.turns_measured,
    turns_logged: b.turns_measured,
    shadow_turns: 0,
    tokens_before: 0,
    tokens_after: 0,
    saved_tokens: 0,
    saved_usd: b.saved_usd,
    would_save_tokens: 0,
    would_save_usd: 0,
    kept: 0,
    compacted: 0,
    offloaded: 1,
    offloaded_recalled: 0,
    recalls: 0,
    recall_rate: 0,
    gate_fired: 1,
    gate_declined: 0,
    billed: b,
  } as SessionRow;
}

describe("the sessions offloading made dearer", () => {
  it("counts a billed saving below 0, with the worst loss as a share of its counterfactual", () => {
    expect(
      dearerSessions([billed(10, 1.5), billed(10, -0.31), billed(2, -0.01), billed(4, 0)]),
    ).toEqual({ sessions: 2, of: 4, worst_share: 0.031 });
  });

  it("leaves out sessions without measured usage, and says null when none is dearer", () => {
    expect(dearerSessions([billed(0, 0, 0), billed(5, 0.2)])).toEqual({
      sessions: 0,
      of: 1,
      worst_share: null,
    });
    expect(dearerSessions([])).toEqual({ sessions: 0, of: 0, worst_share: null });
  });

  it("counts an incomplete session by its whole billed saving (the unmeasured turns' modelled part in it)", () => {
    const incomplete = {
      ...billed(3, -0.06),
      turns_unmeasured: 1,
      complete: false,
      unmeasured_saved_usd: -0.02,
    };
    expect(dearerSessions([incomplete])).toEqual({ sessions: 1, of: 1, worst_share: 0.02 });
  });

  it("shows on the page what the page's sum nets away", () => {
    const totals = pageTotals([row("a", billed(10, 2)), row("b", billed(10, -0.5))]);
    // The sum is a saving ...
    expect(totals.billed.saved_usd).toBeCloseTo(1.5, 9);
    // ... and the session it cost money is still there to see.
    expect(totals.billed.dearer).toEqual({ sessions: 1, of: 2, worst_share: 0.05 });
  });
});

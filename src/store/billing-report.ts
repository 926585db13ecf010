/**
 * Billed figures for the savings report, from the usage measured on each turn: what the provider
 * billed (its numbers × the price table), the recall hops' part, the measured cache-read share, and
 * a saving net of everything offloading cost (hops, the recall tool's tokens, cache rewrites): the
 * difference between the bill and what the client's own requests would have been billed.
 *
 * That counterfactual runs the provider's documented cache rules over the client's requests and
 * over the requests sent, both from the turns' sketches (core/counterfactual.ts), and adds the
 * difference to the measured bill: a turn sent as the client sent it is its own counterfactual,
 * and a session where nothing changed saves exactly 0 whatever the provider reports as cached. A
 * turn without usage is modelled from the estimates, counted, and flagged: its cost is never
 * dropped while later savings count. Pure: the session states and the report route both use it.
 */
import { promptOf, type TurnUsage, type UsageTokens, usageUsd } from "../core/billing.ts";
import {
  type Calibration,
  calibrate,
  calibrationErrors,
  claimedTokens,
} from "../core/calibration.ts";
import {
  counterfactualTurns,
  readTurns,
  type Sketched,
  type TurnCounterfactual,
} from "../core/counterfactual.ts";
import { type ModelPrice, ratesFor, resolveModel, usd } from "../core/pricing.ts";
import type { CacheSplit } from "../core/provider-cache.ts";
import type { TurnLog } from "../core/types.ts";

/** A measured turn's billed figures (null on a line without usage). */
export interface TurnBilled {
  usd: number;
  hops_usd: number;
  calls: number;
  prompt_tokens: number;
  cache_read_tokens: number;
  /** What the client's own request would have been billed, and the bill's saving against it. */
  counterfactual_usd: number;
  saved_usd: number;
  /**
   * How the counterfactual was reached: "untouched", the request went out as the client sent it
   * (its own bill); "modelled", the provider's cache rules over the turn's sketch; "estimated", a
   * line logged without a sketch (the tokens taken out at the rate of their position).
   */
  basis: "untouched" | "modelled" | "estimated";
}

export interface BilledTotals {
  /** Turns with measured usage (the bill's figures below are over them). */
  turns_measured: number;
  /**
   * Live turns without usage: the billed saving counts their modelled saving (`unmeasured_saved_usd`)
   * and is then incomplete.
   */
  turns_unmeasured: number;
  complete: boolean;
  unmeasured_saved_usd: number;
  /** Provider calls billed on the measured turns (the clients' and the recall hops'). */
  calls: number;
  usd: number;
  /** The recall hops' calls alone. */
  hops_usd: number;
  prompt_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  /** cache_read_tokens / prompt_tokens, null before a measured turn. */
  cache_read_share: number | null;
  /** The same turns' estimated prompt tokens (the client's call, as sent), before calibration. */
  estimated_prompt_tokens: number;
  /** The measured turns' counterfactual. */
  counterfactual_usd: number;
  /** counterfactual_usd − usd, plus the unmeasured turns' modelled saving. */
  saved_usd: number;
  /**
   * What offloading took out of the measured turns' requests, in tokens: net of the stubs and the
   * recall tool (`tokens`), the taken-out results' own tokens (`results`), and the part of those
   * tokens measured (a result sent in full once, measured by the growth of the prompt) rather than
   * estimated.
   */
  removed: { tokens: number; results: number; measured: number };
  /**
   * The cache model against the provider: on the measured turns sent as the client sent them, the
   * mean gap between the modelled and the measured cache-read share of the prompt.
   */
  model_check: { turns: number; read_share_error: number | null };
  /** The estimates' error against the measured prompts, before and after calibration. */
  estimate_error: ReturnType<typeof calibrationErrors>;
  /**
   * What the estimated saving (`saved_usd` beside `billed`) is: "modelled", the same cache rules
   * over the estimates, grounded on the measured turns; "tokens_removed", no turn was measured: the
   * tokens taken out at the rate of their position, not a saving on a bill.
   */
  estimate_basis: "modelled" | "tokens_removed";
}

/** A session's billed figures, and the estimated saving per turn. */
export interface BilledSession {
  turns: (TurnBilled | null)[];
  /**
   * Per turn, the saving estimated from the estimates alone (the same cache rules, at the
   * session's calibration, net of the recall hops once measured); null when the session has no
   * measured turn to ground it: the report then shows the tokens taken out at their rate.
   */
  estimated: number[] | null;
  totals: BilledTotals;
}

type Line = TurnLog & { at: number };

const roundUsd = (x: number) => Math.round(x * 1e9) / 1e9;

function splitUsd(price: ModelPrice, s: CacheSplit): number {
  const r = ratesFor(price, s.read + s.write_5m + s.write_1h + s.input);
  return (
    usd(s.input, r.input) +
    usd(s.read, r.cache_read) +
    usd(s.write_5m, r.cache_write_5m) +
    usd(s.write_1h, r.cache_write_1h)
  );
}

/**
 * The session's calibration, fitted on its own measured turns in order (the counterfactual's
 * removed tokens are scaled by it).
 */
export function sessionCalibration(turns: readonly TurnLog[]): Calibration | null {
  let c: Calibration | null = null;
  for (const t of turns)
    if (t.usage !== undefined && t.estimate !== undefined)
      c = calibrate(c, t.estimate.sent, promptOf(t.usage.first));
  return c;
}

/**
 * A line without a sketch (logged before sketches were): the calibrated tokens taken out, at the
 * rate of their position, less the hops.
 */
function estimatedSaving(t: Line, u: TurnUsage, price: ModelPrice, cal: Calibration | null) {
  const e = t.estimate!;
  const removed = t.shadow ? 0 : (u.removed_calibrated ?? claimedTokens(cal, e.removed));
  const r = ratesFor(price, promptOf(u.first) + removed);
  return usd(removed, e.cached_share > 0 ? r.cache_read : r.input);
}

function turnBilled(t: Line, cf: TurnCounterfactual, cal: Calibration | null): TurnBilled | null {
  const u = t.usage;
  if (u === undefined || t.estimate === undefined) return null;
  const price = resolveModel(u.model);
  const bill = price === null ? 0 : usageUsd(price, u.tokens);
  const hops = price === null ? 0 : bill - usageUsd(price, u.first);
  const base = {
    usd: roundUsd(bill),
    hops_usd: roundUsd(hops),
    calls: u.calls,
    prompt_tokens: promptOf(u.tokens),
    cache_read_tokens: u.tokens.cache_read,
  };
  if (price === null || (cf.modelled && cf.untouched) || t.shadow)
    return {
      ...base,
      counterfactual_usd: roundUsd(bill),
      saved_usd: 0,
      // An unpriced model bills $0 either way: nothing is claimed for it.
      basis: price === null && !cf.untouched && !t.shadow ? "estimated" : "untouched",
    };
  // The client's own call as billed (answered as the client read it), moved by what the rules say
  // offloading changed in its prompt: the difference of the two models, so their shared errors
  // (the estimates' scale, a rule the provider applies otherwise) cancel.
  const own: UsageTokens = { ...u.first, output: u.answer_output };
  const cfUsd = cf.modelled
    ? usageUsd(price, own) + splitUsd(price, cf.client) - splitUsd(price, cf.sent)
    : usageUsd(price, own) + estimatedSaving(t, u, price, cal);
  return {
    ...base,
    counterfactual_usd: roundUsd(cfUsd),
    saved_usd: roundUsd(cfUsd - bill),
    basis: cf.modelled ? "modelled" : "estimated",
  };
}

/**
 * The session's billed figures: per turn (in order; `at` is each turn's commit time, ms) and
 * summed. The removed tokens are scaled by `tenant` (the tenant's calibration per price-table
 * model) where it is ready, else as calibrated when the usage was kept, else by the session's own
 * fit.
 */
export function billedSession(
  turns: readonly Line[],
  tenant: Readonly<Record<string, Calibration>> = {},
): BilledSession {
  const cal = sessionCalibration(turns);
  const read = readTurns(turns);
  const billed = counterfactualTurns(read, { mode: "billed", tenant, session: cal });
  const per = turns.map((t, i) => turnBilled(t, billed[i]!, cal));
  const totals: BilledTotals = {
    turns_measured: 0,
    turns_unmeasured: 0,
    complete: true,
    unmeasured_saved_usd: 0,
    calls: 0,
    usd: 0,
    hops_usd: 0,
    prompt_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    output_tokens: 0,
    cache_read_share: null,
    estimated_prompt_tokens: 0,
    counterfactual_usd: 0,
    saved_usd: 0,
    removed: { tokens: 0, results: 0, measured: 0 },
    model_check: { turns: 0, read_share_error: null },
    estimate_error: calibrationErrors(cal),
    estimate_basis: "tokens_removed",
  };
  let readGap = 0;
  turns.forEach((t, i) => {
    const b = per[i];
    const u = t.usage;
    const cf = billed[i]!;
    if (b === null || b === undefined || u === undefined) {
      if (t.shadow || t.estimate === undefined) return;
      // Unmeasured: its modelled saving counts, and the total says it is incomplete.
      totals.turns_unmeasured++;
      const price = resolveModel(t.estimate.model);
      if (cf.modelled && !cf.untouched && price !== null)
        totals.unmeasured_saved_usd += splitUsd(price, cf.client) - splitUsd(price, cf.sent);
      return;
    }
    totals.turns_measured++;
    totals.calls += b.calls;
    totals.usd += b.usd;
    totals.hops_usd += b.hops_usd;
    totals.prompt_tokens += b.prompt_tokens;
    totals.cache_read_tokens += b.cache_read_tokens;
    totals.cache_write_tokens += u.tokens.cache_write_5m + u.tokens.cache_write_1h;
    totals.output_tokens += u.tokens.output;
    totals.estimated_prompt_tokens += sum(t.estimate?.sent ?? {});
    totals.counterfactual_usd += b.counterfactual_usd;
    totals.saved_usd += b.saved_usd;
    totals.removed.tokens += Math.round(cf.removed);
    totals.removed.results += cf.removed_results;
    totals.removed.measured += cf.removed_measured;
    const prompt = promptOf(u.first);
    if (cf.modelled && cf.untouched && prompt > 0) {
      const modelled = cf.sent.read + cf.sent.write_5m + cf.sent.write_1h + cf.sent.input;
      totals.model_check.turns++;
      readGap += Math.abs(
        u.first.cache_read / prompt - (modelled > 0 ? cf.sent.read / modelled : 0),
      );
    }
  });
  totals.complete = totals.turns_unmeasured === 0;
  totals.saved_usd += totals.unmeasured_saved_usd;
  totals.usd = roundUsd(totals.usd);
  totals.hops_usd = roundUsd(totals.hops_usd);
  totals.counterfactual_usd = roundUsd(totals.counterfactual_usd);
  totals.saved_usd = roundUsd(totals.saved_usd);
  totals.unmeasured_saved_usd = roundUsd(totals.unmeasured_saved_usd);
  totals.cache_read_share =
    totals.prompt_tokens > 0 ? totals.cache_read_tokens / totals.prompt_tokens : null;
  if (totals.model_check.turns > 0)
    totals.model_check.read_share_error = readGap / totals.model_check.turns;
  const estimated = estimatedTurns(turns, read, per, cal, tenant);
  if (estimated !== null) totals.estimate_basis = "modelled";
  return { turns: per, estimated, totals };
}

/**
 * The estimated saving per turn: the same cache rules over the estimates at the session's measured
 * ratio (no turn's own measure), net of what the recall hops added where measured. Null without a
 * measured, modelled turn to ground the ratio.
 */
function estimatedTurns(
  turns: readonly Line[],
  read: readonly Sketched[],
  per: readonly (TurnBilled | null)[],
  cal: Calibration | null,
  tenant: Readonly<Record<string, Calibration>>,
): number[] | null {
  if (!per.some((b) => b !== null && b.basis !== "estimated")) return null;
  const cf = counterfactualTurns(read, { mode: "estimated", tenant, session: cal });
  return turns.map((t, i) => {
    const c = cf[i]!;
    const u = t.usage;
    const price = resolveModel(u?.model ?? t.estimate?.model);
    // What the recall hops added to the bill: their calls, less the answer's output the client's
    // own call would have produced anyway.
    const hops =
      u === undefined || price === null
        ? 0
        : usageUsd(price, u.tokens) - usageUsd(price, { ...u.first, output: u.answer_output });
    if (t.shadow) return 0;
    if (!c.modelled || price === null) return roundUsd(t.saved_usd - (per[i]?.hops_usd ?? 0));
    if (c.untouched) return roundUsd(-hops);
    return roundUsd(splitUsd(price, c.client) - splitUsd(price, c.sent) - hops);
  });
}

function sum(est: Record<string, number>): number {
  let s = 0;
  for (const t of Object.values(est)) s += t;
  return s;
}

/** Per turn, its billed figures (see billedSession). */
export function billedTurns(
  turns: readonly Line[],
  tenant: Readonly<Record<string, Calibration>> = {},
): (TurnBilled | null)[] {
  return billedSession(turns, tenant).turns;
}

/** The session's billed totals (see billedSession). */
export function billedTotals(
  turns: readonly Line[],
  tenant: Readonly<Record<string, Calibration>> = {},
): BilledTotals {
  return billedSession(turns, tenant).totals;
}

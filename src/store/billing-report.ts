/**
 * Billed figures for the savings report, from the usage measured on each turn: what the provider
 * billed (its numbers × the price table), the recall hops' own part, the measured cache-read share,
 * and a saving net of everything offloading cost (hops, the recall tool's tokens, cache rewrites),
 * because it is the difference between a bill and what the client's own requests would have been
 * billed. That counterfactual is the one estimate left: each turn's measured prompt plus the
 * tokens offloading took out (calibrated on the session's own measured turns), cached as the
 * client's breakpoints would have cached it (an append-only prompt: read up to the previous turn's
 * prefix within the TTL, written beyond). Pure: the SessionDO and its twin both use it.
 */
import { NO_USAGE, promptOf, type TurnUsage, type UsageTokens, usageUsd } from "../core/billing.ts";
import {
  type Calibration,
  calibrate,
  calibratedTokens,
  calibrationErrors,
  calibrationReady,
} from "../core/calibration.ts";
import { resolveModel } from "../core/pricing.ts";
import type { TurnEstimate, TurnLog } from "../core/types.ts";

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
}

export interface BilledTotals {
  /** Turns with measured usage (the figures below are over them). */
  turns_measured: number;
  /** Provider calls billed on those turns (the clients' and the recall hops'). */
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
  counterfactual_usd: number;
  /** counterfactual_usd − usd on live turns (shadow turns send the client's request: 0). */
  saved_usd: number;
  /** The estimates' error against the measured prompts, before and after calibration. */
  estimate_error: ReturnType<typeof calibrationErrors>;
}

const roundUsd = (x: number) => Math.round(x * 1e9) / 1e9;
const TTL_SECONDS = { "5m": 300, "1h": 3600 } as const;

interface Prefix {
  tokens: number;
  /**
   * The same prefix as the calibrated estimate of the client's whole request counts it: consistent
   * from turn to turn, so its growth is the content new since the previous turn.
   */
  est: number;
  at: number;
}

function sum(est: Record<string, number>): number {
  let s = 0;
  for (const t of Object.values(est)) s += t;
  return s;
}

/**
 * The counterfactual bill of one turn: `full` prompt tokens (measured, plus what offloading took
 * out), the client's cached share of them, and what the previous turn left in the cache. What is
 * written is what the estimate says is new since the previous turn (`estFull` is the calibrated
 * estimate of the whole client request): a result measured while it was sent and estimated once
 * it is offloaded would otherwise read as new content, and be priced as a write.
 */
function counterfactual(
  u: TurnUsage,
  e: TurnEstimate,
  full: number,
  estFull: number,
  prev: Prefix | null,
  at: number,
): { tokens: UsageTokens; prefix: Prefix | null } {
  const price = resolveModel(u.model);
  const min = price?.min_cacheable_tokens ?? 1024;
  const prefix = Math.round(full * e.cached_share);
  const est = Math.round(estFull * e.cached_share);
  let read = 0;
  let write = 0;
  if (e.cached_share > 0 && prefix >= min) {
    const warm = prev !== null && (at - prev.at) / 1000 <= TTL_SECONDS[e.ttl];
    write = warm ? Math.min(prefix, Math.max(0, est - prev.est)) : prefix;
    read = prefix - write;
  }
  return {
    tokens: {
      ...NO_USAGE,
      input: Math.max(0, full - read - write),
      cache_read: read,
      [e.ttl === "1h" ? "cache_write_1h" : "cache_write_5m"]: write,
      output: u.answer_output,
    },
    prefix: e.cached_share > 0 && prefix >= min ? { tokens: prefix, est, at } : null,
  };
}

/**
 * The request went out as the client sent it, cached as the client cached it: nothing was taken
 * out, and either the client caches or nothing was cached (no anchor of ours). Its bill is then
 * its own counterfactual.
 */
function unchanged(u: TurnUsage, e: TurnEstimate, shadow: boolean): boolean {
  const untouched = shadow || Object.keys(e.removed).length === 0;
  return untouched && (e.cached_share > 0 || promptOf(u.first) === u.first.input);
}

function measuredAsIs(
  u: TurnUsage,
  e: TurnEstimate,
  estFull: number,
  at: number,
): { tokens: UsageTokens; prefix: Prefix | null } {
  const cached = u.first.cache_read + u.first.cache_write_5m + u.first.cache_write_1h;
  return {
    tokens: { ...u.first, output: u.answer_output },
    prefix:
      e.cached_share > 0 && cached > 0
        ? { tokens: cached, est: Math.round(estFull * e.cached_share), at }
        : null,
  };
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
 * Per turn (in order), its billed figures; `at` is each turn's commit time (ms). The removed tokens
 * are scaled by `tenant` (the tenant's calibration per price-table model) where it is ready, else as
 * calibrated when the usage was kept, else by the session's own fit.
 */
export function billedTurns(
  turns: readonly (TurnLog & { at: number })[],
  tenant: Readonly<Record<string, Calibration>> = {},
): (TurnBilled | null)[] {
  const cal = sessionCalibration(turns);
  let prev: Prefix | null = null;
  return turns.map((t) => {
    const e = t.estimate;
    const u = t.usage;
    if (e === undefined) {
      prev = null;
      return null;
    }
    const price = u === undefined ? null : resolveModel(u.model);
    if (u === undefined) {
      // Unmeasured: the cache state it leaves is the estimate's.
      const full = calibratedTokens(cal, e.sent) + calibratedTokens(cal, e.removed);
      const tokens = Math.round(full * e.cached_share);
      prev = e.cached_share > 0 ? { tokens, est: tokens, at: t.at } : null;
      return null;
    }
    const latest = tenant[price?.id ?? ""];
    const use = calibrationReady(latest) ? latest : cal;
    const removed = calibrationReady(latest)
      ? calibratedTokens(latest, e.removed)
      : (u.removed_calibrated ?? calibratedTokens(cal, e.removed));
    const full = promptOf(u.first) + (t.shadow ? 0 : removed);
    const estFull = calibratedTokens(use, e.sent) + calibratedTokens(use, e.removed);
    const cf = unchanged(u, e, t.shadow)
      ? measuredAsIs(u, e, estFull, t.at)
      : counterfactual(u, e, full, estFull, prev, t.at);
    prev = cf.prefix;
    const usd = price === null ? 0 : usageUsd(price, u.tokens);
    const firstUsd = price === null ? 0 : usageUsd(price, u.first);
    const cfUsd = price === null ? 0 : usageUsd(price, cf.tokens);
    return {
      usd: roundUsd(usd),
      hops_usd: roundUsd(usd - firstUsd),
      calls: u.calls,
      prompt_tokens: promptOf(u.tokens),
      cache_read_tokens: u.tokens.cache_read,
      counterfactual_usd: roundUsd(t.shadow ? usd : cfUsd),
      saved_usd: roundUsd(t.shadow ? 0 : cfUsd - usd),
    };
  });
}

export function billedTotals(
  turns: readonly (TurnLog & { at: number })[],
  per: readonly (TurnBilled | null)[] = billedTurns(turns),
): BilledTotals {
  const out: BilledTotals = {
    turns_measured: 0,
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
    estimate_error: calibrationErrors(sessionCalibration(turns)),
  };
  turns.forEach((t, i) => {
    const b = per[i];
    const u = t.usage;
    if (b === null || b === undefined || u === undefined) return;
    out.turns_measured++;
    out.calls += b.calls;
    out.usd += b.usd;
    out.hops_usd += b.hops_usd;
    out.prompt_tokens += b.prompt_tokens;
    out.cache_read_tokens += b.cache_read_tokens;
    out.cache_write_tokens += u.tokens.cache_write_5m + u.tokens.cache_write_1h;
    out.output_tokens += u.tokens.output;
    out.estimated_prompt_tokens += sum(t.estimate?.sent ?? {});
    out.counterfactual_usd += b.counterfactual_usd;
    out.saved_usd += b.saved_usd;
  });
  out.usd = roundUsd(out.usd);
  out.hops_usd = roundUsd(out.hops_usd);
  out.counterfactual_usd = roundUsd(out.counterfactual_usd);
  out.saved_usd = roundUsd(out.saved_usd);
  out.cache_read_share = out.prompt_tokens > 0 ? out.cache_read_tokens / out.prompt_tokens : null;
  return out;
}

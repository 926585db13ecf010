/**
 * The tenant's session lengths (the learned horizon's evidence, core/horizon.ts), free of storage:
 * when a session has ended, how its length is bucketed, and the decayed histogram the SQL tenant
 * learning and its in-memory twin both keep.
 *
 * A session is counted once, by its client calls (turn-log lines: recall hops are part of their
 * turn, shadow turns count), when it ends: deleted (or purged by retention), or idle for
 * SESSION_END_MS. A session that comes back after it was counted is not counted again.
 *
 * The histogram follows the last ~LENGTHS_WINDOW ended sessions: the k-th ended session of a tenant
 * weighs e^(k/W) when added, and a read divides by e^(K/W) (K: the sessions ended so far), so each
 * older session weighs e^(−1/W) less per later one, at the price of one row per addition (no
 * rewrite of the whole histogram). Weights are brought back to scale every RESCALE_AFTER sessions.
 */
import type { SessionLengths } from "../core/horizon.ts";

/**
 * A session idle this long has ended: past the longest provider cache TTL (1 h), a client that
 * comes back pays its whole prefix again, as a new session would.
 */
export const SESSION_END_MS = 60 * 60 * 1000;

/** Ended sessions the histogram follows (the decay's scale). */
export const LENGTHS_WINDOW = 1000;

/** Lengths up to this are kept exactly (the learned horizon's cap, core/horizon.ts). */
export const EXACT_LENGTHS = 200;

/** Longer sessions are counted at this length. */
export const MAX_LENGTH = 1_000_000;

/** Ended session lengths one addition takes at most (the latest). */
export const ENDED_PER_ADD = 256;

/** After this many ended sessions the stored weights are rescaled (e^25 ≈ 7·10^10: exact enough). */
export const RESCALE_AFTER = 25 * LENGTHS_WINDOW;

/** Below this (in sessions) a rescaled weight is dropped. */
export const FORGOTTEN_WEIGHT = 1e-3;

/**
 * The histogram bucket of a session of `calls` client calls: exact up to EXACT_LENGTHS, then
 * rounded down to two significant digits (at most 10% short: the horizon is never overstated), at
 * most MAX_LENGTH; null for a length that is not a positive whole number (nothing to count).
 * A tenant's histogram thus holds at most 550 buckets.
 */
export function lengthBucket(calls: number): number | null {
  if (!Number.isSafeInteger(calls) || calls <= 0) return null;
  if (calls <= EXACT_LENGTHS) return calls;
  if (calls >= MAX_LENGTH) return MAX_LENGTH;
  const unit = 10 ** (Math.floor(Math.log10(calls)) - 1);
  return Math.floor(calls / unit) * unit;
}

/** The factor that brings stored weights back to sessions after `ended` sessions. */
function readScale(ended: number): number {
  return Math.exp(-ended / LENGTHS_WINDOW);
}

/** What adding ended sessions does to a tenant's stored histogram. */
export interface LengthsAddition {
  /**
   * Multiply every stored weight by this first, and drop those below FORGOTTEN_WEIGHT (the weights
   * brought back to scale), or null.
   */
  rescale: number | null;
  /** Then add these weights, per bucket. */
  weights: Map<number, number>;
  /** The tenant's count of ended sessions to store (since the last rescale). */
  ended: number;
}

/**
 * Adding `buckets` (endedBuckets) to a histogram that has counted `ended` sessions since its last
 * rescale: the k-th session weighs e^(k/W).
 */
export function lengthsAddition(ended: number, buckets: readonly number[]): LengthsAddition {
  let k = ended;
  let rescale: number | null = null;
  if (k + buckets.length > RESCALE_AFTER) {
    rescale = readScale(k);
    k = 0;
  }
  const weights = new Map<number, number>();
  for (const calls of buckets)
    weights.set(calls, (weights.get(calls) ?? 0) + Math.exp(++k / LENGTHS_WINDOW));
  return { rescale, weights, ended: k };
}

/**
 * The histogram a turn reads from stored buckets: whole sessions (the horizon counts sessions; a
 * bucket decayed below half a session is left out), by length; undefined when nothing is left.
 */
export function lengthsOf(
  buckets: Iterable<readonly [calls: number, weight: number]>,
  ended: number,
): SessionLengths | undefined {
  const scale = readScale(ended);
  const counts: [number, number][] = [];
  for (const [calls, weight] of buckets) {
    const sessions = Math.round(weight * scale);
    if (sessions > 0) counts.push([calls, sessions]);
  }
  counts.sort((a, b) => a[0] - b[0]);
  return counts.length === 0 ? undefined : { counts };
}

/** The valid buckets of an addition's ended lengths (the latest ENDED_PER_ADD). */
export function endedBuckets(ended: readonly number[] | undefined): number[] {
  return (ended ?? []).slice(-ENDED_PER_ADD).flatMap((n) => lengthBucket(n) ?? []);
}

/**
 * The horizon learned from how long sessions run. The gate's saving accrues over the calls a session
 * still makes after this one; a fixed prior (5) undercounts long sessions (a stub that would pay for
 * thirty more calls is declined) and overcounts short ones (a session that stops two calls after a
 * stub lands pays the stub's cost and never gets the saving back). The estimate here is the mean
 * residual length: among the tenant's sessions that ran at least as long as this one has, how many
 * more calls they made after this point. It is conditioned on the session's own length so far, so a
 * session past the usual end is not promised the average again.
 *
 * Pure: the store supplies the observed lengths (the turn-start data's `session_lengths`), this
 * estimates. Few sessions that reached this length ⇒ the estimate leans on the configured prior, with
 * the weight of HORIZON_PRIOR_WEIGHT sessions.
 */

/**
 * The tenant's observed session lengths: how many of its ended sessions made exactly `calls` model
 * calls (the client's calls, recall hops apart). A histogram, so its size is bounded by the distinct
 * lengths, not the sessions; a store may bucket long sessions (a bucket's sessions counted at one
 * length).
 */
export interface SessionLengths {
  /** [calls, sessions] pairs; order free, a length may repeat (the counts add). */
  readonly counts: readonly (readonly [calls: number, sessions: number])[];
}

/** How many observed sessions the configured prior weighs as, where the evidence is thin. */
export const HORIZON_PRIOR_WEIGHT = 4;

/** Pairs read from a supplied histogram; the rest is ignored (a store keeps far fewer). */
export const MAX_LENGTH_PAIRS = 4096;

/** The same cap as the adaptive gate's: no saving is promised over more calls than this. */
export const MAX_LEARNED_HORIZON = 200;

/**
 * The expected number of calls a session makes after its current one, given that the current one is
 * call number `call` (1-based: a request holding n assistant messages is call n + 1).
 *
 * With n the sessions that made at least `call` calls and R the calls they made after it:
 *   horizon = (R + HORIZON_PRIOR_WEIGHT · prior) / (n + HORIZON_PRIOR_WEIGHT)
 * capped at MAX_LEARNED_HORIZON. Without any observed session, the prior. Malformed pairs (negative,
 * fractional, non-finite) are skipped: the lengths come from a store, not from this code.
 */
export function expectedRemainingCalls(
  lengths: SessionLengths | null | undefined,
  call: number,
  prior: number,
): number {
  const at = Math.max(1, Math.floor(call));
  let n = 0;
  let remaining = 0;
  const pairs = lengths?.counts ?? [];
  const limit = Math.min(pairs.length, MAX_LENGTH_PAIRS);
  for (let i = 0; i < limit; i++) {
    const pair = pairs[i];
    if (!Array.isArray(pair)) continue;
    const [calls, sessions] = pair as readonly [unknown, unknown];
    if (!validCount(calls) || !validCount(sessions) || sessions === 0) continue;
    if (calls < at) continue;
    n += sessions;
    remaining += sessions * (calls - at);
  }
  const estimate = (remaining + HORIZON_PRIOR_WEIGHT * prior) / (n + HORIZON_PRIOR_WEIGHT);
  return Math.min(MAX_LEARNED_HORIZON, estimate);
}

function validCount(x: unknown): x is number {
  return typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
}

/**
 * A histogram that learns one ended session at a time (the replay's, in file order; a store keeps its
 * own). `lengths()` is a snapshot: later additions do not change what an earlier turn read.
 */
export class SessionLengthLog {
  readonly #counts = new Map<number, number>();

  add(calls: number): void {
    if (!Number.isSafeInteger(calls) || calls <= 0) return;
    this.#counts.set(calls, (this.#counts.get(calls) ?? 0) + 1);
  }

  lengths(): SessionLengths {
    return { counts: [...this.#counts.entries()].sort((a, b) => a[0] - b[0]) };
  }
}

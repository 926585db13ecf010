/**
 * The tenant's learning statistics as a session holds them: a copy of the tenant's counts for the
 * tools it asks about, and its own deltas (offloads it committed, recalls it counted) not yet sent.
 * The turn path reads the copy and adds deltas locally; the object's alarm exchanges both with the
 * tenant's statistics in one call, in the background: deltas leave within STATS_FLUSH_MS, and a
 * copy older than STATS_REFRESH_MS is refreshed after a turn that needed it. Nothing tenant-wide is
 * on a turn's path but a session's very first read, which fills the copy once (best effort).
 * The same exchange carries the tenant's calibration (calibration-copy.ts): samples out, states in.
 */
import type { Calibration, CalibrationSample } from "../core/calibration.ts";
import type { ToolStats } from "../core/ports.ts";
import { CalibrationCopy } from "./calibration-copy.ts";
import { addCounts, type Counts, nonZero, readCounts, setCounts, settleCounts } from "./counts.ts";
import { earliest } from "./lifecycle.ts";
import type { SessionTables } from "./session-tables.ts";
import { STATS_FLUSH_MS, STATS_REFRESH_MS } from "./stats-timing.ts";

export { STATS_FLUSH_MS, STATS_REFRESH_MS } from "./stats-timing.ts";

/** What the tenant's side answers: the counts asked for, and its calibration per model. */
export interface TenantAnswer {
  counts: Counts;
  calibrations: Record<string, Calibration>;
}

/**
 * Sends deltas and calibration samples and reads the counts of `names` and the calibration, in one
 * call (the tenant's shard of statistics).
 */
export type TenantExchange = (
  deltas: Counts,
  names: readonly string[],
  samples: readonly CalibrationSample[],
) => Promise<TenantAnswer>;

type Wanted = { since: number; names: string[] };

export class TenantCopy {
  readonly #t: SessionTables;
  /** The tenant's calibration, held the same way. */
  readonly calibration: CalibrationCopy;

  constructor(tables: SessionTables) {
    this.#t = tables;
    this.calibration = new CalibrationCopy(tables);
  }

  /** Whether the copy was ever filled. */
  filled(): boolean {
    return this.#t.meta<number>("stats_copy_at") !== undefined;
  }

  /**
   * Fills the copy with the counts of `names` read elsewhere (a name without counts is kept as
   * zero, so it is not asked again before the copy is stale).
   */
  fill(counts: Counts, names: readonly string[], now: number): void {
    const zero = { offloaded: 0, recalls: 0 };
    setCounts(this.#t.sql, "tenant_copy", {
      ...Object.fromEntries(names.map((n) => [n, zero])),
      ...counts,
    });
    this.#t.setMeta("stats_copy_at", now);
  }

  read(names: readonly string[]): Counts {
    if (names.length === 0 || this.#t.open(false) === null) return {};
    return nonZero(readCounts(this.#t.sql, "tenant_copy", names));
  }

  /** Adds this session's deltas (sent by the next sync). */
  note(deltas: Record<string, Partial<ToolStats>>, now: number): void {
    if (
      addCounts(this.#t.sql, "tenant_pending", deltas) &&
      this.#t.meta<number>("stats_pending_since") === undefined
    )
      this.#t.setMeta("stats_pending_since", now);
  }

  /**
   * A turn read `names`: when the copy is older than STATS_REFRESH_MS (or lacks one), a refresh
   * is wanted. Returns whether anything changed (the caller re-arms its alarm).
   */
  want(names: readonly string[], now: number): boolean {
    if (names.length === 0) return false;
    const at = this.#t.meta<number>("stats_copy_at");
    const known = new Set(Object.keys(readCounts(this.#t.sql, "tenant_copy", names)));
    const wanted = this.#t.meta<Wanted>("stats_wanted");
    const missing = names.filter((n) => !known.has(n) && !(wanted?.names.includes(n) ?? false));
    const stale = at === undefined || now - at > STATS_REFRESH_MS;
    if (!stale && missing.length === 0) return false;
    if (wanted !== undefined && missing.length === 0) return false;
    this.#t.setMeta("stats_wanted", {
      since: wanted?.since ?? now,
      names: [...(wanted?.names ?? []), ...missing],
    } satisfies Wanted);
    return true;
  }

  /**
   * A turn began: when the calibration copy is older than STATS_REFRESH_MS, a refresh is wanted
   * (within STATS_FLUSH_MS: not urgent, the estimates work uncalibrated meanwhile). Returns whether
   * anything changed (the caller re-arms its alarm).
   */
  wantCalibration(now: number): boolean {
    if (this.#t.open(false) === null || !this.calibration.stale(now)) return false;
    if (this.#t.meta<number>("calibration_wanted") !== undefined) return false;
    this.#t.setMeta("calibration_wanted", now);
    return true;
  }

  /** When the alarm must sync (null: nothing to send or refresh). */
  due(): number | null {
    const pending = this.#t.meta<number>("stats_pending_since");
    const wanted = this.#t.meta<Wanted>("stats_wanted");
    const samples = this.calibration.pendingSince();
    const calibration = this.#t.meta<number>("calibration_wanted");
    return earliest(
      pending === undefined ? null : pending + STATS_FLUSH_MS,
      wanted === undefined ? null : wanted.since,
      // Samples are not urgent: they leave with the copy's refresh (a session exchanges at most about
      // once a minute for its calibration, whatever its turn rate).
      samples === null ? null : samples + STATS_REFRESH_MS,
      calibration === undefined ? null : calibration + STATS_FLUSH_MS,
    );
  }

  /**
   * One exchange: the pending deltas and the written calibration samples out (the caller writes the
   * held ones first: held-writes.ts), the counts of every name the copy holds or wants back and the
   * tenant's calibration. Deltas noted and samples learned while the call is out stay pending for
   * the next one.
   */
  async sync(exchange: TenantExchange, now: () => number): Promise<void> {
    if (this.#t.open(false) === null) return;
    const sql = this.#t.sql;
    const sent = readCounts(sql, "tenant_pending");
    const wanted = this.#t.meta<Wanted>("stats_wanted");
    const names = [
      ...new Set([...Object.keys(readCounts(sql, "tenant_copy")), ...(wanted?.names ?? [])]),
    ];
    const samples = this.calibration.pending();
    const calibration = this.#t.meta<number>("calibration_wanted");
    if (
      Object.keys(sent).length === 0 &&
      names.length === 0 &&
      samples.upTo === 0 &&
      calibration === undefined
    )
      return;
    const started = now();
    const answer = await exchange(sent, names, samples.samples);
    const left = settleCounts(sql, "tenant_pending", sent);
    this.#t.setMeta("stats_pending_since", left ? now() : undefined);
    this.fill(answer.counts, names, now());
    this.calibration.settle(samples.upTo, answer.calibrations, now());
    const after = this.#t.meta<Wanted>("stats_wanted");
    if (after !== undefined && after.since <= started) this.#t.setMeta("stats_wanted", undefined);
    const calAfter = this.#t.meta<number>("calibration_wanted");
    if (calAfter !== undefined && calAfter <= started)
      this.#t.setMeta("calibration_wanted", undefined);
  }
}

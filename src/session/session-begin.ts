/**
 * A turn's first read in the SessionDO (`begin`, and `load` where the store asks for it): the
 * config, the records, the memos anchored on the request and the lease, with the tenant's
 * statistics from the session's copy (a new session's first read of them is held here until its
 * first commit stores it).
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { ToolStats } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import type { ProxyMemo } from "../proxy/port.ts";
import type { SessionLoad } from "../store/ports.ts";
import { withTimeout } from "../store/timeout.ts";
import {
  type BeginAsk,
  type BeginState,
  RPC_BUDGET_BYTES,
  type SessionBegin,
} from "../store/turn-protocol.ts";
import { anchoredMemos } from "./memos.ts";
import type { SessionLife, SessionParts } from "./session-life.ts";
import type { SessionRow } from "./session-tables.ts";
import { GAP_WINDOW, idleSince, medianGap, toolStatsOf } from "./state.ts";
import { statsExchange } from "./tenant-shards.ts";

/** A session's very first read of the tenant's statistics waits at most this long. */
const FIRST_STATS_WAIT_MS = 1000;

export class SessionBeginReads {
  readonly #p: SessionParts;
  readonly #life: SessionLife;
  /** A new session's first read of the tenant's counts, until its first commit stores it. */
  #firstStats: { names: string[]; stats: Record<string, ToolStats>; at: number } | null = null;

  constructor(parts: SessionParts, life: SessionLife) {
    this.#p = parts;
    this.#life = life;
  }

  /** The turn's first read, in one round trip (turn-protocol.ts). */
  async begin(ref: SessionRef, ask: BeginAsk): Promise<SessionBegin> {
    const tenant =
      ask.ids === null ? { stats: {}, refresh: false } : await this.#tenantStats(ref, ask.names);
    const now = Date.now();
    const row = this.#p.held.row(this.#p.t.row(ref));
    const lease = this.#life.started(ref, row, now);
    const memos = row === null ? [] : this.#anchored(ask.anchors);
    const ids =
      ask.ids === null ? null : [...ask.ids, ...memos.flatMap((m) => m.calls.map((c) => c.id))];
    const state = ids === null ? null : this.#state(row, ids, ask.names, now, tenant.stats);
    // The retention alarm re-arms itself for the later activity: only a refresh needs arming here.
    if (tenant.refresh || (state !== null && this.#p.stats.wantCalibration(now)))
      await this.#life.arm();
    return {
      config: row === null ? {} : (JSON.parse(row.config) as OffloadConfigPatch),
      state: state === null ? null : { ...state, lease },
      memos,
    };
  }

  /** The records of `toolUseIds` and the session's state, with the turn's lease. */
  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[],
  ): Promise<SessionLoad> {
    const tenant = await this.#tenantStats(ref, toolNames);
    const now = Date.now();
    const row = this.#p.held.row(this.#p.t.row(ref));
    const lease = this.#life.started(ref, row, now);
    const state = this.#state(row, toolUseIds, toolNames, now, tenant.stats);
    if (tenant.refresh || this.#p.stats.wantCalibration(now)) await this.#life.arm();
    return { ...state, lease };
  }

  #state(
    row: SessionRow | null,
    ids: readonly string[],
    names: readonly string[],
    now: number,
    tenant: Record<string, ToolStats>,
  ): Omit<BeginState, "lease"> {
    if (row === null)
      return {
        records: [],
        answered: ids.length,
        recall_declared: false,
        session_tool_stats: {},
        tool_stats: tenant,
        calibrations: {},
        gap_seconds: null,
      };
    const t = this.#p.t;
    // The lines held in memory count as written (held-writes.ts).
    const times = [
      ...t.sql
        .exec<{ at: number }>("SELECT at FROM turns ORDER BY seq DESC LIMIT ?", GAP_WINDOW + 1)
        .toArray()
        .map((r) => r.at)
        .reverse(),
      ...this.#p.held.times(),
    ].slice(-(GAP_WINDOW + 1));
    const { records, answered } = t.recordsWithin(ids, RPC_BUDGET_BYTES);
    return {
      records,
      answered,
      recall_declared: row.recall_declared === 1,
      session_tool_stats: names.length === 0 ? {} : toolStatsOf(t.allRecords(), t.recalls(), names),
      tool_stats: tenant,
      calibrations: this.#p.stats.calibration.read(),
      gap_seconds: medianGap(times),
      idle_seconds: idleSince(times, now),
    };
  }

  /**
   * The tenant's statistics for a read, from the session's copy. A session that never held one
   * asks its shard now (once, bounded, best effort: the gate learns from the session alone without
   * it); afterwards a stale copy is only marked for the alarm's refresh, off the turn's path.
   * `refresh`: the alarm must be armed for that.
   */
  async #tenantStats(
    ref: SessionRef,
    names: readonly string[],
  ): Promise<{ stats: Record<string, ToolStats>; refresh: boolean }> {
    if (names.length === 0) return { stats: {}, refresh: false };
    const { t, stats: copy } = this.#p;
    const stored = t.open(false) !== null;
    if (stored && copy.filled()) {
      const stats = copy.read(names);
      return { stats, refresh: copy.want(names, Date.now()) };
    }
    const first = this.#firstStats;
    if (first !== null && names.every((n) => first.names.includes(n)))
      return { stats: first.stats, refresh: false };
    try {
      const { counts: stats } = await withTimeout(
        () => statsExchange(this.#p.env, ref)({}, names, []),
        FIRST_STATS_WAIT_MS,
      );
      // Kept until the session is written (its first commit fills the copy with it).
      this.#firstStats = { names: [...names], stats, at: Date.now() };
      if (t.open(false) !== null) this.keepFirstStats();
      return { stats, refresh: false };
    } catch {
      // The gate learns from the session alone until the alarm's refresh.
      return { stats: {}, refresh: stored && copy.want(names, Date.now()) };
    }
  }

  /** Whether a commit would store the first read's counts (a write). */
  holdsFirstStats(): boolean {
    return this.#firstStats !== null && !this.#p.stats.filled();
  }

  /** The first read's counts, into the copy once the session has storage. */
  keepFirstStats(): void {
    const first = this.#firstStats;
    if (first === null || this.#p.stats.filled()) return;
    this.#p.stats.fill(first.stats, first.names, first.at);
    this.#firstStats = null;
  }

  /**
   * The memos anchored on one of `anchors` (SQLite picks them out: the others are not even parsed).
   */
  #anchored(anchors: readonly string[] | undefined): ProxyMemo[] {
    if (anchors === undefined || anchors.length === 0) return [];
    const rows = this.#p.t.sql
      .exec<{ memo: string }>(
        `SELECT memo FROM memos WHERE
           json_extract(memo, '$.from') IN (SELECT value FROM json_each(?1))
           OR EXISTS (SELECT 1 FROM json_each(memo, '$.anchors') a WHERE a.value IN (SELECT value FROM json_each(?1)))
         ORDER BY seq`,
        JSON.stringify(anchors),
      )
      .toArray();
    return anchoredMemos(
      rows.map((r) => JSON.parse(r.memo) as ProxyMemo),
      anchors,
    );
  }
}

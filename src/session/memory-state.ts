/**
 * The in-memory twin of the SessionDO: the same rules (state.ts), Maps instead of SQLite. Values
 * are cloned on the way in and out, as RPC would.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { TurnCommit } from "../core/ports.ts";
import type { ResultRecord, SessionRef } from "../core/types.ts";
import type { ProxyState, ProxyTurn } from "../proxy/port.ts";
import type {
  SessionCommitResult,
  SessionDetail,
  SessionLoad,
  SessionReportData,
  SessionStatePort,
} from "../store/ports.ts";
import {
  type BeginAsk,
  type RecordsBatch,
  type RecordsResult,
  refusalOf,
  type SessionBegin,
  type TurnLease,
} from "../store/turn-protocol.ts";
import {
  admitted,
  endPurge,
  FRESH_LIFECYCLE,
  isGone,
  type Lifecycle,
  leaseOf,
  orphansOf,
  PURGE_GRACE_MS,
  startPurge,
} from "./lifecycle.ts";
import { describeRow, type MemoryRow, newRow, reportOfRow } from "./memory-row.ts";
import { anchoredMemos } from "./memos.ts";
import { lastTurnOf, loggedTurn } from "./report.ts";
import {
  applyCommit,
  GAP_WINDOW,
  idleSince,
  indexDue,
  MEMO_LIMIT,
  medianGap,
  offloadsOf,
  TURN_LOG_LIMIT,
  toolStatsOf,
} from "./state.ts";
import { findTurn, type TurnKey, type UsageOutcome, withUsage } from "./usage.ts";

export class MemorySessionState implements SessionStatePort {
  readonly #rows = new Map<string, MemoryRow>();
  /** Per session: its generation and purges (kept across a purge, unlike the row). */
  readonly #lives = new Map<string, Lifecycle>();
  /** Per session: bodies a refused commit wrote, noted for deletion (mem_id → deleted at). */
  readonly #orphans = new Map<string, Map<string, { deleted_at: number | null }>>();
  readonly #now: () => number;

  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  #key(ref: SessionRef): string {
    return JSON.stringify([ref.tenant, ref.session]);
  }

  #row(ref: SessionRef): MemoryRow {
    const key = this.#key(ref);
    let row = this.#rows.get(key);
    const now = this.#now();
    if (row === undefined) {
      row = newRow(now);
      this.#rows.set(key, row);
    }
    row.last_active = now;
    return row;
  }

  #life(ref: SessionRef): Lifecycle {
    const key = this.#key(ref);
    let life = this.#lives.get(key) ?? FRESH_LIFECYCLE;
    // A purge nobody confirmed (its caller failed): the object would purge again by itself, here
    // the purge is left as it is and turns may write again.
    if (life.purging_since !== null && this.#now() - life.purging_since > PURGE_GRACE_MS)
      this.#lives.set(key, (life = endPurge(life, this.#now())));
    return life;
  }

  /** A turn starts reading: activity for retention, and (tombstoned) a begin the sweep waits for. */
  #started(ref: SessionRef): TurnLease | null {
    const key = this.#key(ref);
    const now = this.#now();
    const life = this.#life(ref);
    const row = this.#rows.get(key);
    if (row !== undefined) row.last_active = now;
    else if (life.tombstone_at !== null) this.#lives.set(key, { ...life, last_begin: now });
    return leaseOf(life, now);
  }

  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<SessionLoad> {
    const lease = this.#started(ref);
    return { ...this.#state(ref, toolUseIds, toolNames), lease };
  }

  #state(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[],
  ): Omit<SessionLoad, "lease"> {
    const row = this.#rows.get(this.#key(ref));
    if (row === undefined)
      return { records: [], recall_declared: false, session_tool_stats: {}, gap_seconds: null };
    const records = toolUseIds.flatMap((id) => {
      const r = row.records.get(id);
      return r === undefined ? [] : [structuredClone(r)];
    });
    return {
      records,
      recall_declared: row.recall_declared,
      session_tool_stats:
        toolNames.length === 0 ? {} : toolStatsOf(row.records.values(), row.recalls, toolNames),
      gap_seconds: medianGap(row.times),
      idle_seconds: idleSince(row.times, this.#now()),
    };
  }

  async begin(ref: SessionRef, ask: BeginAsk): Promise<SessionBegin> {
    const lease = this.#started(ref);
    const row = this.#rows.get(this.#key(ref));
    const memos = anchoredMemos(row?.memos ?? [], ask.anchors);
    const ids =
      ask.ids === null ? null : [...ask.ids, ...memos.flatMap((m) => m.calls.map((c) => c.id))];
    const state = ids === null ? null : this.#state(ref, ids, ask.names);
    return structuredClone({
      config: row?.config ?? {},
      state: state === null ? null : { ...state, answered: ids!.length, lease },
      memos,
    });
  }

  /**
   * The records that may stand under `lease`: none when the session was deleted since (its
   * bodies noted for deletion), else all but those naming a body noted for deletion.
   */
  #admit(
    ref: SessionRef,
    records: readonly ResultRecord[],
    lease: TurnLease | null | undefined,
  ): ResultRecord[] | null {
    const key = this.#key(ref);
    const life = this.#life(ref);
    const orphans = this.#orphans.get(key) ?? new Map<string, { deleted_at: number | null }>();
    if (
      refusalOf(lease, { epoch: life.epoch, purging: life.purging_since !== null }, this.#now())
    ) {
      const row = this.#rows.get(key);
      const named = (memId: string) =>
        [...(row?.records.values() ?? [])].some((r) => r.mem_id === memId);
      for (const memId of orphansOf(records, named)) orphans.set(memId, { deleted_at: null });
      if (orphans.size > 0) this.#orphans.set(key, orphans);
      return null;
    }
    return admitted(records, (m) => orphans.get(m), lease);
  }

  async addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult> {
    const ok = this.#admit(ref, batch.records, batch.lease);
    if (ok === null) return { records: [], offloads: {}, refused: "deleted" };
    const row = this.#row(ref);
    const { insert, standing } = applyCommit(row.records, ok);
    for (const r of insert) row.records.set(r.tool_use_id, structuredClone(r));
    return { records: standing.map((r) => structuredClone(r)), offloads: offloadsOf(insert) };
  }

  async purged(ref: SessionRef): Promise<void> {
    const key = this.#key(ref);
    const life = this.#lives.get(key);
    if (life?.purging_since !== null && life !== undefined)
      this.#lives.set(key, endPurge(life, this.#now()));
  }

  async commit(ref: SessionRef, commit: TurnCommit): Promise<SessionCommitResult> {
    const lease = commit.lease as TurnLease | null | undefined;
    const ok = this.#admit(ref, commit.records, lease);
    if (ok === null)
      return { records: [], index_due: false, offloads: {}, turn_seq: 0, refused: "deleted" };
    const row = this.#row(ref);
    const { insert, standing } = applyCommit(row.records, ok);
    for (const r of insert) row.records.set(r.tool_use_id, structuredClone(r));
    row.recall_declared ||= commit.recall_declared;
    row.calls++;
    row.seq++;
    row.turns.push({ seq: row.seq, line: loggedTurn(structuredClone(commit.log), this.#now(), 0) });
    if (commit.decisions !== undefined)
      row.last_turn = structuredClone(
        lastTurnOf(commit.log, commit.decisions, this.#now(), commit.decisions_total),
      );
    if (row.turns.length > TURN_LOG_LIMIT) row.turns.splice(0, row.turns.length - TURN_LOG_LIMIT);
    const due = indexDue(this.#now(), row.last_indexed);
    if (due) row.last_indexed = this.#now();
    row.times.push(this.#now());
    if (row.times.length > GAP_WINDOW + 1) row.times.splice(0, row.times.length - GAP_WINDOW - 1);
    return {
      records: standing.map((r) => structuredClone(r)),
      index_due: due,
      offloads: offloadsOf(insert),
      turn_seq: row.seq,
    };
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    // A recall of a session that is gone (deleted while the body was read) brings nothing back.
    if (!this.#rows.has(this.#key(ref)) && isGone(this.#life(ref))) return null;
    const row = this.#row(ref);
    row.recalls.set(memId, (row.recalls.get(memId) ?? 0) + 1);
    const latest = row.turns[row.turns.length - 1];
    if (latest !== undefined) latest.line.recalls++;
    for (const r of row.records.values())
      if (r.mem_id === memId && r.action === "offloaded") return r.tool_name;
    return null;
  }

  async describe(ref: SessionRef): Promise<SessionDetail | null> {
    const row = this.#rows.get(this.#key(ref));
    if (row === undefined) return null;
    return describeRow(ref, row);
  }

  async report(
    ref: SessionRef,
    options: { turns?: boolean } = {},
  ): Promise<SessionReportData | null> {
    const row = this.#rows.get(this.#key(ref));
    if (row === undefined) return null;
    return reportOfRow(ref, row, options);
  }

  async getConfig(ref: SessionRef): Promise<OffloadConfigPatch> {
    return structuredClone(this.#rows.get(this.#key(ref))?.config ?? {});
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    this.#row(ref).config = structuredClone(patch);
  }

  async proxyState(ref: SessionRef): Promise<ProxyState> {
    const row = this.#rows.get(this.#key(ref));
    return structuredClone({ config: row?.config ?? {}, memos: row?.memos ?? [] });
  }

  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    // Deleted while the provider answered: the session stays gone.
    if (!this.#rows.has(this.#key(ref)) && isGone(this.#life(ref))) return;
    const row = this.#row(ref);
    const entry =
      turn.turn_seq === null ? undefined : row.turns.find((t) => t.seq === turn.turn_seq);
    if (entry !== undefined) {
      const line = { ...entry.line, proxy: { ...turn.note } };
      entry.line =
        turn.usage === undefined
          ? line
          : { ...line, ...(withUsage(entry.seq, line, turn.usage).log ?? line) };
    }
    row.memos.push(...structuredClone([...turn.memos]));
    if (row.memos.length > MEMO_LIMIT) row.memos.splice(0, row.memos.length - MEMO_LIMIT);
  }

  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    const row = this.#rows.get(this.#key(ref));
    if (row === undefined) return null;
    const entry = findTurn(
      row.turns.map((t) => ({ seq: t.seq, log: t.line, entry: t })),
      key,
    );
    if (entry === undefined) return { status: "unknown_turn" };
    const next = withUsage(entry.seq, entry.log, usage);
    if (next.log !== null) entry.entry.line = { ...entry.entry.line, ...structuredClone(next.log) };
    return structuredClone(next.outcome);
  }

  async destroy(ref: SessionRef): Promise<string[]> {
    const key = this.#key(ref);
    const row = this.#rows.get(key);
    // The generation moves before anything is deleted: no turn that began earlier can commit now.
    this.#lives.set(key, startPurge(this.#life(ref), this.#now()));
    this.#orphans.delete(key);
    this.#rows.delete(key);
    if (row === undefined) return [];
    return [
      ...new Set([...row.records.values()].flatMap((r) => (r.mem_id === null ? [] : [r.mem_id]))),
    ];
  }
}

/**
 * The in-memory twin of the SessionDO: the same rules (state.ts), Maps instead of SQLite. Values
 * are cloned on the way in and out, as RPC would.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { TurnCommit } from "../core/ports.ts";
import type { ResultRecord, SessionRef } from "../core/types.ts";
import type { ProxyMemo, ProxyState, ProxyTurn } from "../proxy/port.ts";
import type {
  LastTurn,
  LoggedTurn,
  SessionCommitResult,
  SessionDetail,
  SessionLoad,
  SessionReportData,
  SessionStatePort,
} from "../store/ports.ts";
import { lastTurnOf, latestOf, loggedTurn, recordCounts, totalsOf } from "./report.ts";
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

interface Row {
  records: Map<string, ResultRecord>;
  /**
   * Turn log lines with the sequence number their commit returned (the proxy notes its hops on one
   * later).
   */
  turns: { seq: number; line: LoggedTurn }[];
  seq: number;
  last_turn: LastTurn | null;
  memos: ProxyMemo[];
  recall_declared: boolean;
  calls: number;
  recalls: Map<string, number>;
  config: OffloadConfigPatch;
  created_at: number;
  last_active: number;
  last_indexed: number | null;
  /** Commit times, most recent last (for the gap between turns). */
  times: number[];
}

export class MemorySessionState implements SessionStatePort {
  readonly #rows = new Map<string, Row>();
  readonly #now: () => number;

  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  #key(ref: SessionRef): string {
    return JSON.stringify([ref.tenant, ref.session]);
  }

  #row(ref: SessionRef): Row {
    const key = this.#key(ref);
    let row = this.#rows.get(key);
    const now = this.#now();
    if (row === undefined) {
      row = {
        records: new Map(),
        turns: [],
        seq: 0,
        last_turn: null,
        memos: [],
        recall_declared: false,
        calls: 0,
        recalls: new Map(),
        config: {},
        created_at: now,
        last_active: now,
        last_indexed: null,
        times: [],
      };
      this.#rows.set(key, row);
    }
    row.last_active = now;
    return row;
  }

  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<SessionLoad> {
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

  async commit(ref: SessionRef, commit: TurnCommit): Promise<SessionCommitResult> {
    const row = this.#row(ref);
    const { insert, standing } = applyCommit(row.records, commit.records);
    for (const r of insert) row.records.set(r.tool_use_id, structuredClone(r));
    row.recall_declared ||= commit.recall_declared;
    row.calls++;
    row.seq++;
    row.turns.push({ seq: row.seq, line: loggedTurn(structuredClone(commit.log), this.#now(), 0) });
    if (commit.decisions !== undefined)
      row.last_turn = structuredClone(lastTurnOf(commit.log, commit.decisions, this.#now()));
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
    const recalls = recallTotal(row);
    return {
      tenant: ref.tenant,
      session: ref.session,
      calls: row.calls,
      recall_declared: row.recall_declared,
      recalls,
      tool_stats: toolStatsOf(row.records.values(), row.recalls),
      records: [...row.records.values()].map((r) => structuredClone(r)),
      turns: row.turns.map((t) => structuredClone(t.line)),
      config: structuredClone(row.config),
      created_at: row.created_at,
      last_active: row.last_active,
      recalls_by_mem_id: Object.fromEntries(row.recalls),
    };
  }

  async report(
    ref: SessionRef,
    options: { turns?: boolean } = {},
  ): Promise<SessionReportData | null> {
    const row = this.#rows.get(this.#key(ref));
    if (row === undefined) return null;
    const recalls = recallTotal(row);
    return {
      tenant: ref.tenant,
      session: ref.session,
      created_at: row.created_at,
      last_active: row.last_active,
      calls: row.calls,
      recall_declared: row.recall_declared,
      config: structuredClone(row.config),
      records: recordCounts(row.records.values(), row.recalls),
      recalls,
      totals: totalsOf(row.turns.map((t) => t.line)),
      latest: latestOf(row.turns.map((t) => t.line)),
      turns: options.turns === false ? [] : row.turns.map((t) => structuredClone(t.line)),
      last_turn: structuredClone(row.last_turn),
    };
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
    this.#rows.delete(key);
    if (row === undefined) return [];
    return [
      ...new Set([...row.records.values()].flatMap((r) => (r.mem_id === null ? [] : [r.mem_id]))),
    ];
  }
}

function recallTotal(row: Row): number {
  let n = 0;
  for (const c of row.recalls.values()) n += c;
  return n;
}

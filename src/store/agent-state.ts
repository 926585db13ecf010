/**
 * The session state in an agent's own Durable Object: the SessionDO's rules (state.ts, report.ts)
 * over `eo_` tables keyed by tenant and session, beside the agent's own tables. Each method runs its
 * SQL synchronously (writes in one `transactionSync`), so within the object no two turns interleave
 * and the second sees the first's records, as in the SessionDO. Retention is the agent's: its
 * lifetime is the conversation's, and `destroy` forgets a session when the app clears it (never the
 * rest of the object's storage).
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { TurnCommit } from "../core/ports.ts";
import type { ResultRecord, SessionRef, TurnLog } from "../core/types.ts";
import type { ProxyMemo, ProxyState, ProxyTurn } from "../proxy/port.ts";
import { lastTurnOf, latestOf, loggedTurn, recordCounts, totalsOf } from "../session/report.ts";
import {
  applyCommit,
  GAP_WINDOW,
  indexDue,
  MEMO_LIMIT,
  medianGap,
  offloadsOf,
  TURN_LOG_LIMIT,
  toolStatsOf,
} from "../session/state.ts";
import { findTurn, type TurnKey, type UsageOutcome, withUsage } from "../session/usage.ts";
import { type AgentStorage, idList, sqlOf } from "./agent-sql.ts";
import type {
  LastTurn,
  LoggedTurn,
  SessionCommitResult,
  SessionDetail,
  SessionLoad,
  SessionReportData,
  SessionStatePort,
} from "./ports.ts";

type Row = {
  recall_declared: number;
  calls: number;
  config: string;
  created_at: number;
  last_active: number;
  last_indexed: number | null;
  last_turn: string | null;
};

const KEY = "tenant = ? AND session = ?";

export class AgentSessionState implements SessionStatePort {
  readonly #storage: AgentStorage;
  readonly #now: () => number;

  constructor(storage: AgentStorage, options: { now?: () => number } = {}) {
    this.#storage = storage;
    this.#now = options.now ?? Date.now;
  }

  get #sql() {
    return sqlOf(this.#storage);
  }

  #row(ref: SessionRef): Row | null {
    return (
      this.#sql
        .exec<Row>(
          `SELECT recall_declared, calls, config, created_at, last_active, last_indexed, last_turn FROM eo_sessions WHERE ${KEY}`,
          ref.tenant,
          ref.session,
        )
        .toArray()[0] ?? null
    );
  }

  /** The session's row, created on its first write; every write counts as activity. */
  #touch(ref: SessionRef, now: number): Row {
    this.#sql.exec(
      "INSERT INTO eo_sessions (tenant, session, created_at, last_active) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, session) DO UPDATE SET last_active = excluded.last_active",
      ref.tenant,
      ref.session,
      now,
      now,
    );
    return this.#row(ref)!;
  }

  #records(ref: SessionRef, ids: readonly string[] | null): ResultRecord[] {
    const rows =
      ids === null
        ? this.#sql.exec<{ record: string }>(
            `SELECT record FROM eo_records WHERE ${KEY} ORDER BY rowid`,
            ref.tenant,
            ref.session,
          )
        : this.#sql.exec<{ record: string }>(
            `SELECT record FROM eo_records WHERE ${KEY} AND tool_use_id IN (SELECT value FROM json_each(?))`,
            ref.tenant,
            ref.session,
            idList(ids),
          );
    return rows.toArray().map((r) => JSON.parse(r.record) as ResultRecord);
  }

  #recalls(ref: SessionRef): Map<string, number> {
    return new Map(
      this.#sql
        .exec<{ mem_id: string; count: number }>(
          `SELECT mem_id, count FROM eo_recalls WHERE ${KEY} ORDER BY mem_id`,
          ref.tenant,
          ref.session,
        )
        .toArray()
        .map((r) => [r.mem_id, r.count]),
    );
  }

  #turns(ref: SessionRef): LoggedTurn[] {
    return this.#sql
      .exec<{ log: string; at: number; recalls: number }>(
        `SELECT log, at, recalls FROM eo_turns WHERE ${KEY} ORDER BY seq`,
        ref.tenant,
        ref.session,
      )
      .toArray()
      .map((r) => loggedTurn(JSON.parse(r.log) as TurnLog, r.at, r.recalls));
  }

  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<SessionLoad> {
    const row = this.#row(ref);
    if (row === null)
      return { records: [], recall_declared: false, session_tool_stats: {}, gap_seconds: null };
    const times = this.#sql
      .exec<{ at: number }>(
        `SELECT at FROM eo_turns WHERE ${KEY} ORDER BY seq DESC LIMIT ?`,
        ref.tenant,
        ref.session,
        GAP_WINDOW + 1,
      )
      .toArray()
      .map((r) => r.at)
      .reverse();
    return {
      records: this.#records(ref, toolUseIds),
      recall_declared: row.recall_declared === 1,
      session_tool_stats:
        toolNames.length === 0
          ? {}
          : toolStatsOf(this.#records(ref, null), this.#recalls(ref), toolNames),
      gap_seconds: medianGap(times),
    };
  }

  async commit(ref: SessionRef, commit: TurnCommit): Promise<SessionCommitResult> {
    const now = this.#now();
    const sql = this.#sql;
    return this.#storage.transactionSync(() => {
      const row = this.#touch(ref, now);
      const existing = new Map(
        this.#records(
          ref,
          commit.records.map((r) => r.tool_use_id),
        ).map((r) => [r.tool_use_id, r]),
      );
      const { insert, standing } = applyCommit(existing, commit.records);
      for (const r of insert)
        sql.exec(
          "INSERT INTO eo_records (tenant, session, tool_use_id, mem_id, record) VALUES (?, ?, ?, ?, ?)",
          ref.tenant,
          ref.session,
          r.tool_use_id,
          r.mem_id,
          JSON.stringify(r),
        );
      const due = indexDue(now, row.last_indexed);
      sql.exec(
        `UPDATE eo_sessions SET calls = calls + 1, recall_declared = max(recall_declared, ?), last_indexed = ? WHERE ${KEY}`,
        commit.recall_declared ? 1 : 0,
        due ? now : row.last_indexed,
        ref.tenant,
        ref.session,
      );
      const seq = sql
        .exec<{ seq: number }>(
          "INSERT INTO eo_turns (tenant, session, log, at) VALUES (?, ?, ?, ?) RETURNING seq",
          ref.tenant,
          ref.session,
          JSON.stringify(commit.log),
          now,
        )
        .one().seq;
      keepLatest(sql, "eo_turns", ref, TURN_LOG_LIMIT);
      if (commit.decisions !== undefined)
        sql.exec(
          `UPDATE eo_sessions SET last_turn = ? WHERE ${KEY}`,
          JSON.stringify(lastTurnOf(commit.log, commit.decisions, now)),
          ref.tenant,
          ref.session,
        );
      return { records: standing, index_due: due, offloads: offloadsOf(insert), turn_seq: seq };
    });
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    const sql = this.#sql;
    return this.#storage.transactionSync(() => {
      this.#touch(ref, this.#now());
      sql.exec(
        "INSERT INTO eo_recalls (tenant, session, mem_id, count) VALUES (?, ?, ?, 1) ON CONFLICT (tenant, session, mem_id) DO UPDATE SET count = count + 1",
        ref.tenant,
        ref.session,
        memId,
      );
      // The model read this back answering the latest logged turn's prompt.
      sql.exec(
        `UPDATE eo_turns SET recalls = recalls + 1 WHERE seq = (SELECT max(seq) FROM eo_turns WHERE ${KEY})`,
        ref.tenant,
        ref.session,
      );
      const named = sql
        .exec<{ record: string }>(
          `SELECT record FROM eo_records WHERE ${KEY} AND mem_id = ? LIMIT 1`,
          ref.tenant,
          ref.session,
          memId,
        )
        .toArray()[0];
      const record = named === undefined ? null : (JSON.parse(named.record) as ResultRecord);
      return record !== null && record.action === "offloaded" ? record.tool_name : null;
    });
  }

  async describe(ref: SessionRef): Promise<SessionDetail | null> {
    const row = this.#row(ref);
    if (row === null) return null;
    const recalls = this.#recalls(ref);
    const records = this.#records(ref, null);
    return {
      tenant: ref.tenant,
      session: ref.session,
      calls: row.calls,
      recall_declared: row.recall_declared === 1,
      recalls: total(recalls),
      tool_stats: toolStatsOf(records, recalls),
      records,
      turns: this.#turns(ref),
      config: JSON.parse(row.config) as OffloadConfigPatch,
      created_at: row.created_at,
      last_active: row.last_active,
      recalls_by_mem_id: Object.fromEntries(recalls),
    };
  }

  async report(
    ref: SessionRef,
    options: { turns?: boolean } = {},
  ): Promise<SessionReportData | null> {
    const row = this.#row(ref);
    if (row === null) return null;
    const recalls = this.#recalls(ref);
    const turns = this.#turns(ref);
    return {
      tenant: ref.tenant,
      session: ref.session,
      created_at: row.created_at,
      last_active: row.last_active,
      calls: row.calls,
      recall_declared: row.recall_declared === 1,
      config: JSON.parse(row.config) as OffloadConfigPatch,
      records: recordCounts(this.#records(ref, null), recalls),
      recalls: total(recalls),
      totals: totalsOf(turns),
      latest: latestOf(turns),
      turns: options.turns === false ? [] : turns,
      last_turn: row.last_turn === null ? null : (JSON.parse(row.last_turn) as LastTurn),
    };
  }

  async getConfig(ref: SessionRef): Promise<OffloadConfigPatch> {
    const row = this.#row(ref);
    return row === null ? {} : (JSON.parse(row.config) as OffloadConfigPatch);
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    this.#storage.transactionSync(() => {
      this.#touch(ref, this.#now());
      this.#sql.exec(
        `UPDATE eo_sessions SET config = ? WHERE ${KEY}`,
        JSON.stringify(patch),
        ref.tenant,
        ref.session,
      );
    });
  }

  async proxyState(ref: SessionRef): Promise<ProxyState> {
    const row = this.#row(ref);
    if (row === null) return { config: {}, memos: [] };
    const memos = this.#sql
      .exec<{ memo: string }>(
        `SELECT memo FROM eo_memos WHERE ${KEY} ORDER BY seq`,
        ref.tenant,
        ref.session,
      )
      .toArray()
      .map((r) => JSON.parse(r.memo) as ProxyMemo);
    return { config: JSON.parse(row.config) as OffloadConfigPatch, memos };
  }

  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    const sql = this.#sql;
    this.#storage.transactionSync(() => {
      this.#touch(ref, this.#now());
      if (turn.turn_seq !== null) {
        const line = sql
          .exec<{ log: string }>(
            `SELECT log FROM eo_turns WHERE ${KEY} AND seq = ?`,
            ref.tenant,
            ref.session,
            turn.turn_seq,
          )
          .toArray()[0];
        if (line !== undefined) {
          const { hops, recalls, exhausted } = turn.note;
          let log: TurnLog = {
            ...(JSON.parse(line.log) as TurnLog),
            proxy: { hops, recalls, exhausted },
          };
          if (turn.usage !== undefined) log = withUsage(turn.turn_seq, log, turn.usage).log ?? log;
          sql.exec("UPDATE eo_turns SET log = ? WHERE seq = ?", JSON.stringify(log), turn.turn_seq);
        }
      }
      for (const memo of turn.memos)
        sql.exec(
          "INSERT INTO eo_memos (tenant, session, memo) VALUES (?, ?, ?)",
          ref.tenant,
          ref.session,
          JSON.stringify(memo),
        );
      if (turn.memos.length > 0) keepLatest(sql, "eo_memos", ref, MEMO_LIMIT);
    });
  }

  /** The provider's usage for a logged turn (the usage route): idempotent, see session/usage.ts. */
  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    const sql = this.#sql;
    return this.#storage.transactionSync((): UsageOutcome | null => {
      if (this.#row(ref) === null) return null;
      const lines = sql
        .exec<{ seq: number; log: string }>(
          "seq" in key
            ? `SELECT seq, log FROM eo_turns WHERE ${KEY} AND seq = ?`
            : `SELECT seq, log FROM eo_turns WHERE ${KEY} AND json_extract(log, '$.turn') = ? ORDER BY seq DESC LIMIT 1`,
          ref.tenant,
          ref.session,
          "seq" in key ? key.seq : key.turn,
        )
        .toArray()
        .map((r) => ({ seq: r.seq, log: JSON.parse(r.log) as TurnLog }));
      const line = findTurn(lines, key);
      if (line === undefined) return { status: "unknown_turn" };
      const next = withUsage(line.seq, line.log, usage);
      if (next.log !== null)
        sql.exec("UPDATE eo_turns SET log = ? WHERE seq = ?", JSON.stringify(next.log), line.seq);
      return next.outcome;
    });
  }

  async destroy(ref: SessionRef): Promise<string[]> {
    const sql = this.#sql;
    return this.#storage.transactionSync(() => {
      if (this.#row(ref) === null) return [];
      const named = sql
        .exec<{ mem_id: string }>(
          `SELECT DISTINCT mem_id FROM eo_records WHERE ${KEY} AND mem_id IS NOT NULL`,
          ref.tenant,
          ref.session,
        )
        .toArray()
        .map((r) => r.mem_id);
      for (const table of ["eo_sessions", "eo_records", "eo_turns", "eo_recalls", "eo_memos"])
        sql.exec(`DELETE FROM ${table} WHERE ${KEY}`, ref.tenant, ref.session);
      return named;
    });
  }
}

/** Drops the session's oldest lines of `table` beyond the latest `limit`. */
function keepLatest(
  sql: AgentStorage["sql"],
  table: "eo_turns" | "eo_memos",
  ref: SessionRef,
  limit: number,
): void {
  sql.exec(
    `DELETE FROM ${table} WHERE ${KEY} AND seq NOT IN (SELECT seq FROM ${table} WHERE ${KEY} ORDER BY seq DESC LIMIT ?)`,
    ref.tenant,
    ref.session,
    ref.tenant,
    ref.session,
    limit,
  );
}

function total(recalls: ReadonlyMap<string, number>): number {
  let n = 0;
  for (const c of recalls.values()) n += c;
  return n;
}

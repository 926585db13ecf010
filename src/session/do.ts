/**
 * SessionDO: one per tenant+session (`idFromName("<tenant>/<session>")`), SQLite storage, RPC methods. It is
 * the authority for the session's sticky decisions, and it serializes the session's turns: each method runs
 * its SQL synchronously inside the object's input gate, so two commits never interleave, and the second sees
 * the first's records (first writer wins, state.ts). Bodies never come here: the Worker writes R2 and sends
 * only small records.
 *
 * Retention: every write moves `last_active`; an alarm at last_active + OFFLOAD_RETENTION_SECONDS purges an
 * idle session (its state, its R2 bodies, its KV entries). 0 keeps sessions until they are deleted.
 */
import { DurableObject } from "cloudflare:workers";
import type { OffloadConfigPatch } from "../config.ts";
import type { ProxyTurnNote, ResultRecord, SessionRef, TurnLog } from "../core/types.ts";
import type { Env } from "../env.ts";
import { purgeBodies } from "../store/edge.ts";
import { KvIndex } from "../store/kv.ts";
import type {
  LastTurn,
  LoggedTurn,
  ProxyMemo,
  ProxyState,
  ProxyTurn,
  SessionCommit,
  SessionCommitResult,
  SessionDetail,
  SessionLoad,
  SessionReportData,
} from "../store/parts.ts";
import { R2Ledger } from "../store/r2.ts";
import { lastTurnOf, latestOf, loggedTurn, recordCounts, totalsOf } from "./report.ts";
import {
  applyCommit,
  checkScope,
  expiresAt,
  GAP_WINDOW,
  idleSince,
  indexDue,
  indexTtlSeconds,
  isExpired,
  MEMO_LIMIT,
  medianGap,
  offloadsOf,
  parseRetention,
  TURN_LOG_LIMIT,
  toolStatsOf,
} from "./state.ts";

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS session (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    tenant TEXT NOT NULL,
    session TEXT NOT NULL,
    recall_declared INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    config TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    last_active INTEGER NOT NULL,
    last_indexed INTEGER
  )`,
  `CREATE TABLE IF NOT EXISTS records (tool_use_id TEXT PRIMARY KEY, mem_id TEXT, record TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS turns (seq INTEGER PRIMARY KEY AUTOINCREMENT, log TEXT NOT NULL, at INTEGER NOT NULL DEFAULT 0, recalls INTEGER NOT NULL DEFAULT 0)`,
  `CREATE TABLE IF NOT EXISTS recalls (mem_id TEXT PRIMARY KEY, count INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS memos (seq INTEGER PRIMARY KEY AUTOINCREMENT, memo TEXT NOT NULL)`,
  // The latest turn's decisions with their gate breakdown (one row, replaced by each commit that sends them).
  `CREATE TABLE IF NOT EXISTS last_turn (id INTEGER PRIMARY KEY CHECK (id = 1), turn TEXT NOT NULL)`,
];

/**
 * Columns added to tables that objects created by an earlier version already have. CREATE TABLE IF NOT EXISTS
 * leaves an existing table as it was, so each column is added when the table's declaration lacks it.
 */
const ADDED_COLUMNS: { table: string; column: string; ddl: string }[] = [
  {
    table: "turns",
    column: "recalls",
    ddl: "ALTER TABLE turns ADD COLUMN recalls INTEGER NOT NULL DEFAULT 0",
  },
];

type SessionRow = {
  tenant: string;
  session: string;
  recall_declared: number;
  calls: number;
  config: string;
  created_at: number;
  last_active: number;
  last_indexed: number | null;
};

export class SessionDO extends DurableObject<Env> {
  #ready = false;

  /**
   * Tables are created by the first write only: reading a session nobody wrote (a compact call with everything
   * off asks for the session's config) must not leave storage behind, which no alarm would ever clean up.
   */
  #tables(create: boolean): SqlStorage | null {
    const sql = this.ctx.storage.sql;
    if (!this.#ready) {
      const exists =
        sql
          .exec("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'session'")
          .toArray().length > 0;
      if (!exists && !create) return null;
      for (const statement of SCHEMA) sql.exec(statement);
      for (const c of ADDED_COLUMNS) {
        const declared =
          sql
            .exec<{ sql: string }>(
              "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
              c.table,
            )
            .toArray()[0]?.sql ?? "";
        if (!new RegExp(`\\b${c.column}\\b`).test(declared)) sql.exec(c.ddl);
      }
      this.#ready = true;
    }
    return sql;
  }

  get #sql(): SqlStorage {
    return this.#tables(true)!;
  }

  #retention(): number {
    return parseRetention(this.env.OFFLOAD_RETENTION_SECONDS);
  }

  #row(ref?: SessionRef): SessionRow | null {
    const sql = this.#tables(false);
    if (sql === null) return null;
    const row =
      sql
        .exec<SessionRow>(
          "SELECT tenant, session, recall_declared, calls, config, created_at, last_active, last_indexed FROM session WHERE id = 1",
        )
        .toArray()[0] ?? null;
    if (row !== null && ref !== undefined) checkScope(row, ref);
    return row;
  }

  /** The session's row, created on its first write; every write counts as activity. */
  #touch(ref: SessionRef, now: number): SessionRow {
    this.#sql.exec(
      "INSERT INTO session (id, tenant, session, created_at, last_active) VALUES (1, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
      ref.tenant,
      ref.session,
      now,
      now,
    );
    const row = this.#row(ref)!;
    this.#sql.exec("UPDATE session SET last_active = ? WHERE id = 1", now);
    return { ...row, last_active: now };
  }

  async #schedule(): Promise<void> {
    const retention = this.#retention();
    if (retention === 0) return;
    // One pending alarm is enough: when it fires it re-arms itself if the session was active since.
    if ((await this.ctx.storage.getAlarm()) === null)
      await this.ctx.storage.setAlarm(expiresAt(Date.now(), retention)!);
  }

  #records(ids: readonly string[]): ResultRecord[] {
    if (ids.length === 0) return [];
    // One bound parameter whatever the count (SQLite in a DO caps bound parameters at 100).
    return this.#sql
      .exec<{ record: string }>(
        "SELECT record FROM records WHERE tool_use_id IN (SELECT value FROM json_each(?))",
        JSON.stringify(ids),
      )
      .toArray()
      .map((r) => JSON.parse(r.record) as ResultRecord);
  }

  load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): SessionLoad {
    const row = this.#row(ref);
    if (row === null)
      return { records: [], recall_declared: false, session_tool_stats: {}, gap_seconds: null };
    const times = this.#sql
      .exec<{ at: number }>("SELECT at FROM turns ORDER BY seq DESC LIMIT ?", GAP_WINDOW + 1)
      .toArray()
      .map((r) => r.at)
      .reverse();
    return {
      records: this.#records(toolUseIds),
      recall_declared: row.recall_declared === 1,
      session_tool_stats:
        toolNames.length === 0 ? {} : toolStatsOf(this.#allRecords(), this.#recalls(), toolNames),
      gap_seconds: medianGap(times),
      idle_seconds: idleSince(times, Date.now()),
    };
  }

  #allRecords(): ResultRecord[] {
    return this.#sql
      .exec<{ record: string }>("SELECT record FROM records ORDER BY rowid")
      .toArray()
      .map((r) => JSON.parse(r.record) as ResultRecord);
  }

  #recalls(): Map<string, number> {
    return new Map(
      this.#sql
        .exec<{ mem_id: string; count: number }>(
          "SELECT mem_id, count FROM recalls ORDER BY mem_id",
        )
        .toArray()
        .map((r) => [r.mem_id, r.count]),
    );
  }

  async commit(ref: SessionRef, commit: SessionCommit): Promise<SessionCommitResult> {
    const now = Date.now();
    this.#tables(true); // outside the transaction: a rollback must not leave #ready true without the tables
    const result = this.ctx.storage.transactionSync(() => {
      const row = this.#touch(ref, now);
      const existing = new Map(
        this.#records(commit.records.map((r) => r.tool_use_id)).map((r) => [r.tool_use_id, r]),
      );
      const { insert, standing } = applyCommit(existing, commit.records);
      for (const r of insert)
        this.#sql.exec(
          "INSERT INTO records (tool_use_id, mem_id, record) VALUES (?, ?, ?)",
          r.tool_use_id,
          r.mem_id,
          JSON.stringify(r),
        );
      const due = indexDue(now, row.last_indexed);
      this.#sql.exec(
        "UPDATE session SET calls = calls + 1, recall_declared = max(recall_declared, ?), last_indexed = ? WHERE id = 1",
        commit.recall_declared ? 1 : 0,
        due ? now : row.last_indexed,
      );
      const seq = this.#sql
        .exec<{ seq: number }>(
          "INSERT INTO turns (log, at) VALUES (?, ?) RETURNING seq",
          JSON.stringify(commit.log),
          now,
        )
        .one().seq;
      this.#sql.exec(
        "DELETE FROM turns WHERE seq <= (SELECT max(seq) FROM turns) - ?",
        TURN_LOG_LIMIT,
      );
      if (commit.decisions !== undefined) {
        this.#sql.exec(
          "INSERT INTO last_turn (id, turn) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET turn = excluded.turn",
          JSON.stringify(lastTurnOf(commit.log, commit.decisions, now)),
        );
      }
      return { records: standing, index_due: due, offloads: offloadsOf(insert), turn_seq: seq };
    });
    await this.#schedule();
    return result;
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    this.#tables(true);
    const tool = this.ctx.storage.transactionSync(() => {
      this.#touch(ref, Date.now());
      this.#sql.exec(
        "INSERT INTO recalls (mem_id, count) VALUES (?, 1) ON CONFLICT (mem_id) DO UPDATE SET count = count + 1",
        memId,
      );
      // The model read this back answering the latest logged turn's prompt.
      this.#sql.exec(
        "UPDATE turns SET recalls = recalls + 1 WHERE seq = (SELECT max(seq) FROM turns)",
      );
      const named = this.#sql
        .exec<{ record: string }>("SELECT record FROM records WHERE mem_id = ? LIMIT 1", memId)
        .toArray()[0];
      const record = named === undefined ? null : (JSON.parse(named.record) as ResultRecord);
      return record !== null && record.action === "offloaded" ? record.tool_name : null;
    });
    await this.#schedule();
    return tool;
  }

  describe(ref: SessionRef): SessionDetail | null {
    const row = this.#row(ref);
    if (row === null) return null;
    const recalls = this.#recalls();
    const records = this.#allRecords();
    return {
      tenant: row.tenant,
      session: row.session,
      calls: row.calls,
      recall_declared: row.recall_declared === 1,
      recalls: [...recalls.values()].reduce((n, c) => n + c, 0),
      tool_stats: toolStatsOf(records, recalls),
      records,
      turns: this.#turns(),
      config: JSON.parse(row.config) as OffloadConfigPatch,
      created_at: row.created_at,
      last_active: row.last_active,
      recalls_by_mem_id: Object.fromEntries(recalls),
    };
  }

  #turns(): LoggedTurn[] {
    return this.#sql
      .exec<{ log: string; at: number; recalls: number }>(
        "SELECT log, at, recalls FROM turns ORDER BY seq",
      )
      .toArray()
      .map((r) => loggedTurn(JSON.parse(r.log) as TurnLog, r.at, r.recalls));
  }

  report(ref: SessionRef, options: { turns?: boolean } = {}): SessionReportData | null {
    const row = this.#row(ref);
    if (row === null) return null;
    const recalls = this.#recalls();
    const turns = this.#turns();
    const last = this.#sql
      .exec<{ turn: string }>("SELECT turn FROM last_turn WHERE id = 1")
      .toArray()[0];
    return {
      tenant: row.tenant,
      session: row.session,
      created_at: row.created_at,
      last_active: row.last_active,
      calls: row.calls,
      recall_declared: row.recall_declared === 1,
      config: JSON.parse(row.config) as OffloadConfigPatch,
      // Only the action and mem_id of each record: the stubs stay in SQLite.
      records: recordCounts(
        this.#sql
          .exec<{ action: ResultRecord["action"]; mem_id: string | null }>(
            "SELECT json_extract(record, '$.action') AS action, mem_id FROM records",
          )
          .toArray(),
        recalls,
      ),
      recalls: [...recalls.values()].reduce((n, c) => n + c, 0),
      totals: totalsOf(turns),
      latest: latestOf(turns),
      turns: options.turns === false ? [] : turns,
      last_turn: last === undefined ? null : (JSON.parse(last.turn) as LastTurn),
    };
  }

  getConfig(ref: SessionRef): OffloadConfigPatch {
    const row = this.#row(ref);
    return row === null ? {} : (JSON.parse(row.config) as OffloadConfigPatch);
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    this.#tables(true);
    this.ctx.storage.transactionSync(() => {
      this.#touch(ref, Date.now());
      this.#sql.exec("UPDATE session SET config = ? WHERE id = 1", JSON.stringify(patch));
    });
    await this.#schedule();
  }

  /** Forget everything; returns the mem_ids the records named, for the caller to clean the index. */
  proxyState(ref: SessionRef): ProxyState {
    const row = this.#row(ref);
    if (row === null) return { config: {}, memos: [] };
    const memos = this.#sql
      .exec<{ memo: string }>("SELECT memo FROM memos ORDER BY seq")
      .toArray()
      .map((r) => JSON.parse(r.memo) as ProxyMemo);
    return { config: JSON.parse(row.config) as OffloadConfigPatch, memos };
  }

  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    this.#tables(true);
    this.ctx.storage.transactionSync(() => {
      this.#touch(ref, Date.now());
      if (turn.turn_seq !== null) {
        const line = this.#sql
          .exec<{ log: string }>("SELECT log FROM turns WHERE seq = ?", turn.turn_seq)
          .toArray()[0];
        if (line !== undefined) {
          const note: ProxyTurnNote = {
            hops: turn.note.hops,
            recalls: turn.note.recalls,
            exhausted: turn.note.exhausted,
          };
          this.#sql.exec(
            "UPDATE turns SET log = ? WHERE seq = ?",
            JSON.stringify({ ...(JSON.parse(line.log) as TurnLog), proxy: note }),
            turn.turn_seq,
          );
        }
      }
      for (const memo of turn.memos)
        this.#sql.exec("INSERT INTO memos (memo) VALUES (?)", JSON.stringify(memo));
      if (turn.memos.length > 0)
        this.#sql.exec(
          "DELETE FROM memos WHERE seq <= (SELECT max(seq) FROM memos) - ?",
          MEMO_LIMIT,
        );
    });
    await this.#schedule();
  }

  async destroy(ref: SessionRef): Promise<string[]> {
    const row = this.#row(ref);
    const named = row === null ? [] : this.#memIds();
    await this.#wipe();
    return named;
  }

  #memIds(): string[] {
    return this.#sql
      .exec<{ mem_id: string }>("SELECT DISTINCT mem_id FROM records WHERE mem_id IS NOT NULL")
      .toArray()
      .map((r) => r.mem_id);
  }

  async #wipe(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.#ready = false;
  }

  override async alarm(): Promise<void> {
    const row = this.#row();
    if (row === null) return void (await this.#wipe());
    const retention = this.#retention();
    if (!isExpired(Date.now(), row.last_active, retention)) {
      const at = expiresAt(row.last_active, retention);
      if (at !== null) await this.ctx.storage.setAlarm(at);
      return;
    }
    const ref = { tenant: row.tenant, session: row.session };
    // No turn may interleave with the purge; if it throws, nothing local is lost and the alarm is retried.
    await this.ctx.blockConcurrencyWhile(async () => {
      await purgeBodies(
        ref,
        this.#memIds(),
        new R2Ledger(this.env.LEDGER),
        new KvIndex(this.env.INDEX, { ttlSeconds: indexTtlSeconds(retention) }),
      );
      await this.#wipe();
    });
  }
}

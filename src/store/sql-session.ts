/**
 * The session state in SQL: one class for every SQL host (the SessionDO's SQLite, a Cloudflare
 * Agent's own SQLite with its prefix, node:sqlite, Postgres), over the port of sql.ts. Every table
 * is keyed by tenant and session, so a database may hold any number of sessions (a SessionDO holds
 * one). Each method is one transaction:
 *
 * - a session's row holds its lifecycle (generation, purge, tombstone, the last seq issued), which
 *   outlives a purge, and its live state (config, counts, the latest turn's decisions, its own
 *   calibration); a writer reads it first, locked where the engine locks rows (`Dialect.lock`), so
 *   concurrent turns of one session, in one process or several, write one after the other;
 * - first writer wins by constraint: a record is inserted `ON CONFLICT DO NOTHING`, then the
 *   records that stand are read back;
 * - a turn's log line gets the row's next seq and is inserted under the key (tenant, session,
 *   seq): a seq is issued once, and what a turn's finish brings (the proxy's note, the provider's
 *   usage, the calibration it teaches) is in the same transaction as the line, or in its own;
 * - the session's statistics (offloads and recalls per tool) and calibration are its own, kept as
 *   they happen; the tenant's aggregate is another port's (TenantLearning);
 * - the row marks when the session's length was counted for the tenant (`ended_at`,
 *   session-lengths.ts): `end` counts a session once, `ended` lists those idle long enough.
 *
 * Tables are created by the first write only: reading a session nobody wrote leaves nothing behind.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { Calibration } from "../core/calibration.ts";
import type { ToolStats, TurnAsk } from "../core/ports.ts";
import {
  memoAnchors,
  type ProxyMemo,
  type ResultRecord,
  type SessionRef,
  type TurnLog,
} from "../core/types.ts";
import {
  admitted,
  earliest,
  endPurge,
  FRESH_LIFECYCLE,
  isGone,
  type Lifecycle,
  leaseOf,
  ORPHAN_DELAY_MS,
  orphansOf,
  PURGE_GRACE_MS,
  refusalOf,
  startPurge,
  sweepAt,
  TURN_LEASE_MS,
  type TurnLease,
} from "./lifecycle.ts";
import type {
  RecordsBatch,
  RecordsResult,
  SessionCommit,
  SessionCommitResult,
  SessionDetail,
  SessionFinish,
  SessionStart,
  SessionState,
} from "./ports.ts";
import {
  type LastTurn,
  type LoggedTurn,
  lastTurnOf,
  loggedTurn,
  recallTotal,
  reportData,
  type SessionReportData,
} from "./report.ts";
import { SESSION_END_MS } from "./session-lengths.ts";
import { type Dialect, SQLITE, type SqlPort, SqlTables, type SqlTx } from "./sql.ts";
import {
  activityResolution,
  DEFAULT_RETENTION_SECONDS,
  emptyStart,
  expiresAt,
  GAP_WINDOW,
  idleSince,
  indexDue,
  MEMO_LIMIT,
  medianGap,
  offloadsOf,
  RPC_BUDGET_BYTES,
  TURN_LOG_LIMIT,
} from "./state.ts";
import {
  findTurn,
  finishedLine,
  learnUsage,
  type TurnKey,
  type UsageOutcome,
  withUsage,
} from "./usage.ts";

export interface SqlSessionOptions {
  /** Every table's name starts with it (default `eo_`): the tables can live beside others. */
  prefix?: string;
  dialect?: Dialect;
  now?: () => number;
  /** Idle sessions expire this long after their last activity (0: never); default 7 days. */
  retentionSeconds?: number;
}

/** Ids (or names) per statement: a Durable Object's SQLite binds at most 100 parameters. */
const CHUNK = 90;
const KEY = "tenant = ? AND session = ?";

/** The tables, by what they hold; `prefix` names them. */
function tablesOf(prefix: string) {
  return {
    sessions: `${prefix}sessions`,
    records: `${prefix}records`,
    turns: `${prefix}turns`,
    recalls: `${prefix}recalls`,
    tools: `${prefix}tools`,
    memos: `${prefix}memos`,
    anchors: `${prefix}memo_anchors`,
    orphans: `${prefix}orphans`,
  };
}

type Tables = ReturnType<typeof tablesOf>;

/** The DDL, in order (every statement `IF NOT EXISTS`: applying it again changes nothing). */
export function sessionSchema(prefix = "eo_", dialect: Dialect = SQLITE): string[] {
  const t = tablesOf(prefix);
  const s = "tenant TEXT NOT NULL, session TEXT NOT NULL";
  const table = (name: string, columns: string, key: string) =>
    `CREATE TABLE IF NOT EXISTS ${name} (${s}, ${columns}, PRIMARY KEY (tenant, session${key}))${dialect.table}`;
  return [
    // The lifecycle (outlives a purge), then the live session (created_at NULL: none).
    table(
      t.sessions,
      `epoch BIGINT NOT NULL DEFAULT 0, purging_since BIGINT, tombstone_at BIGINT,
       last_begin BIGINT, last_seq BIGINT NOT NULL DEFAULT 0,
       created_at BIGINT, last_active BIGINT NOT NULL DEFAULT 0, calls BIGINT NOT NULL DEFAULT 0,
       recall_declared BIGINT NOT NULL DEFAULT 0, config TEXT NOT NULL DEFAULT '{}',
       last_indexed BIGINT, last_turn TEXT, calibration TEXT NOT NULL DEFAULT '{}', ended_at BIGINT`,
      "",
    ),
    table(
      t.records,
      "tool_use_id TEXT NOT NULL, n BIGINT NOT NULL, tool_name TEXT NOT NULL, action TEXT NOT NULL, mem_id TEXT, record TEXT NOT NULL",
      ", tool_use_id",
    ),
    table(
      t.turns,
      "seq BIGINT NOT NULL, turn BIGINT NOT NULL, at BIGINT NOT NULL, recalls BIGINT NOT NULL DEFAULT 0, log TEXT NOT NULL",
      ", seq",
    ),
    table(t.recalls, "mem_id TEXT NOT NULL, count BIGINT NOT NULL", ", mem_id"),
    table(
      t.tools,
      "tool TEXT NOT NULL, offloaded BIGINT NOT NULL DEFAULT 0, recalls BIGINT NOT NULL DEFAULT 0",
      ", tool",
    ),
    table(t.memos, "seq BIGINT NOT NULL, memo TEXT NOT NULL", ", seq"),
    table(t.anchors, "anchor TEXT NOT NULL, seq BIGINT NOT NULL", ", anchor, seq"),
    // Bodies a refused commit wrote, noted for deletion; deleted_at once gone (kept a lease long).
    table(t.orphans, "mem_id TEXT NOT NULL, deleted_at BIGINT", ", mem_id"),
  ];
}

/** A session's row as read (numbers as numbers, whatever the driver returns for BIGINT). */
interface Row {
  life: Lifecycle;
  last_seq: number;
  /** Null: no live session (never written, or purged). */
  created_at: number | null;
  last_active: number;
  calls: number;
  recall_declared: boolean;
  config: string;
  last_indexed: number | null;
  last_turn: string | null;
  calibration: string;
  /** When the session's length was counted (session-lengths.ts), null before. */
  ended_at: number | null;
}

const ROW_COLUMNS =
  "epoch, purging_since, tombstone_at, last_begin, last_seq, created_at, last_active, calls, recall_declared, config, last_indexed, last_turn, calibration, ended_at";

const num = (v: unknown): number => Number(v);
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function rowOf(r: Record<string, unknown>): Row {
  return {
    life: {
      epoch: num(r.epoch),
      purging_since: numOrNull(r.purging_since),
      tombstone_at: numOrNull(r.tombstone_at),
      last_begin: numOrNull(r.last_begin),
    },
    last_seq: num(r.last_seq),
    created_at: numOrNull(r.created_at),
    last_active: num(r.last_active),
    calls: num(r.calls),
    recall_declared: num(r.recall_declared) === 1,
    config: String(r.config),
    last_indexed: numOrNull(r.last_indexed),
    last_turn: r.last_turn === null || r.last_turn === undefined ? null : String(r.last_turn),
    calibration: String(r.calibration),
    ended_at: numOrNull(r.ended_at),
  };
}

/** A row with a live session. */
type LiveRow = Row & { created_at: number };
const live = (row: Row | null): row is LiveRow => row !== null && row.created_at !== null;
/** A live session with calls whose length is still to be counted when it ends. */
const counts = (row: Row | null): row is LiveRow =>
  live(row) && row.calls > 0 && row.ended_at === null;

/** `?, ?, …` for a chunk. */
const marks = (n: number) => Array.from({ length: n }, () => "?").join(", ");

/** Splits `items` into statement-sized chunks. */
function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/** What the SessionDO's alarm decides from, read in one go. */
export interface AlarmState {
  life: Lifecycle;
  /** The live session's last activity, null when there is none. */
  last_active: number | null;
  /** Bodies noted for deletion and not yet deleted, and the oldest deletion still remembered. */
  orphans: { pending: number; oldest_deleted: number | null };
  /** When the live session ends if it stays idle (its length not counted yet), else null. */
  end_at: number | null;
}

/** When the alarm must fire next for what `state` holds, null when nothing is due. */
export function alarmDue(state: AlarmState, retentionSeconds: number, now: number): number | null {
  const { life } = state;
  return earliest(
    state.last_active === null ? null : expiresAt(state.last_active, retentionSeconds),
    state.end_at,
    life.purging_since === null ? null : life.purging_since + PURGE_GRACE_MS,
    state.last_active === null ? sweepAt(life) : null,
    state.orphans.pending > 0 ? now + ORPHAN_DELAY_MS : null,
    state.orphans.oldest_deleted === null ? null : state.orphans.oldest_deleted + TURN_LEASE_MS,
  );
}

/** The session state in a SQL database: every SQL host runs this class (see above). */
export class SqlSessionState implements SessionState {
  readonly #sql: SqlPort;
  readonly #t: Tables;
  readonly #tables: SqlTables;
  readonly #dialect: Dialect;
  readonly #now: () => number;
  readonly retentionSeconds: number;

  constructor(sql: SqlPort, options: SqlSessionOptions = {}) {
    this.#sql = sql;
    const prefix = options.prefix ?? "eo_";
    this.#t = tablesOf(prefix);
    this.#dialect = options.dialect ?? SQLITE;
    this.#tables = new SqlTables(sql, this.#t.sessions, sessionSchema(prefix, this.#dialect));
    this.#now = options.now ?? Date.now;
    this.retentionSeconds = options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS;
  }

  /** The host wiped its storage (a Durable Object's `deleteAll`): the next write creates tables. */
  forget(): void {
    this.#tables.forget();
  }

  async #row(tx: SqlTx, ref: SessionRef, lock = false): Promise<Row | null> {
    const rows = await tx.all(
      `SELECT ${ROW_COLUMNS} FROM ${this.#t.sessions} WHERE ${KEY}${lock ? this.#dialect.lock : ""}`,
      ref.tenant,
      ref.session,
    );
    return rows[0] === undefined ? null : rowOf(rows[0]);
  }

  /** The session's row for a write, locked, created (not live: a lifecycle only) when absent. */
  async #rowForWrite(tx: SqlTx, ref: SessionRef): Promise<Row> {
    const row = await this.#row(tx, ref, true);
    if (row !== null) return row;
    await tx.all(
      `INSERT INTO ${this.#t.sessions} (tenant, session) VALUES (?, ?) ON CONFLICT (tenant, session) DO NOTHING`,
      ref.tenant,
      ref.session,
    );
    return (await this.#row(tx, ref, true))!;
  }

  /** The session is written: live from now (if it was not), active now. */
  async #touch(tx: SqlTx, ref: SessionRef, now: number, calibration?: string | null) {
    await tx.all(
      `UPDATE ${this.#t.sessions} SET last_active = ?, created_at = coalesce(created_at, ?), calibration = coalesce(?, calibration) WHERE ${KEY}`,
      now,
      now,
      calibration ?? null,
      ref.tenant,
      ref.session,
    );
  }

  async begin(ref: SessionRef, ask: TurnAsk): Promise<SessionStart> {
    const now = this.#now();
    if (!(await this.#tables.ready(false))) return emptyStart(ask, leaseOf(FRESH_LIFECYCLE, now));
    return this.#sql.transaction(async (tx) => {
      const row = await this.#row(tx, ref);
      const life = row?.life ?? FRESH_LIFECYCLE;
      // The turn's commit moves last_active; a begin only does when a long turn could otherwise
      // outlast the retention it has left. On a tombstone, a begin the sweep must wait for.
      if (live(row) && now - row.last_active >= activityResolution(this.retentionSeconds))
        await tx.all(
          `UPDATE ${this.#t.sessions} SET last_active = ? WHERE ${KEY}`,
          now,
          ref.tenant,
          ref.session,
        );
      else if (row !== null && !live(row) && life.tombstone_at !== null)
        await tx.all(
          `UPDATE ${this.#t.sessions} SET last_begin = ? WHERE ${KEY}`,
          now,
          ref.tenant,
          ref.session,
        );
      const lease = leaseOf(life, now);
      if (!live(row)) return emptyStart(ask, lease);
      const memos = await this.#anchored(tx, ref, ask.anchors ?? []);
      const ids = [...ask.ids, ...memos.flatMap((m) => m.calls.map((c) => c.id))];
      const { records, answered } = await this.#recordsWithin(tx, ref, ids);
      const times = (
        await tx.all<{ at: unknown }>(
          `SELECT at FROM ${this.#t.turns} WHERE ${KEY} ORDER BY seq DESC LIMIT ?`,
          ref.tenant,
          ref.session,
          GAP_WINDOW + 1,
        )
      )
        .map((r) => num(r.at))
        .reverse();
      return {
        config: JSON.parse(row.config) as OffloadConfigPatch,
        records,
        answered,
        recall_declared: row.recall_declared,
        memos,
        session_tool_stats: await this.#toolStats(tx, ref, ask.names),
        calibrations: JSON.parse(row.calibration) as Record<string, Calibration>,
        gap_seconds: medianGap(times),
        idle_seconds: idleSince(times, now),
        lease,
      };
    });
  }

  async records(
    ref: SessionRef,
    ids: readonly string[],
  ): Promise<{ records: ResultRecord[]; answered: number }> {
    if (!(await this.#tables.ready(false))) return { records: [], answered: ids.length };
    return this.#sql.transaction((tx) => this.#recordsWithin(tx, ref, ids));
  }

  /** The records of `ids` in their order, until their JSON reaches the call's budget. */
  async #recordsWithin(
    tx: SqlTx,
    ref: SessionRef,
    ids: readonly string[],
  ): Promise<{ records: ResultRecord[]; answered: number }> {
    const records: ResultRecord[] = [];
    let used = 0;
    let at = 0;
    for (const chunk of chunks(ids)) {
      const found = new Map(
        (await this.#recordRows(tx, ref, chunk)).map((r) => [r.tool_use_id, r.record]),
      );
      for (const [i, id] of chunk.entries()) {
        const text = found.get(id);
        if (text === undefined) continue;
        if (used + text.length > RPC_BUDGET_BYTES && records.length > 0)
          return { records, answered: at + i };
        used += text.length;
        records.push(JSON.parse(text) as ResultRecord);
      }
      at += chunk.length;
    }
    return { records, answered: ids.length };
  }

  #recordRows(
    tx: SqlTx,
    ref: SessionRef,
    chunk: readonly string[],
  ): Promise<{ tool_use_id: string; record: string }[]> {
    return tx.all(
      `SELECT tool_use_id, record FROM ${this.#t.records} WHERE ${KEY} AND tool_use_id IN (${marks(chunk.length)})`,
      ref.tenant,
      ref.session,
      ...chunk,
    );
  }

  async #toolStats(
    tx: SqlTx,
    ref: SessionRef,
    names: readonly string[],
  ): Promise<Record<string, ToolStats>> {
    const out: Record<string, ToolStats> = {};
    for (const chunk of chunks([...new Set(names)]))
      for (const r of await tx.all<{ tool: string; offloaded: unknown; recalls: unknown }>(
        `SELECT tool, offloaded, recalls FROM ${this.#t.tools} WHERE ${KEY} AND tool IN (${marks(chunk.length)})`,
        ref.tenant,
        ref.session,
        ...chunk,
      ))
        out[r.tool] = { offloaded: num(r.offloaded), recalls: num(r.recalls) };
    return out;
  }

  /** The memos anchored on one of `anchors`, oldest first. */
  async #anchored(tx: SqlTx, ref: SessionRef, anchors: readonly string[]): Promise<ProxyMemo[]> {
    const found = new Map<number, string>();
    for (const chunk of chunks([...new Set(anchors)]))
      for (const r of await tx.all<{ seq: unknown; memo: string }>(
        `SELECT m.seq AS seq, m.memo AS memo FROM ${this.#t.anchors} a JOIN ${this.#t.memos} m
           ON m.tenant = a.tenant AND m.session = a.session AND m.seq = a.seq
         WHERE a.tenant = ? AND a.session = ? AND a.anchor IN (${marks(chunk.length)})`,
        ref.tenant,
        ref.session,
        ...chunk,
      ))
        found.set(num(r.seq), r.memo);
    return [...found.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([, memo]) => JSON.parse(memo) as ProxyMemo);
  }

  /**
   * The records that may stand under `lease` (null when the commit is refused: its bodies are
   * noted for deletion), all but those naming a body noted for deletion.
   */
  async #admit(
    tx: SqlTx,
    ref: SessionRef,
    row: Row,
    records: readonly ResultRecord[],
    lease: TurnLease | null,
    now: number,
  ): Promise<{ ok: ResultRecord[] } | { refused: "deleted" | "expired" }> {
    const refused = refusalOf(lease, row.life, now);
    if (refused !== null) {
      const named = new Set<string>();
      for (const chunk of chunks(records.flatMap((r) => (r.mem_id === null ? [] : [r.mem_id]))))
        for (const r of await tx.all<{ mem_id: string }>(
          `SELECT DISTINCT mem_id FROM ${this.#t.records} WHERE ${KEY} AND mem_id IN (${marks(chunk.length)})`,
          ref.tenant,
          ref.session,
          ...chunk,
        ))
          named.add(r.mem_id);
      for (const memId of orphansOf(records, (m) => named.has(m)))
        await tx.all(
          `INSERT INTO ${this.#t.orphans} (tenant, session, mem_id, deleted_at) VALUES (?, ?, ?, NULL) ON CONFLICT (tenant, session, mem_id) DO UPDATE SET deleted_at = NULL`,
          ref.tenant,
          ref.session,
          memId,
        );
      return { refused };
    }
    if (records.length === 0) return { ok: [] };
    const orphans = new Map(
      (
        await tx.all<{ mem_id: string; deleted_at: unknown }>(
          `SELECT mem_id, deleted_at FROM ${this.#t.orphans} WHERE ${KEY}`,
          ref.tenant,
          ref.session,
        )
      ).map((r) => [r.mem_id, { deleted_at: numOrNull(r.deleted_at) }]),
    );
    return {
      ok: orphans.size === 0 ? [...records] : admitted(records, (m) => orphans.get(m), lease!),
    };
  }

  /** Inserts what is new (first writer wins, by the key), then reads back what stands. */
  async #insert(
    tx: SqlTx,
    ref: SessionRef,
    records: readonly ResultRecord[],
  ): Promise<{ standing: ResultRecord[]; offloads: Record<string, number> }> {
    if (records.length === 0) return { standing: [], offloads: {} };
    const inserted: ResultRecord[] = [];
    // Records are listed in the order they were first decided (`n`).
    let n = num(
      (
        await tx.all<{ n: unknown }>(
          `SELECT coalesce(max(n), 0) AS n FROM ${this.#t.records} WHERE ${KEY}`,
          ref.tenant,
          ref.session,
        )
      )[0]?.n ?? 0,
    );
    for (const r of records) {
      const rows = await tx.all(
        `INSERT INTO ${this.#t.records} (tenant, session, tool_use_id, n, tool_name, action, mem_id, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, session, tool_use_id) DO NOTHING RETURNING tool_use_id`,
        ref.tenant,
        ref.session,
        r.tool_use_id,
        n + 1,
        r.tool_name,
        r.action,
        r.mem_id,
        JSON.stringify(r),
      );
      if (rows.length > 0) {
        inserted.push(r);
        n++;
      }
    }
    const stands = new Map<string, ResultRecord>();
    for (const chunk of chunks([...new Set(records.map((r) => r.tool_use_id))]))
      for (const r of await this.#recordRows(tx, ref, chunk))
        stands.set(r.tool_use_id, JSON.parse(r.record) as ResultRecord);
    const offloads = offloadsOf(inserted);
    for (const [tool, n] of Object.entries(offloads))
      await tx.all(
        `INSERT INTO ${this.#t.tools} (tenant, session, tool, offloaded, recalls) VALUES (?, ?, ?, ?, 0) ON CONFLICT (tenant, session, tool) DO UPDATE SET offloaded = ${this.#t.tools}.offloaded + excluded.offloaded`,
        ref.tenant,
        ref.session,
        tool,
        n,
      );
    return { standing: records.flatMap((r) => stands.get(r.tool_use_id) ?? []), offloads };
  }

  async addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult> {
    await this.#tables.ready(true);
    return this.#sql.transaction(async (tx) => {
      const now = this.#now();
      const row = await this.#rowForWrite(tx, ref);
      const admit = await this.#admit(tx, ref, row, batch.records, batch.lease, now);
      if ("refused" in admit) return { records: [], offloads: {}, refused: admit.refused };
      const { standing, offloads } = await this.#insert(tx, ref, admit.ok);
      await this.#touch(tx, ref, now);
      return { records: standing, offloads };
    });
  }

  async commit(ref: SessionRef, commit: SessionCommit): Promise<SessionCommitResult> {
    await this.#tables.ready(true);
    return this.#sql.transaction(async (tx) => {
      const now = this.#now();
      const row = await this.#rowForWrite(tx, ref);
      const admit = await this.#admit(tx, ref, row, commit.records, commit.lease, now);
      if ("refused" in admit)
        return { records: [], seq: 0, index_due: false, offloads: {}, refused: admit.refused };
      const { standing, offloads } = await this.#insert(tx, ref, admit.ok);
      const seq = row.last_seq + 1;
      const due = indexDue(now, row.last_indexed);
      let log = commit.log;
      let calibration: string | null = null;
      if (commit.finish !== undefined) {
        const done = finishedLine(seq, log, commit.finish, calibrationsOf(row));
        log = done.log;
        if (done.calibrations !== null) calibration = JSON.stringify(done.calibrations);
      }
      const last =
        commit.decisions === undefined
          ? null
          : JSON.stringify(lastTurnOf(commit.log, commit.decisions, now, commit.decisions_total));
      // One write of the session's row per turn (rows written are what a turn costs most): the seq,
      // the counts, the activity, the decisions and the calibration at once; a commit also clears a
      // tombstone (the session is alive again).
      await tx.all(
        `UPDATE ${this.#t.sessions} SET last_seq = ?, calls = calls + 1, last_active = ?,
           created_at = coalesce(created_at, ?),
           recall_declared = CASE WHEN ? = 1 THEN 1 ELSE recall_declared END, last_indexed = ?,
           tombstone_at = NULL, last_begin = NULL, last_turn = coalesce(?, last_turn),
           calibration = coalesce(?, calibration)
         WHERE ${KEY}`,
        seq,
        now,
        now,
        commit.recall_declared ? 1 : 0,
        due ? now : row.last_indexed,
        last,
        calibration,
        ref.tenant,
        ref.session,
      );
      await tx.all(
        `INSERT INTO ${this.#t.turns} (tenant, session, seq, turn, at, recalls, log) VALUES (?, ?, ?, ?, ?, 0, ?)`,
        ref.tenant,
        ref.session,
        seq,
        log.turn,
        now,
        JSON.stringify(log),
      );
      if (seq > TURN_LOG_LIMIT)
        await tx.all(
          `DELETE FROM ${this.#t.turns} WHERE ${KEY} AND seq <= ?`,
          ref.tenant,
          ref.session,
          seq - TURN_LOG_LIMIT,
        );
      if (commit.finish?.memos !== undefined && commit.finish.memos.length > 0)
        await this.#keepMemos(tx, ref, commit.finish.memos);
      return { records: standing, seq, index_due: due, offloads };
    });
  }

  async finish(ref: SessionRef, seq: number | null, finish: SessionFinish): Promise<void> {
    const memos = finish.memos ?? [];
    if (!(await this.#tables.ready(memos.length > 0))) return;
    await this.#sql.transaction(async (tx) => {
      const now = this.#now();
      const row = await this.#row(tx, ref, true);
      // Deleted while the provider answered: the session stays gone.
      if (!live(row) && isGone(row?.life ?? FRESH_LIFECYCLE)) return;
      if (row === null) await this.#rowForWrite(tx, ref);
      let calibration: string | null = null;
      if (seq !== null && row !== null) {
        const line = (
          await tx.all<{ log: string }>(
            `SELECT log FROM ${this.#t.turns} WHERE ${KEY} AND seq = ?`,
            ref.tenant,
            ref.session,
            seq,
          )
        )[0];
        if (line !== undefined) {
          const done = finishedLine(
            seq,
            JSON.parse(line.log) as TurnLog,
            finish,
            calibrationsOf(row),
          );
          await tx.all(
            `UPDATE ${this.#t.turns} SET log = ? WHERE ${KEY} AND seq = ?`,
            JSON.stringify(done.log),
            ref.tenant,
            ref.session,
            seq,
          );
          if (done.calibrations !== null) calibration = JSON.stringify(done.calibrations);
        }
      }
      await this.#touch(tx, ref, now, calibration);
      if (memos.length > 0) await this.#keepMemos(tx, ref, memos);
    });
  }

  /** The memos, after the session's others, with their anchors; the oldest beyond MEMO_LIMIT go. */
  async #keepMemos(tx: SqlTx, ref: SessionRef, memos: readonly ProxyMemo[]): Promise<void> {
    const t = this.#t;
    const top = (
      await tx.all<{ seq: unknown }>(
        `SELECT coalesce(max(seq), 0) AS seq FROM ${t.memos} WHERE ${KEY}`,
        ref.tenant,
        ref.session,
      )
    )[0];
    let seq = num(top?.seq ?? 0);
    for (const memo of memos) {
      seq++;
      await tx.all(
        `INSERT INTO ${t.memos} (tenant, session, seq, memo) VALUES (?, ?, ?, ?)`,
        ref.tenant,
        ref.session,
        seq,
        JSON.stringify(memo),
      );
      for (const anchor of new Set(memoAnchors(memo)))
        await tx.all(
          `INSERT INTO ${t.anchors} (tenant, session, anchor, seq) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, session, anchor, seq) DO NOTHING`,
          ref.tenant,
          ref.session,
          anchor,
          seq,
        );
    }
    if (seq > MEMO_LIMIT)
      for (const table of [t.memos, t.anchors])
        await tx.all(
          `DELETE FROM ${table} WHERE ${KEY} AND seq <= ?`,
          ref.tenant,
          ref.session,
          seq - MEMO_LIMIT,
        );
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    await this.#tables.ready(true);
    return this.#sql.transaction(async (tx) => {
      const t = this.#t;
      const row = await this.#rowForWrite(tx, ref);
      // A recall of a session that is gone (deleted while the body was read) brings nothing back.
      if (!live(row) && isGone(row.life)) return null;
      await this.#touch(tx, ref, this.#now());
      await tx.all(
        `INSERT INTO ${t.recalls} (tenant, session, mem_id, count) VALUES (?, ?, ?, 1) ON CONFLICT (tenant, session, mem_id) DO UPDATE SET count = ${t.recalls}.count + 1`,
        ref.tenant,
        ref.session,
        memId,
      );
      // The model read this back answering the latest logged turn's prompt.
      await tx.all(
        `UPDATE ${t.turns} SET recalls = recalls + 1 WHERE ${KEY} AND seq = (SELECT max(seq) FROM ${t.turns} WHERE ${KEY})`,
        ref.tenant,
        ref.session,
        ref.tenant,
        ref.session,
      );
      const tool =
        (
          await tx.all<{ tool_name: string }>(
            `SELECT tool_name FROM ${t.records} WHERE ${KEY} AND mem_id = ? AND action = 'offloaded' LIMIT 1`,
            ref.tenant,
            ref.session,
            memId,
          )
        )[0]?.tool_name ?? null;
      if (tool !== null)
        await tx.all(
          `INSERT INTO ${t.tools} (tenant, session, tool, offloaded, recalls) VALUES (?, ?, ?, 0, 1) ON CONFLICT (tenant, session, tool) DO UPDATE SET recalls = ${t.tools}.recalls + 1`,
          ref.tenant,
          ref.session,
          tool,
        );
      return tool;
    });
  }

  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    if (!(await this.#tables.ready(false))) return null;
    return this.#sql.transaction(async (tx) => {
      const row = await this.#row(tx, ref, true);
      if (!live(row)) return null;
      const lines = (
        await tx.all<{ seq: unknown; log: string }>(
          "seq" in key
            ? `SELECT seq, log FROM ${this.#t.turns} WHERE ${KEY} AND seq = ?`
            : `SELECT seq, log FROM ${this.#t.turns} WHERE ${KEY} AND turn = ? ORDER BY seq DESC LIMIT 1`,
          ref.tenant,
          ref.session,
          "seq" in key ? key.seq : key.turn,
        )
      ).map((r) => ({ seq: num(r.seq), log: JSON.parse(r.log) as TurnLog }));
      const line = findTurn(lines, key);
      if (line === undefined) return { status: "unknown_turn" };
      const next = withUsage(line.seq, line.log, usage);
      if (next.log === null) return next.outcome;
      await tx.all(
        `UPDATE ${this.#t.turns} SET log = ? WHERE ${KEY} AND seq = ?`,
        JSON.stringify(next.log),
        ref.tenant,
        ref.session,
        line.seq,
      );
      if (next.outcome.status === "recorded" && next.outcome.estimate !== null) {
        const learned = learnUsage(calibrationsOf(row), usage, next.outcome.estimate);
        await tx.all(
          `UPDATE ${this.#t.sessions} SET calibration = ? WHERE ${KEY}`,
          JSON.stringify(learned.calibrations),
          ref.tenant,
          ref.session,
        );
      }
      return next.outcome;
    });
  }

  /** A read of a live session (null when there is none), in one transaction. */
  async #read<T>(
    ref: SessionRef,
    read: (tx: SqlTx, row: LiveRow) => Promise<T>,
  ): Promise<T | null> {
    if (!(await this.#tables.ready(false))) return null;
    return this.#sql.transaction(async (tx) => {
      const row = await this.#row(tx, ref);
      return live(row) ? read(tx, row) : null;
    });
  }

  async #turns(tx: SqlTx, ref: SessionRef): Promise<LoggedTurn[]> {
    return (
      await tx.all<{ log: string; at: unknown; recalls: unknown }>(
        `SELECT log, at, recalls FROM ${this.#t.turns} WHERE ${KEY} ORDER BY seq`,
        ref.tenant,
        ref.session,
      )
    ).map((r) => loggedTurn(JSON.parse(r.log) as TurnLog, num(r.at), num(r.recalls)));
  }

  async #recalls(tx: SqlTx, ref: SessionRef): Promise<Map<string, number>> {
    return new Map(
      (
        await tx.all<{ mem_id: string; count: unknown }>(
          `SELECT mem_id, count FROM ${this.#t.recalls} WHERE ${KEY} ORDER BY mem_id`,
          ref.tenant,
          ref.session,
        )
      ).map((r) => [r.mem_id, num(r.count)]),
    );
  }

  describe(ref: SessionRef): Promise<SessionDetail | null> {
    return this.#read(ref, async (tx, row) => {
      const recalls = await this.#recalls(tx, ref);
      const tools = await tx.all<{ tool: string; offloaded: unknown; recalls: unknown }>(
        `SELECT tool, offloaded, recalls FROM ${this.#t.tools} WHERE ${KEY} AND offloaded > 0 ORDER BY tool`,
        ref.tenant,
        ref.session,
      );
      const records = await tx.all<{ record: string }>(
        `SELECT record FROM ${this.#t.records} WHERE ${KEY} ORDER BY n`,
        ref.tenant,
        ref.session,
      );
      return {
        tenant: ref.tenant,
        session: ref.session,
        calls: row.calls,
        recall_declared: row.recall_declared,
        recalls: recallTotal(recalls),
        tool_stats: Object.fromEntries(
          tools.map((r) => [r.tool, { offloaded: num(r.offloaded), recalls: num(r.recalls) }]),
        ),
        records: records.map((r) => JSON.parse(r.record) as ResultRecord),
        turns: await this.#turns(tx, ref),
        config: JSON.parse(row.config) as OffloadConfigPatch,
        created_at: row.created_at,
        last_active: row.last_active,
        recalls_by_mem_id: Object.fromEntries(recalls),
      };
    });
  }

  report(ref: SessionRef, options: { turns?: boolean } = {}): Promise<SessionReportData | null> {
    return this.#read(ref, async (tx, row) =>
      reportData(
        {
          ref,
          created_at: row.created_at,
          last_active: row.last_active,
          calls: row.calls,
          recall_declared: row.recall_declared,
          config: JSON.parse(row.config) as OffloadConfigPatch,
          // Only the id, action and mem_id of each record: the stubs stay where they are.
          records: await tx.all<{
            tool_use_id: string;
            action: ResultRecord["action"];
            mem_id: string | null;
          }>(
            `SELECT tool_use_id, action, mem_id FROM ${this.#t.records} WHERE ${KEY}`,
            ref.tenant,
            ref.session,
          ),
          recalls: await this.#recalls(tx, ref),
          turns: await this.#turns(tx, ref),
          last_turn: row.last_turn === null ? null : (JSON.parse(row.last_turn) as LastTurn),
        },
        options,
      ),
    );
  }

  async getConfig(ref: SessionRef): Promise<OffloadConfigPatch> {
    return (
      (await this.#read(ref, async (_tx, row) => JSON.parse(row.config) as OffloadConfigPatch)) ??
      {}
    );
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    await this.#tables.ready(true);
    await this.#sql.transaction(async (tx) => {
      await this.#rowForWrite(tx, ref);
      await this.#touch(tx, ref, this.#now());
      await tx.all(
        `UPDATE ${this.#t.sessions} SET config = ? WHERE ${KEY}`,
        JSON.stringify(patch),
        ref.tenant,
        ref.session,
      );
    });
  }

  async destroy(ref: SessionRef): Promise<string[]> {
    await this.#tables.ready(true);
    return this.#sql.transaction(async (tx) => {
      const t = this.#t;
      const row = await this.#rowForWrite(tx, ref);
      const named = live(row)
        ? (
            await tx.all<{ mem_id: string }>(
              `SELECT DISTINCT mem_id FROM ${t.records} WHERE ${KEY} AND mem_id IS NOT NULL ORDER BY mem_id`,
              ref.tenant,
              ref.session,
            )
          ).map((r) => r.mem_id)
        : [];
      // The generation moves before anything is deleted: no turn that began earlier can commit.
      const life = startPurge(row.life, this.#now());
      await tx.all(
        `UPDATE ${t.sessions} SET epoch = ?, purging_since = ?, tombstone_at = NULL, last_begin = NULL,
           created_at = NULL, last_active = 0, calls = 0, recall_declared = 0, config = '{}',
           last_indexed = NULL, last_turn = NULL, calibration = '{}', ended_at = NULL
         WHERE ${KEY}`,
        life.epoch,
        life.purging_since,
        ref.tenant,
        ref.session,
      );
      for (const table of [t.records, t.turns, t.recalls, t.tools, t.memos, t.anchors, t.orphans])
        await tx.all(`DELETE FROM ${table} WHERE ${KEY}`, ref.tenant, ref.session);
      return named;
    });
  }

  async purged(ref: SessionRef): Promise<void> {
    if (!(await this.#tables.ready(false))) return;
    await this.#sql.transaction(async (tx) => {
      const row = await this.#row(tx, ref, true);
      if (row === null || row.life.purging_since === null) return;
      const life = endPurge(row.life, this.#now());
      await tx.all(
        `UPDATE ${this.#t.sessions} SET purging_since = NULL, tombstone_at = ? WHERE ${KEY}`,
        life.tombstone_at,
        ref.tenant,
        ref.session,
      );
    });
  }

  async end(ref: SessionRef, options: { idle?: boolean } = {}): Promise<number | null> {
    if (!(await this.#tables.ready(false))) return null;
    return this.#sql.transaction(async (tx) => {
      const now = this.#now();
      const row = await this.#row(tx, ref, true);
      if (!counts(row) || (options.idle === true && now - row.last_active < SESSION_END_MS))
        return null;
      await tx.all(
        `UPDATE ${this.#t.sessions} SET ended_at = ? WHERE ${KEY}`,
        now,
        ref.tenant,
        ref.session,
      );
      return row.calls;
    });
  }

  /**
   * Sessions idle for SESSION_END_MS whose length is not counted yet: what a host that holds many
   * sessions ends on its own schedule (`ComposedStore.endSession`), at most `limit`.
   */
  async ended(limit = 100): Promise<SessionRef[]> {
    if (!(await this.#tables.ready(false))) return [];
    const idleSince = this.#now() - SESSION_END_MS;
    return this.#sql.transaction(async (tx) =>
      (
        await tx.all<{ tenant: string; session: string }>(
          `SELECT tenant, session FROM ${this.#t.sessions}
           WHERE created_at IS NOT NULL AND calls > 0 AND ended_at IS NULL AND last_active <= ?
           ORDER BY tenant, session LIMIT ?`,
          idleSince,
          limit,
        )
      ).map((r) => ({ tenant: r.tenant, session: r.session })),
    );
  }

  /** The sessions this database holds a row of (a SessionDO: its one), at most `limit`. */
  async refs(limit = 100): Promise<SessionRef[]> {
    if (!(await this.#tables.ready(false))) return [];
    return this.#sql.transaction(async (tx) =>
      (
        await tx.all<{ tenant: string; session: string }>(
          `SELECT tenant, session FROM ${this.#t.sessions} ORDER BY tenant, session LIMIT ?`,
          limit,
        )
      ).map((r) => ({ tenant: r.tenant, session: r.session })),
    );
  }

  /** What a host's alarm decides from (null: the session has no row at all). */
  async alarmState(ref: SessionRef): Promise<AlarmState | null> {
    if (!(await this.#tables.ready(false))) return null;
    return this.#sql.transaction(async (tx) => {
      const row = await this.#row(tx, ref);
      if (row === null) return null;
      const o = (
        await tx.all<{ pending: unknown; oldest: unknown }>(
          `SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS pending, min(deleted_at) AS oldest FROM ${this.#t.orphans} WHERE ${KEY}`,
          ref.tenant,
          ref.session,
        )
      )[0];
      return {
        life: row.life,
        last_active: live(row) ? row.last_active : null,
        orphans: { pending: num(o?.pending ?? 0), oldest_deleted: numOrNull(o?.oldest) },
        end_at: counts(row) ? row.last_active + SESSION_END_MS : null,
      };
    });
  }

  /** Bodies noted for deletion and not yet deleted (at most `limit`). */
  async pendingOrphans(ref: SessionRef, limit = 1000): Promise<string[]> {
    if (!(await this.#tables.ready(false))) return [];
    return this.#sql.transaction(async (tx) =>
      (
        await tx.all<{ mem_id: string }>(
          `SELECT mem_id FROM ${this.#t.orphans} WHERE ${KEY} AND deleted_at IS NULL ORDER BY mem_id LIMIT ?`,
          ref.tenant,
          ref.session,
          limit,
        )
      ).map((r) => r.mem_id),
    );
  }

  /**
   * These bodies are gone: a record naming one is refused until a lease after now (a turn that
   * began before may have written it again); deletions older than a lease are forgotten.
   */
  async orphansDeleted(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    await this.#sql.transaction(async (tx) => {
      const now = this.#now();
      for (const chunk of chunks(memIds))
        await tx.all(
          `UPDATE ${this.#t.orphans} SET deleted_at = ? WHERE ${KEY} AND deleted_at IS NULL AND mem_id IN (${marks(chunk.length)})`,
          now,
          ref.tenant,
          ref.session,
          ...chunk,
        );
      await tx.all(
        `DELETE FROM ${this.#t.orphans} WHERE ${KEY} AND deleted_at IS NOT NULL AND deleted_at < ?`,
        ref.tenant,
        ref.session,
        now - TURN_LEASE_MS,
      );
    });
  }

  /**
   * Sessions with bodies noted for deletion, or with deletions older than a lease still remembered:
   * what a host that holds many sessions hands to `pendingOrphans` / `orphansDeleted` (at most
   * `limit`).
   */
  async orphaned(limit = 100): Promise<SessionRef[]> {
    if (!(await this.#tables.ready(false))) return [];
    const now = this.#now();
    return this.#sql.transaction(async (tx) =>
      (
        await tx.all<{ tenant: string; session: string }>(
          `SELECT DISTINCT tenant, session FROM ${this.#t.orphans}
           WHERE deleted_at IS NULL OR deleted_at < ? ORDER BY tenant, session LIMIT ?`,
          now - TURN_LEASE_MS,
          limit,
        )
      ).map((r) => ({ tenant: r.tenant, session: r.session })),
    );
  }

  /**
   * Sessions whose retention has run out (idle since `now − retention`), or whose purge was never
   * confirmed: what a host that holds many sessions purges on its own schedule (at most `limit`).
   */
  async expired(limit = 100): Promise<SessionRef[]> {
    if (!(await this.#tables.ready(false))) return [];
    const now = this.#now();
    // Retention off: no session is ever idle for too long (last_active is never negative).
    const idleSince = this.retentionSeconds === 0 ? -1 : now - this.retentionSeconds * 1000;
    return this.#sql.transaction(async (tx) =>
      (
        await tx.all<{ tenant: string; session: string }>(
          `SELECT tenant, session FROM ${this.#t.sessions}
           WHERE (created_at IS NOT NULL AND last_active <= ?) OR purging_since <= ?
           ORDER BY tenant, session LIMIT ?`,
          idleSince,
          now - PURGE_GRACE_MS,
          limit,
        )
      ).map((r) => ({ tenant: r.tenant, session: r.session })),
    );
  }
}

function calibrationsOf(row: Row): Record<string, Calibration> {
  return JSON.parse(row.calibration) as Record<string, Calibration>;
}

/**
 * The SessionDO's tables: created by the first write, migrated in place (columns added to tables an
 * earlier version created), and read back as the session's row, records, recalls, turn lines and
 * mem_ids. Only SQL here; the object (session-do.ts and its session-*.ts pieces) owns the
 * transactions, the alarm and the RPC surface.
 */
import type { ResultRecord, SessionRef, TurnLog } from "../core/types.ts";
import type { LoggedTurn } from "../store/ports.ts";
import { loggedTurn } from "./report.ts";
import { checkScope } from "./state.ts";

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
  // The latest turn's decisions with their gate breakdown (one row, replaced by each commit that
  // sends them).
  `CREATE TABLE IF NOT EXISTS last_turn (id INTEGER PRIMARY KEY CHECK (id = 1), turn TEXT NOT NULL)`,
  // What outlives a purge: the lifecycle (generation, purge, tombstone) and the tenant statistics'
  // copy and pending deltas, as keys and JSON values.
  `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  // Bodies a refused commit wrote, noted for deletion; deleted_at once gone (kept a lease long).
  `CREATE TABLE IF NOT EXISTS orphans (mem_id TEXT PRIMARY KEY, deleted_at INTEGER)`,
  `CREATE TABLE IF NOT EXISTS tenant_copy (tool TEXT PRIMARY KEY, offloaded INTEGER NOT NULL, recalls INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS tenant_pending (tool TEXT PRIMARY KEY, offloaded INTEGER NOT NULL, recalls INTEGER NOT NULL)`,
  // The tenant's calibration as this session holds it, and samples not yet sent (calibration-copy.ts).
  `CREATE TABLE IF NOT EXISTS tenant_calibration (model TEXT PRIMARY KEY, state TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS calibration_pending (seq INTEGER PRIMARY KEY AUTOINCREMENT, sample TEXT NOT NULL)`,
];

/** Ids looked up per statement. */
const LOOKUP_CHUNK = 1000;

/** The session's own tables: what a purge empties (meta, orphans and the statistics stay). */
const SESSION_TABLES = ["session", "records", "turns", "recalls", "memos", "last_turn", "orphans"];

/**
 * Columns added to tables that objects created by an earlier version already have. CREATE TABLE IF
 * NOT EXISTS leaves an existing table as it was, so each column is added when the table's
 * declaration lacks it.
 */
const ADDED_COLUMNS: { table: string; column: string; ddl: string }[] = [
  {
    table: "turns",
    column: "recalls",
    ddl: "ALTER TABLE turns ADD COLUMN recalls INTEGER NOT NULL DEFAULT 0",
  },
];

export type SessionRow = {
  tenant: string;
  session: string;
  recall_declared: number;
  calls: number;
  config: string;
  created_at: number;
  last_active: number;
  last_indexed: number | null;
};

export class SessionTables {
  readonly #storage: DurableObjectStorage;
  #ready = false;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
  }

  /** After the storage was wiped: the next write creates the tables again. */
  forget(): void {
    this.#ready = false;
  }

  /**
   * Tables are created by the first write only: reading a session nobody wrote (a compact call with
   * everything off asks for the session's config) must not leave storage behind, which no alarm
   * would ever clean up.
   */
  open(create: boolean): SqlStorage | null {
    const sql = this.#storage.sql;
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

  get sql(): SqlStorage {
    return this.open(true)!;
  }

  row(ref?: SessionRef): SessionRow | null {
    const sql = this.open(false);
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
  touch(ref: SessionRef, now: number): SessionRow {
    const row = this.ensure(ref, now);
    this.sql.exec("UPDATE session SET last_active = ? WHERE id = 1", now);
    return { ...row, last_active: now };
  }

  /** The session's row, created on its first write (the caller moves last_active itself). */
  ensure(ref: SessionRef, now: number): SessionRow {
    this.sql.exec(
      "INSERT INTO session (id, tenant, session, created_at, last_active) VALUES (1, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
      ref.tenant,
      ref.session,
      now,
      now,
    );
    return this.row(ref)!;
  }

  records(ids: readonly string[]): ResultRecord[] {
    if (ids.length === 0) return [];
    // One bound parameter whatever the count (SQLite in a DO caps bound parameters at 100).
    return this.sql
      .exec<{ record: string }>(
        "SELECT record FROM records WHERE tool_use_id IN (SELECT value FROM json_each(?))",
        JSON.stringify(ids),
      )
      .toArray()
      .map((r) => JSON.parse(r.record) as ResultRecord);
  }

  /**
   * The records of `ids` in their order, until their JSON reaches `budget` chars: `answered` says
   * how many ids were looked up (the caller asks again for the rest).
   */
  recordsWithin(
    ids: readonly string[],
    budget: number,
  ): { records: ResultRecord[]; answered: number } {
    const records: ResultRecord[] = [];
    let used = 0;
    for (let at = 0; at < ids.length; at += LOOKUP_CHUNK) {
      const chunk = ids.slice(at, at + LOOKUP_CHUNK);
      const found = new Map(
        this.sql
          .exec<{ tool_use_id: string; record: string }>(
            "SELECT tool_use_id, record FROM records WHERE tool_use_id IN (SELECT value FROM json_each(?))",
            JSON.stringify(chunk),
          )
          .toArray()
          .map((r) => [r.tool_use_id, r.record]),
      );
      for (let i = 0; i < chunk.length; i++) {
        const text = found.get(chunk[i]!);
        if (text === undefined) continue;
        if (used + text.length > budget && records.length > 0) return { records, answered: at + i };
        used += text.length;
        records.push(JSON.parse(text) as ResultRecord);
      }
    }
    return { records, answered: ids.length };
  }

  allRecords(): ResultRecord[] {
    return this.sql
      .exec<{ record: string }>("SELECT record FROM records ORDER BY rowid")
      .toArray()
      .map((r) => JSON.parse(r.record) as ResultRecord);
  }

  recalls(): Map<string, number> {
    return new Map(
      this.sql
        .exec<{ mem_id: string; count: number }>(
          "SELECT mem_id, count FROM recalls ORDER BY mem_id",
        )
        .toArray()
        .map((r) => [r.mem_id, r.count]),
    );
  }

  turns(): LoggedTurn[] {
    return this.sql
      .exec<{ log: string; at: number; recalls: number }>(
        "SELECT log, at, recalls FROM turns ORDER BY seq",
      )
      .toArray()
      .map((r) => loggedTurn(JSON.parse(r.log) as TurnLog, r.at, r.recalls));
  }

  /** A value of the meta table (JSON), or undefined; nothing is created by reading. */
  meta<T>(key: string): T | undefined {
    const sql = this.open(false);
    if (sql === null) return undefined;
    const row = sql
      .exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key)
      .toArray()[0];
    return row === undefined ? undefined : (JSON.parse(row.value) as T);
  }

  setMeta(key: string, value: unknown): void {
    if (value === undefined) this.sql.exec("DELETE FROM meta WHERE key = ?", key);
    else
      this.sql.exec(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        key,
        JSON.stringify(value),
      );
  }

  /** Empties the session's own tables (a purge): the meta table and the statistics stay. */
  clearSession(): void {
    const sql = this.open(false);
    if (sql === null) return;
    for (const table of SESSION_TABLES) sql.exec(`DELETE FROM ${table}`);
  }

  orphan(memId: string): { deleted_at: number | null } | undefined {
    const sql = this.open(false);
    if (sql === null) return undefined;
    return sql
      .exec<{ deleted_at: number | null }>("SELECT deleted_at FROM orphans WHERE mem_id = ?", memId)
      .toArray()[0];
  }

  /** Whether a record names this mem_id. */
  names(memId: string): boolean {
    const sql = this.open(false);
    if (sql === null) return false;
    return sql.exec("SELECT 1 FROM records WHERE mem_id = ? LIMIT 1", memId).toArray().length > 0;
  }

  memIds(): string[] {
    return this.sql
      .exec<{ mem_id: string }>("SELECT DISTINCT mem_id FROM records WHERE mem_id IS NOT NULL")
      .toArray()
      .map((r) => r.mem_id);
  }
}

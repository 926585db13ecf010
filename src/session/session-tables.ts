/**
 * The SessionDO's tables: created by the first write, migrated in place (columns added to tables an
 * earlier version created), and read back as the session's row, records, recalls, turn lines and
 * mem_ids. Only SQL here; the object (session-do.ts) owns the transactions, the alarm and the RPC
 * surface.
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
];

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
    this.sql.exec(
      "INSERT INTO session (id, tenant, session, created_at, last_active) VALUES (1, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
      ref.tenant,
      ref.session,
      now,
      now,
    );
    const row = this.row(ref)!;
    this.sql.exec("UPDATE session SET last_active = ? WHERE id = 1", now);
    return { ...row, last_active: now };
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

  memIds(): string[] {
    return this.sql
      .exec<{ mem_id: string }>("SELECT DISTINCT mem_id FROM records WHERE mem_id IS NOT NULL")
      .toArray()
      .map((r) => r.mem_id);
  }
}

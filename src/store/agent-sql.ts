/**
 * The SQLite tables edge-offload keeps inside another Durable Object (a Cloudflare Agent's own
 * storage), so an agent needs no second object. Every table is prefixed `eo_` and keyed by tenant
 * and session, beside the agent's own tables; nothing here ever wipes the object's storage or
 * touches its alarm (both are the agent's). The storage is typed by what is used of it, so this
 * file builds without the Workers types: `ctx.storage` of a SQLite-backed Durable Object fits.
 */

/** A SQL cursor, as `ctx.storage.sql.exec` returns it. */
export interface SqlRows<T> {
  toArray(): T[];
  one(): T;
}

export type SqlValue = string | number | null | ArrayBuffer;

/** What the adapters use of a SQLite-backed Durable Object's `ctx.storage`. */
export interface AgentStorage {
  readonly sql: {
    exec<T extends Record<string, SqlValue>>(query: string, ...bindings: unknown[]): SqlRows<T>;
  };
  transactionSync<T>(run: () => T): T;
}

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS eo_sessions (
    tenant TEXT NOT NULL, session TEXT NOT NULL,
    recall_declared INTEGER NOT NULL DEFAULT 0, calls INTEGER NOT NULL DEFAULT 0,
    config TEXT NOT NULL DEFAULT '{}', created_at INTEGER NOT NULL, last_active INTEGER NOT NULL,
    last_indexed INTEGER, last_turn TEXT, PRIMARY KEY (tenant, session))`,
  `CREATE TABLE IF NOT EXISTS eo_records (tenant TEXT NOT NULL, session TEXT NOT NULL,
    tool_use_id TEXT NOT NULL, mem_id TEXT, record TEXT NOT NULL,
    PRIMARY KEY (tenant, session, tool_use_id))`,
  `CREATE TABLE IF NOT EXISTS eo_turns (seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL, session TEXT NOT NULL, log TEXT NOT NULL, at INTEGER NOT NULL,
    recalls INTEGER NOT NULL DEFAULT 0)`,
  "CREATE INDEX IF NOT EXISTS eo_turns_by_session ON eo_turns (tenant, session, seq)",
  `CREATE TABLE IF NOT EXISTS eo_recalls (tenant TEXT NOT NULL, session TEXT NOT NULL,
    mem_id TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (tenant, session, mem_id))`,
  `CREATE TABLE IF NOT EXISTS eo_memos (seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL, session TEXT NOT NULL, memo TEXT NOT NULL)`,
  "CREATE INDEX IF NOT EXISTS eo_memos_by_session ON eo_memos (tenant, session, seq)",
  // A body's metadata, and where its text is: `chunks` rows of eo_body_chunks, or the bucket.
  `CREATE TABLE IF NOT EXISTS eo_bodies (tenant TEXT NOT NULL, session TEXT NOT NULL,
    mem_id TEXT NOT NULL, meta TEXT NOT NULL, place TEXT NOT NULL, chunks INTEGER NOT NULL,
    PRIMARY KEY (tenant, session, mem_id))`,
  `CREATE TABLE IF NOT EXISTS eo_body_chunks (tenant TEXT NOT NULL, session TEXT NOT NULL,
    mem_id TEXT NOT NULL, n INTEGER NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (tenant, session, mem_id, n))`,
  `CREATE TABLE IF NOT EXISTS eo_index_bodies (tenant TEXT NOT NULL, session TEXT NOT NULL,
    mem_id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (tenant, session, mem_id))`,
  `CREATE TABLE IF NOT EXISTS eo_index_sessions (tenant TEXT NOT NULL, session TEXT NOT NULL,
    created_at INTEGER NOT NULL, PRIMARY KEY (tenant, session))`,
  `CREATE TABLE IF NOT EXISTS eo_tool_stats (tenant TEXT NOT NULL, tool TEXT NOT NULL,
    offloaded INTEGER NOT NULL DEFAULT 0, recalls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, tool))`,
];

const ready = new WeakMap<object, true>();

/** The storage's SQL, with edge-offload's tables created on first use (once per storage object). */
export function sqlOf(storage: AgentStorage): AgentStorage["sql"] {
  if (!ready.has(storage)) {
    for (const statement of SCHEMA) storage.sql.exec(statement);
    ready.set(storage, true);
  }
  return storage.sql;
}

/**
 * A list of ids as one bound parameter (`IN (SELECT value FROM json_each(?))`): SQLite in a Durable
 * Object takes at most 100 bound parameters.
 */
export function idList(ids: readonly string[]): string {
  return JSON.stringify(ids);
}

/**
 * The SQL port the session state and the tenant's learning run over, and its hosts. The port is
 * asynchronous and transactional, so one class serves engines that answer at once (SQLite in a
 * Durable Object, node:sqlite, bun:sqlite) and engines that answer over a connection (Postgres):
 *
 * - `transaction(fn)`: fn's statements commit together or not at all, and the transactions of one
 *   port never interleave (an engine shared by several processes, like Postgres, gives the rest by
 *   its own locks: the session state locks a session's row before it writes);
 * - `all(sql, ...params)`: one statement with `?` placeholders (a host whose engine wants others,
 *   `$1`…, translates them; the shared SQL never has a `?` inside a literal), its rows as plain
 *   objects;
 * - `hasTable(name)`: whether the tables exist, so a read of a session nobody wrote leaves no storage
 *   behind.
 *
 * The shared SQL is what SQLite and Postgres both accept (`INSERT … ON CONFLICT`, `RETURNING`, no
 * JSON functions, no two-argument `max`); what differs is a `Dialect`.
 */

export type SqlValue = string | number | null;

/** What differs between the engines the shared SQL runs on. */
export interface Dialect {
  /** Appended to each CREATE TABLE. */
  table: string;
  /** Appended to the read of a session's row before a write. */
  lock: string;
}

/** SQLite: each table is its primary key (a row written is one row, no index row beside it). */
export const SQLITE: Dialect = { table: " WITHOUT ROWID", lock: "" };
/** Postgres: a writer locks the session's row (concurrent turns of other processes wait for it). */
export const POSTGRES: Dialect = { table: "", lock: " FOR UPDATE" };

export interface SqlTx {
  all<T = Record<string, SqlValue>>(sql: string, ...params: SqlValue[]): Promise<T[]>;
}

export interface SqlPort {
  transaction<T>(fn: (tx: SqlTx) => Promise<T>): Promise<T>;
  hasTable(name: string): Promise<boolean>;
}

/**
 * What the hosts use of a SQLite-backed Durable Object's `ctx.storage` (the SessionDO's, the
 * TenantDO's, a Cloudflare Agent's). Typed by what is used, so it builds without the Workers types.
 */
export interface DurableStorage {
  readonly sql: {
    exec(query: string, ...bindings: unknown[]): { toArray(): unknown[] };
  };
  transaction<T>(closure: () => Promise<T>): Promise<T>;
}

const HAS_TABLE = "SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = ?";

/**
 * A Durable Object's SQLite as the port. A transaction is `ctx.storage.transaction(closure)`: on a
 * SQLite-backed object every storage call made while the closure runs, `sql.exec` included, belongs
 * to it; it commits when the closure's promise resolves and rolls back when it rejects, across the
 * closure's awaits, and the object runs its transactions one at a time (docs/architecture.md says
 * why `transactionSync`, or the object's implicit write coalescing, would not do).
 */
export function durableSql(storage: DurableStorage): SqlPort {
  const tx: SqlTx = {
    all: async <T>(sql: string, ...params: SqlValue[]) =>
      storage.sql.exec(sql, ...params).toArray() as T[],
  };
  return {
    transaction: (fn) => storage.transaction(() => fn(tx)),
    hasTable: async (name) => storage.sql.exec(HAS_TABLE, name).toArray().length > 0,
  };
}

/**
 * A synchronous SQLite driver as the hosts use it: node:sqlite's `DatabaseSync`, bun:sqlite's
 * `Database`.
 */
export interface SyncSqlite {
  exec(sql: string): unknown;
  prepare(sql: string): { all(...params: SqlValue[]): unknown[] };
}

/** Prepared statements kept per connection (the shared SQL is a few dozen statements). */
const STATEMENTS_KEPT = 256;

/**
 * A synchronous SQLite connection as the port: one transaction at a time (`BEGIN IMMEDIATE`, so a
 * second process on the same file waits for the lock rather than failing half way), the next one
 * queued until it ends.
 */
export function syncSqliteSql(db: SyncSqlite): SqlPort {
  const statements = new Map<string, ReturnType<SyncSqlite["prepare"]>>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      if (statements.size >= STATEMENTS_KEPT) statements.clear();
      statements.set(sql, (statement = db.prepare(sql)));
    }
    return statement;
  };
  const tx: SqlTx = {
    all: async <T>(sql: string, ...params: SqlValue[]) => prepared(sql).all(...params) as T[],
  };
  let queue: Promise<unknown> = Promise.resolve();
  return {
    transaction<T>(fn: (tx: SqlTx) => Promise<T>): Promise<T> {
      const run = async (): Promise<T> => {
        db.exec("BEGIN IMMEDIATE");
        try {
          const out = await fn(tx);
          db.exec("COMMIT");
          return out;
        } catch (e) {
          db.exec("ROLLBACK");
          throw e;
        }
      };
      const next = queue.then(run, run);
      queue = next.catch(() => {});
      return next;
    },
    hasTable: async (name) => prepared(HAS_TABLE).all(name).length > 0,
  };
}

/**
 * A class's tables over a port, created by its first write only (`ready(true)`): a read of
 * something nobody wrote (`ready(false)` answers false) leaves no storage behind.
 */
export class SqlTables {
  readonly #sql: SqlPort;
  readonly #probe: string;
  readonly #ddl: readonly string[];
  #ready = false;

  /** `probe`: a table the DDL creates; `ddl`: statements that may run again (`IF NOT EXISTS`). */
  constructor(sql: SqlPort, probe: string, ddl: readonly string[]) {
    this.#sql = sql;
    this.#probe = probe;
    this.#ddl = ddl;
  }

  async ready(create: boolean): Promise<boolean> {
    if (this.#ready) return true;
    if (!(await this.#sql.hasTable(this.#probe))) {
      if (!create) return false;
      await this.#sql.transaction(async (tx) => {
        for (const statement of this.#ddl) await tx.all(statement);
      });
    }
    this.#ready = true;
    return true;
  }

  /** The host wiped its storage (a Durable Object's `deleteAll`): the next write creates them. */
  forget(): void {
    this.#ready = false;
  }
}

/**
 * `SqliteStore` (`edge-offload/sqlite`): everything in one SQLite file, for one host (the default
 * store of `edge-offload serve`). node:sqlite on Node 22.5+ and Deno, bun:sqlite under Bun; several
 * processes of one host may share the file (WAL, a busy timeout, `BEGIN IMMEDIATE`).
 */
import { SQLITE, type SyncSqlite, syncSqliteSql } from "./sql.ts";
import { SqlStore, type SqlStoreOptions } from "./sql-store.ts";

export interface SqliteStoreOptions extends SqlStoreOptions {
  /** How long a write waits for another process's lock on the file (ms, default 5,000). */
  busyTimeoutMs?: number | undefined;
}

/** A SQLite connection the store can close. */
type Connection = SyncSqlite & { close(): void };

/** node:sqlite, or bun:sqlite under Bun (whose `Database` has the same surface). */
async function openFile(file: string): Promise<Connection> {
  // Names in variables: a bundler for another runtime (a Worker) leaves them alone.
  if ((globalThis as { Bun?: unknown }).Bun !== undefined) {
    const bun = "bun:sqlite";
    const { Database } = (await import(/* @vite-ignore */ bun)) as {
      Database: new (file: string) => Connection;
    };
    return new Database(file);
  }
  const node = "node:sqlite";
  const { DatabaseSync } = (await import(/* @vite-ignore */ node)) as {
    DatabaseSync: new (file: string) => Connection;
  };
  return new DatabaseSync(file);
}

/**
 * The store in one SQLite file.
 *
 * @example
 * import { SqliteStore } from "edge-offload/sqlite";
 * const store = await SqliteStore.open("edge-offload.db");
 * const fetch = offloadFetch({ store, session: "chat-42", secret: process.env.OFFLOAD_SECRET! });
 */
export class SqliteStore extends SqlStore {
  readonly #db: Connection;

  /** Over an open connection (node:sqlite's `DatabaseSync`, bun:sqlite's `Database`). */
  constructor(db: Connection, options: SqliteStoreOptions = {}) {
    // WAL lets readers of other processes go on during a write; NORMAL syncs at checkpoints, which
    // WAL keeps safe across a crash of the process (a power loss may lose the last turns).
    db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5000))}`);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    super(syncSqliteSql(db), SQLITE, options);
    this.#db = db;
  }

  /** Opens (or creates) the file; `:memory:` for a store that lives as long as the process. */
  static async open(file: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    return new SqliteStore(await openFile(file), options);
  }

  override async close(): Promise<void> {
    await super.close();
    this.#db.close();
  }
}

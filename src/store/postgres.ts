/**
 * `PostgresStore` (`edge-offload/postgres`): session state, index, the tenant's learning, bodies and
 * cached extractions in Postgres (bodies over a size optionally in an S3-compatible bucket, through
 * `BodyBucket`), for any number of processes: a writer locks its session's row (`FOR UPDATE`), so
 * concurrent turns of one session, from any process, commit one after the other and the second
 * renders the first's records; a body is durable in the database before a record names it, so any
 * process recalls it.
 *
 * The schema is the store's: `connect` creates and migrates it under an advisory lock (processes
 * starting at once wait for each other), recording its version in `<prefix>schema`.
 */
import { OffloadError } from "../errors.ts";
import { POSTGRES, type SqlPort, type SqlTx, type SqlValue } from "./sql.ts";
import { extractionSchema } from "./sql-extractions.ts";
import { indexSchema } from "./sql-index.ts";
import { ledgerSchema } from "./sql-ledger.ts";
import { sessionSchema } from "./sql-session.ts";
import { SqlStore, type SqlStoreOptions } from "./sql-store.ts";
import { tenantSchema } from "./sql-tenant.ts";

/** What the store uses of a `pg` client (typed by use, so the store builds without `pg`'s types). */
export interface PgClient {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  release(error?: Error | boolean): void;
}

/** What the store uses of a `pg` `Pool`. */
export interface PgPool {
  connect(): Promise<PgClient>;
  end(): Promise<void>;
}

/** Deadlock and serialization failures: the transaction ran no part of its work; it runs again. */
const RETRIED = new Set(["40P01", "40001"]);
const ATTEMPTS = 3;

/** `?` placeholders as `$1`, `$2`… (the shared SQL never has a `?` inside a literal). */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/**
 * A `pg` pool as the SQL port: each transaction on a client of its own (BEGIN … COMMIT, ROLLBACK on
 * a failure), run again on a deadlock; transactions of the port run at once, ordered by the rows
 * they lock.
 */
export function postgresSql(pool: PgPool): SqlPort {
  const texts = new Map<string, string>();
  const text = (sql: string) => {
    let t = texts.get(sql);
    if (t === undefined) {
      if (texts.size >= 512) texts.clear();
      texts.set(sql, (t = numbered(sql)));
    }
    return t;
  };
  const run = async <T>(fn: (tx: SqlTx) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
    } catch (e) {
      // A client whose connection failed is dropped from the pool rather than reused.
      client.release(true);
      throw e;
    }
    const tx: SqlTx = {
      all: async <R>(sql: string, ...params: SqlValue[]) =>
        (await client.query(text(sql), params)).rows as R[],
    };
    try {
      const out = await fn(tx);
      await client.query("COMMIT");
      client.release();
      return out;
    } catch (e) {
      try {
        await client.query("ROLLBACK");
        client.release();
      } catch {
        client.release(true);
      }
      throw e;
    }
  };
  return {
    async transaction<T>(fn: (tx: SqlTx) => Promise<T>): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        try {
          return await run(fn);
        } catch (e) {
          const code = (e as { code?: unknown }).code;
          if (attempt >= ATTEMPTS || typeof code !== "string" || !RETRIED.has(code)) throw e;
        }
      }
    },
    hasTable: async (name) =>
      run(
        async (tx) =>
          (await tx.all<{ x: unknown }>("SELECT to_regclass(?) IS NOT NULL AS x", name))[0]?.x ===
          true,
      ),
  };
}

/**
 * The schema's versions, in order: each step runs once, in the transaction that records it.
 * Version 1 is every class's tables, and the sweep's index of sessions by activity; version 2 the
 * extraction cache's table.
 */
function migrations(prefix: string): string[][] {
  return [
    [
      ...sessionSchema(prefix, POSTGRES),
      ...ledgerSchema(prefix, POSTGRES),
      ...indexSchema(prefix, POSTGRES),
      ...tenantSchema(prefix, POSTGRES),
      `CREATE INDEX IF NOT EXISTS ${prefix}sessions_active ON ${prefix}sessions (last_active) WHERE created_at IS NOT NULL`,
      `CREATE INDEX IF NOT EXISTS ${prefix}orphans_due ON ${prefix}orphans (tenant, session)`,
    ],
    extractionSchema(prefix),
  ];
}

/** The schema version this build writes. */
export const POSTGRES_SCHEMA_VERSION = migrations("eo_").length;

/** Creates or migrates the schema; returns the version it found. */
export async function migratePostgres(sql: SqlPort, prefix = "eo_"): Promise<number> {
  if (!/^[a-z_][a-z0-9_]*$/.test(prefix))
    throw new OffloadError("invalid_argument", "prefix must be lower-case letters, digits and _", {
      path: "prefix",
    });
  const steps = migrations(prefix);
  return sql.transaction(async (tx) => {
    // One migrator at a time, whatever the process: the others wait, then find the work done.
    await tx.all("SELECT pg_advisory_xact_lock(hashtext(?)) AS x", `edge-offload:${prefix}`);
    await tx.all(`CREATE TABLE IF NOT EXISTS ${prefix}schema (version BIGINT NOT NULL)`);
    const found = Number(
      (await tx.all<{ v: unknown }>(`SELECT max(version) AS v FROM ${prefix}schema`))[0]?.v ?? 0,
    );
    if (found > steps.length)
      throw new OffloadError(
        "internal",
        `the database's edge-offload schema is version ${found}, newer than this build's ${steps.length}: upgrade edge-offload`,
      );
    for (let v = found + 1; v <= steps.length; v++) {
      for (const statement of steps[v - 1]!) await tx.all(statement);
      await tx.all(`INSERT INTO ${prefix}schema (version) VALUES (?)`, v);
    }
    return found;
  });
}

export interface PostgresStoreOptions extends SqlStoreOptions {
  /** Connections of the pool `connect` makes from a URL (default 10). */
  maxConnections?: number | undefined;
}

/**
 * The store in Postgres (see above).
 *
 * @example
 * import { PostgresStore } from "edge-offload/postgres";
 * const store = await PostgresStore.connect(process.env.DATABASE_URL!);
 * const fetch = offloadFetch({ store, session: "chat-42", secret: process.env.OFFLOAD_SECRET! });
 */
export class PostgresStore extends SqlStore {
  readonly #pool: PgPool;
  readonly #owned: boolean;

  private constructor(pool: PgPool, owned: boolean, sql: SqlPort, options: SqlStoreOptions) {
    super(sql, POSTGRES, { cacheTenantLearning: true, ...options });
    this.#pool = pool;
    this.#owned = owned;
  }

  /**
   * Connects (a `postgres://` URL, with `pg` installed, or a `pg` Pool of the app's), then creates
   * or migrates the schema before it answers.
   */
  static async connect(
    target: string | PgPool,
    options: PostgresStoreOptions = {},
  ): Promise<PostgresStore> {
    const owned = typeof target === "string";
    const pool = owned ? await poolOf(target, options.maxConnections ?? 10) : target;
    const sql = postgresSql(pool);
    try {
      await migratePostgres(sql, options.prefix ?? "eo_");
    } catch (e) {
      if (owned) await pool.end().catch(() => {});
      throw e;
    }
    return new PostgresStore(pool, owned, sql, options);
  }

  /** Stops the sweep; ends the pool when the store made it. */
  override async close(): Promise<void> {
    await super.close();
    if (this.#owned) await this.#pool.end();
  }
}

async function poolOf(url: string, max: number): Promise<PgPool> {
  let pg: {
    Pool: new (
      config: Record<string, unknown>,
    ) => PgPool & { on(e: string, f: (e: Error) => void): void };
  };
  try {
    const name = "pg";
    const mod = (await import(/* @vite-ignore */ name)) as { default?: typeof pg } & typeof pg;
    pg = mod.default ?? mod;
  } catch {
    throw new OffloadError("internal", 'PostgresStore needs the "pg" package: npm install pg');
  }
  const pool = new pg.Pool({ connectionString: url, max });
  // An idle client's connection that drops is an event of the pool, not a crash of the process.
  pool.on("error", () => {});
  return pool;
}

/**
 * The extraction cache in SQL (SqliteStore, PostgresStore): one row per (tenant, key) in
 * `<prefix>extractions`, the outcome as JSON (extractions.ts), its size in bytes and when it was
 * written. Bounded three ways: a value over `maxValueBytes` is not stored; an entry older than the
 * lifetime (the store's retention) is not read, and the store's sweep deletes it (`expire`), as does
 * the tenant's next put; a tenant keeps `maxTenantEntries` entries and `maxTenantBytes` bytes at most,
 * the oldest deleted by the put that passes them (a put follows an extraction, which costs far more
 * than summing the tenant's sizes).
 *
 * Not in the Durable Object hosts (SessionDO, AgentStore): their SQLite holds at most 2 MB a row, so
 * values would have to be chunked as SqlLedger chunks bodies; the Worker keeps its cache in R2.
 */
import type { CachedExtraction, ExtractionCache } from "../core/ports.ts";
import {
  decodeExtraction,
  EXTRACTION_TENANT_DEFAULTS,
  EXTRACTION_VALUE_MAX_BYTES,
  encodeExtraction,
  extractionLifetime,
  type StoredExtractionOptions,
} from "./extractions.ts";
import { type SqlPort, SqlTables, type SqlTx } from "./sql.ts";

/** Rows one eviction reads at most (the next put goes on). */
const EVICT_BATCH = 500;
/** Keys one DELETE names at most (with the tenant, under a Durable Object's 100 bound parameters). */
const DELETE_CHUNK = 90;

/** The extraction cache's DDL (every statement `IF NOT EXISTS`). */
export function extractionSchema(prefix = "eo_"): string[] {
  // The same on both engines: a rowid table on SQLite (not the dialect's WITHOUT ROWID), as its rows
  // are large, which a WITHOUT ROWID table stores poorly; the value last, so sums of `bytes` never
  // read its overflow pages.
  return [
    `CREATE TABLE IF NOT EXISTS ${prefix}extractions (tenant TEXT NOT NULL, key TEXT NOT NULL,
      bytes BIGINT NOT NULL, created_at BIGINT NOT NULL, value TEXT NOT NULL,
      PRIMARY KEY (tenant, key))`,
    `CREATE INDEX IF NOT EXISTS ${prefix}extractions_age ON ${prefix}extractions (created_at)`,
    `CREATE INDEX IF NOT EXISTS ${prefix}extractions_tenant_age ON ${prefix}extractions (tenant, created_at)`,
  ];
}

export interface SqlExtractionOptions extends StoredExtractionOptions {
  prefix?: string | undefined;
  /** Entries a tenant keeps at most (default 10,000). */
  maxTenantEntries?: number | undefined;
  /** Bytes of values a tenant keeps at most (default 256 MiB). */
  maxTenantBytes?: number | undefined;
}

/** The tenant's extraction cache in a SQL database (see above). */
export class SqlExtractionCache implements ExtractionCache {
  readonly #sql: SqlPort;
  readonly #table: string;
  readonly #tables: SqlTables;
  readonly #now: () => number;
  readonly #lifetimeMs: number;
  readonly #maxValue: number;
  readonly #maxEntries: number;
  readonly #maxBytes: number;

  constructor(sql: SqlPort, options: SqlExtractionOptions = {}) {
    const prefix = options.prefix ?? "eo_";
    this.#sql = sql;
    this.#table = `${prefix}extractions`;
    this.#tables = new SqlTables(sql, this.#table, extractionSchema(prefix));
    this.#now = options.now ?? Date.now;
    this.#lifetimeMs = extractionLifetime(options.retentionSeconds) * 1000;
    this.#maxValue = options.maxValueBytes ?? EXTRACTION_VALUE_MAX_BYTES;
    this.#maxEntries = options.maxTenantEntries ?? EXTRACTION_TENANT_DEFAULTS.maxEntries;
    this.#maxBytes = options.maxTenantBytes ?? EXTRACTION_TENANT_DEFAULTS.maxBytes;
  }

  async getExtraction(tenant: string, key: string): Promise<CachedExtraction | null> {
    if (!(await this.#tables.ready(false))) return null;
    const rows = await this.#sql.transaction((tx) =>
      tx.all<{ value: unknown }>(
        `SELECT value FROM ${this.#table} WHERE tenant = ? AND key = ? AND created_at > ?`,
        tenant,
        key,
        this.#now() - this.#lifetimeMs,
      ),
    );
    return decodeExtraction(rows[0]?.value);
  }

  async putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void> {
    const stored = encodeExtraction(value, Math.min(this.#maxValue, this.#maxBytes));
    if (stored === null) return; // over the cap: the next turn extracts again
    await this.#tables.ready(true);
    const t = this.#table;
    await this.#sql.transaction(async (tx) => {
      await tx.all(
        `INSERT INTO ${t} (tenant, key, bytes, created_at, value) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (tenant, key) DO UPDATE SET bytes = excluded.bytes,
           created_at = excluded.created_at, value = excluded.value`,
        tenant,
        key,
        stored.bytes,
        this.#now(),
        stored.json,
      );
      await this.#evict(tx, tenant, key);
    });
  }

  /**
   * The tenant's entries past their lifetime deleted (so a host that never sweeps keeps none either),
   * then its oldest (never `kept`, just written) until it is within bounds.
   */
  async #evict(tx: SqlTx, tenant: string, kept: string): Promise<void> {
    const t = this.#table;
    await tx.all(
      `DELETE FROM ${t} WHERE tenant = ? AND created_at <= ?`,
      tenant,
      this.#now() - this.#lifetimeMs,
    );
    const [sum] = await tx.all<{ n: unknown; b: unknown }>(
      `SELECT count(*) AS n, coalesce(sum(bytes), 0) AS b FROM ${t} WHERE tenant = ?`,
      tenant,
    );
    let entries = Number(sum?.n ?? 0);
    let bytes = Number(sum?.b ?? 0);
    if (entries <= this.#maxEntries && bytes <= this.#maxBytes) return;
    const oldest = await tx.all<{ key: string; bytes: unknown }>(
      `SELECT key, bytes FROM ${t} WHERE tenant = ? AND key <> ? ORDER BY created_at, key LIMIT ?`,
      tenant,
      kept,
      EVICT_BATCH,
    );
    const gone: string[] = [];
    for (const row of oldest) {
      if (entries <= this.#maxEntries && bytes <= this.#maxBytes) break;
      gone.push(row.key);
      entries--;
      bytes -= Number(row.bytes);
    }
    for (let i = 0; i < gone.length; i += DELETE_CHUNK) {
      const chunk = gone.slice(i, i + DELETE_CHUNK);
      await tx.all(
        `DELETE FROM ${t} WHERE tenant = ? AND key IN (${chunk.map(() => "?").join(", ")})`,
        tenant,
        ...chunk,
      );
    }
  }

  /** Deletes up to `limit` entries past their lifetime, oldest first; how many (the store's sweep). */
  async expire(limit: number): Promise<number> {
    if (!(await this.#tables.ready(false))) return 0;
    const t = this.#table;
    const rows = await this.#sql.transaction((tx) =>
      tx.all(
        `DELETE FROM ${t} WHERE (tenant, key) IN (SELECT tenant, key FROM ${t} WHERE created_at <= ?
           ORDER BY created_at LIMIT ?) RETURNING 1 AS x`,
        this.#now() - this.#lifetimeMs,
        limit,
      ),
    );
    return rows.length;
  }
}

/**
 * The lookup index in SQL (a Cloudflare Agent's own SQLite, node:sqlite, Postgres), over the port
 * of sql.ts: mem_id → location and metadata, tenant → sessions. In the same database as the
 * session state it never lags; the composed store's rules (and the reports that list a tenant's
 * sessions) work as with KV.
 */
import { isSessionId } from "../core/session.ts";
import type { SessionRef } from "../core/types.ts";
import { badCursor, type IndexedBody, type IndexedSession, type IndexPort } from "./ports.ts";
import { type Dialect, SQLITE, type SqlPort, SqlTables } from "./sql.ts";

const KEY = "tenant = ? AND session = ?";
/** mem_ids per statement (a Durable Object's SQLite binds at most 100 parameters). */
const CHUNK = 90;

/** The index's DDL (every statement `IF NOT EXISTS`). */
export function indexSchema(prefix = "eo_", dialect: Dialect = SQLITE): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${prefix}index_bodies (tenant TEXT NOT NULL, session TEXT NOT NULL,
      mem_id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (tenant, session, mem_id))${dialect.table}`,
    `CREATE TABLE IF NOT EXISTS ${prefix}index_sessions (tenant TEXT NOT NULL, session TEXT NOT NULL,
      created_at BIGINT NOT NULL, PRIMARY KEY (tenant, session))${dialect.table}`,
  ];
}

/** The lookup index in a SQL database (see above). */
export class SqlIndex implements IndexPort {
  readonly #sql: SqlPort;
  readonly #p: string;
  readonly #tables: SqlTables;

  constructor(sql: SqlPort, options: { prefix?: string; dialect?: Dialect } = {}) {
    this.#sql = sql;
    this.#p = options.prefix ?? "eo_";
    this.#tables = new SqlTables(
      sql,
      `${this.#p}index_bodies`,
      indexSchema(this.#p, options.dialect ?? SQLITE),
    );
  }

  async putBody(ref: SessionRef, entry: IndexedBody): Promise<void> {
    await this.#tables.ready(true);
    await this.#sql.transaction((tx) =>
      tx.all(
        `INSERT INTO ${this.#p}index_bodies (tenant, session, mem_id, entry) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, session, mem_id) DO UPDATE SET entry = excluded.entry`,
        ref.tenant,
        ref.session,
        entry.meta.mem_id,
        JSON.stringify(entry),
      ),
    );
  }

  async getBody(ref: SessionRef, memId: string): Promise<IndexedBody | null> {
    if (!(await this.#tables.ready(false))) return null;
    const rows = await this.#sql.transaction((tx) =>
      tx.all<{ entry: string }>(
        `SELECT entry FROM ${this.#p}index_bodies WHERE ${KEY} AND mem_id = ?`,
        ref.tenant,
        ref.session,
        memId,
      ),
    );
    return rows[0] === undefined ? null : (JSON.parse(rows[0].entry) as IndexedBody);
  }

  async putSession(ref: SessionRef, entry: IndexedSession): Promise<void> {
    await this.#tables.ready(true);
    await this.#sql.transaction((tx) =>
      tx.all(
        `INSERT INTO ${this.#p}index_sessions (tenant, session, created_at) VALUES (?, ?, ?) ON CONFLICT (tenant, session) DO UPDATE SET created_at = excluded.created_at`,
        ref.tenant,
        entry.session,
        entry.created_at,
      ),
    );
  }

  async listSessions(
    tenant: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<{ sessions: IndexedSession[]; cursor: string | null }> {
    const limit = options.limit ?? 1000;
    // The cursor is the last session listed: the next page starts after it. Anything that is not a
    // session id was never returned by a listing.
    if (options.cursor !== undefined && !isSessionId(options.cursor)) throw badCursor();
    if (!(await this.#tables.ready(false))) return { sessions: [], cursor: null };
    const rows = await this.#sql.transaction((tx) =>
      tx.all<{ session: string; created_at: unknown }>(
        `SELECT session, created_at FROM ${this.#p}index_sessions WHERE tenant = ? AND session > ? ORDER BY session LIMIT ?`,
        tenant,
        options.cursor ?? "",
        limit + 1,
      ),
    );
    const page = rows.slice(0, limit);
    return {
      sessions: page.map((r) => ({ session: r.session, created_at: Number(r.created_at) })),
      cursor: rows.length > limit ? page[page.length - 1]!.session : null,
    };
  }

  async deleteBodies(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    if (memIds.length === 0 || !(await this.#tables.ready(false))) return;
    await this.#sql.transaction(async (tx) => {
      for (let i = 0; i < memIds.length; i += CHUNK) {
        const chunk = memIds.slice(i, i + CHUNK);
        await tx.all(
          `DELETE FROM ${this.#p}index_bodies WHERE ${KEY} AND mem_id IN (${chunk.map(() => "?").join(", ")})`,
          ref.tenant,
          ref.session,
          ...chunk,
        );
      }
    });
  }

  async deleteSession(ref: SessionRef): Promise<void> {
    if (!(await this.#tables.ready(false))) return;
    await this.#sql.transaction(async (tx) => {
      await tx.all(`DELETE FROM ${this.#p}index_sessions WHERE ${KEY}`, ref.tenant, ref.session);
      await tx.all(`DELETE FROM ${this.#p}index_bodies WHERE ${KEY}`, ref.tenant, ref.session);
    });
  }
}

/**
 * The ledger in SQL (a Cloudflare Agent's own SQLite, node:sqlite, Postgres), over the port of
 * sql.ts. A Durable Object's SQLite takes rows of at most 2 MB, so a body is stored as its JSON
 * string literal (exact, lone surrogates included) in chunks of at most CHUNK_CHARS characters:
 * even a chunk of nothing but escapes stays under 1 MB. With a bucket (R2, an S3-compatible one), a
 * body over `inlineMaxChars` goes there instead (one object at the ledger key) and only its
 * metadata stays in SQL, so large exports do not fill the database.
 */
import type { BodyMeta, SessionRef, StoredBody } from "../core/types.ts";
import { ledgerKey } from "./keys.ts";
import type { BodyLedgerPort } from "./ports.ts";
import { type Dialect, SQLITE, type SqlPort, SqlTables, type SqlTx } from "./sql.ts";

/** At most 6 UTF-8 bytes per character once JSON-escaped (`\u0000`): 160K characters < 1 MB. */
export const CHUNK_CHARS = 160_000;

/** What the ledger uses of a bucket (an R2 binding fits). */
export interface BodyBucket {
  put(key: string, value: string): Promise<unknown>;
  get(key: string): Promise<{ text(): Promise<string> } | null>;
  delete(keys: string[]): Promise<void>;
}

export interface SqlLedgerOptions {
  /** Every table's name starts with it (default `eo_`). */
  prefix?: string;
  dialect?: Dialect;
  /** Where bodies over `inlineMaxChars` go; without one, every body is chunked into SQL. */
  bucket?: BodyBucket | undefined;
  /** Bodies up to this many characters stay in SQL when a bucket is given (default CHUNK_CHARS). */
  inlineMaxChars?: number | undefined;
}

const KEY = "tenant = ? AND session = ?";
/** mem_ids per statement (a Durable Object's SQLite binds at most 100 parameters). */
const CHUNK = 90;

/** The ledger's DDL (every statement `IF NOT EXISTS`). */
export function ledgerSchema(prefix = "eo_", dialect: Dialect = SQLITE): string[] {
  return [
    // A body's metadata, and where its text is: `chunks` rows of the chunk table, or the bucket.
    `CREATE TABLE IF NOT EXISTS ${prefix}bodies (tenant TEXT NOT NULL, session TEXT NOT NULL,
      mem_id TEXT NOT NULL, meta TEXT NOT NULL, place TEXT NOT NULL, chunks BIGINT NOT NULL,
      PRIMARY KEY (tenant, session, mem_id))${dialect.table}`,
    `CREATE TABLE IF NOT EXISTS ${prefix}body_chunks (tenant TEXT NOT NULL, session TEXT NOT NULL,
      mem_id TEXT NOT NULL, n BIGINT NOT NULL, text TEXT NOT NULL,
      PRIMARY KEY (tenant, session, mem_id, n))${dialect.table}`,
  ];
}

/** `text` cut into pieces of at most `size` characters, never between the halves of a surrogate pair. */
function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let at = 0; at < text.length; ) {
    let end = Math.min(text.length, at + size);
    const code = text.charCodeAt(end - 1);
    if (end < text.length && code >= 0xd800 && code <= 0xdbff) end--;
    out.push(text.slice(at, end));
    at = end;
  }
  return out.length === 0 ? [""] : out;
}

const marks = (n: number) => Array.from({ length: n }, () => "?").join(", ");

/** Bodies in a SQL database, chunked, or in a bucket beyond a size (see above). */
export class SqlLedger implements BodyLedgerPort {
  readonly #sql: SqlPort;
  readonly #p: string;
  readonly #dialect: Dialect;
  readonly #bucket: BodyBucket | undefined;
  readonly #inlineMax: number;
  readonly #tables: SqlTables;

  constructor(sql: SqlPort, options: SqlLedgerOptions = {}) {
    this.#sql = sql;
    this.#p = options.prefix ?? "eo_";
    this.#dialect = options.dialect ?? SQLITE;
    this.#bucket = options.bucket;
    this.#inlineMax = options.inlineMaxChars ?? CHUNK_CHARS;
    this.#tables = new SqlTables(sql, `${this.#p}bodies`, ledgerSchema(this.#p, this.#dialect));
  }

  async put(ref: SessionRef, body: string, meta: BodyMeta): Promise<void> {
    await this.#tables.ready(true);
    const bucket = this.#bucket;
    const inBucket = bucket !== undefined && body.length > this.#inlineMax;
    // The body is durable before the row names it: a failed put leaves no row pointing nowhere.
    if (inBucket) await bucket.put(ledgerKey(ref, meta.mem_id), JSON.stringify(body));
    const parts = inBucket ? [] : pieces(body, CHUNK_CHARS);
    await this.#sql.transaction(async (tx) => {
      // The row first, written over when it exists: it locks the mem_id, so two processes putting
      // the same body (two turns of one session) write one after the other, never a key twice.
      await tx.all(
        `INSERT INTO ${this.#p}bodies (tenant, session, mem_id, meta, place, chunks) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (tenant, session, mem_id) DO UPDATE SET meta = excluded.meta, place = excluded.place, chunks = excluded.chunks`,
        ref.tenant,
        ref.session,
        meta.mem_id,
        JSON.stringify(meta),
        inBucket ? "bucket" : "sql",
        parts.length,
      );
      await tx.all(
        `DELETE FROM ${this.#p}body_chunks WHERE ${KEY} AND mem_id = ?`,
        ref.tenant,
        ref.session,
        meta.mem_id,
      );
      for (const [n, piece] of parts.entries())
        await tx.all(
          `INSERT INTO ${this.#p}body_chunks (tenant, session, mem_id, n, text) VALUES (?, ?, ?, ?, ?)`,
          ref.tenant,
          ref.session,
          meta.mem_id,
          n,
          JSON.stringify(piece),
        );
    });
  }

  async #row(ref: SessionRef, memId: string): Promise<{ meta: string; place: string } | null> {
    if (!(await this.#tables.ready(false))) return null;
    const rows = await this.#sql.transaction((tx) =>
      tx.all<{ meta: string; place: string }>(
        `SELECT meta, place FROM ${this.#p}bodies WHERE ${KEY} AND mem_id = ?`,
        ref.tenant,
        ref.session,
        memId,
      ),
    );
    return rows[0] ?? null;
  }

  async get(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    if (!(await this.#tables.ready(false))) return null;
    const found = await this.#sql.transaction(async (tx) => {
      const row = (
        await tx.all<{ meta: string; place: string }>(
          `SELECT meta, place FROM ${this.#p}bodies WHERE ${KEY} AND mem_id = ?`,
          ref.tenant,
          ref.session,
          memId,
        )
      )[0];
      if (row === undefined) return null;
      const chunks =
        row.place === "bucket"
          ? null
          : await tx.all<{ text: string }>(
              `SELECT text FROM ${this.#p}body_chunks WHERE ${KEY} AND mem_id = ? ORDER BY n`,
              ref.tenant,
              ref.session,
              memId,
            );
      return { meta: JSON.parse(row.meta) as BodyMeta, chunks };
    });
    if (found === null) return null;
    if (found.chunks === null) {
      const object = await this.#bucket?.get(ledgerKey(ref, memId));
      if (object === undefined || object === null) return null;
      return { body: JSON.parse(await object.text()) as string, meta: found.meta };
    }
    return {
      body: found.chunks.map((r) => JSON.parse(r.text) as string).join(""),
      meta: found.meta,
    };
  }

  async head(ref: SessionRef, memId: string): Promise<BodyMeta | null> {
    const row = await this.#row(ref, memId);
    return row === null ? null : (JSON.parse(row.meta) as BodyMeta);
  }

  async list(ref: SessionRef, limit = Number.POSITIVE_INFINITY): Promise<string[]> {
    if (!(await this.#tables.ready(false))) return [];
    const rows = await this.#sql.transaction((tx) =>
      Number.isFinite(limit)
        ? tx.all<{ mem_id: string }>(
            `SELECT mem_id FROM ${this.#p}bodies WHERE ${KEY} ORDER BY mem_id LIMIT ?`,
            ref.tenant,
            ref.session,
            limit,
          )
        : tx.all<{ mem_id: string }>(
            `SELECT mem_id FROM ${this.#p}bodies WHERE ${KEY} ORDER BY mem_id`,
            ref.tenant,
            ref.session,
          ),
    );
    return rows.map((r) => r.mem_id);
  }

  async delete(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    if (memIds.length === 0 || !(await this.#tables.ready(false))) return;
    const inBucket: string[] = [];
    if (this.#bucket !== undefined)
      await this.#sql.transaction(async (tx) => {
        for (let i = 0; i < memIds.length; i += CHUNK) {
          const chunk = memIds.slice(i, i + CHUNK);
          for (const r of await tx.all<{ mem_id: string }>(
            `SELECT mem_id FROM ${this.#p}bodies WHERE ${KEY} AND place = 'bucket' AND mem_id IN (${marks(chunk.length)})`,
            ref.tenant,
            ref.session,
            ...chunk,
          ))
            inBucket.push(r.mem_id);
        }
      });
    // Objects first: a row is what names an object, so it goes last.
    for (let i = 0; i < inBucket.length; i += 1000)
      await this.#bucket!.delete(inBucket.slice(i, i + 1000).map((id) => ledgerKey(ref, id)));
    await this.#sql.transaction((tx) => this.#forget(tx, ref, memIds));
  }

  async #forget(tx: SqlTx, ref: SessionRef, memIds: readonly string[]): Promise<void> {
    for (let i = 0; i < memIds.length; i += CHUNK) {
      const chunk = memIds.slice(i, i + CHUNK);
      for (const table of ["bodies", "body_chunks"])
        await tx.all(
          `DELETE FROM ${this.#p}${table} WHERE ${KEY} AND mem_id IN (${marks(chunk.length)})`,
          ref.tenant,
          ref.session,
          ...chunk,
        );
    }
  }
}

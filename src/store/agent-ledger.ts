/**
 * The ledger in an agent's own Durable Object. A Durable Object's SQLite takes rows of at most 2 MB
 * (and a 10 GB object), so a body is stored as its JSON string literal (exact, lone surrogates
 * included) in chunks of at most CHUNK_CHARS characters: even a chunk of nothing but escapes stays
 * under 1 MB. With an R2 bucket, a body over `inlineMaxChars` goes there instead (one object at the
 * ledger key) and only its metadata stays in SQLite, so large exports do not fill the object.
 */
import type { BodyMeta, SessionRef, StoredBody } from "../core/types.ts";
import { type AgentStorage, idList, sqlOf } from "./agent-sql.ts";
import { ledgerKey } from "./keys.ts";
import type { BodyLedgerPort } from "./ports.ts";

/** At most 6 UTF-8 bytes per character once JSON-escaped (`\u0000`): 160K characters < 1 MB. */
export const CHUNK_CHARS = 160_000;

/** What the ledger uses of an R2 bucket binding. */
export interface BodyBucket {
  put(key: string, value: string): Promise<unknown>;
  get(key: string): Promise<{ text(): Promise<string> } | null>;
  delete(keys: string[]): Promise<void>;
}

export interface AgentLedgerOptions {
  /** Where bodies over `inlineMaxChars` go; without one, every body is chunked into SQLite. */
  bucket?: BodyBucket | undefined;
  /** Bodies up to this many characters stay in SQLite when a bucket is given (default CHUNK_CHARS). */
  inlineMaxChars?: number | undefined;
}

const KEY = "tenant = ? AND session = ?";

/** `text` cut into pieces of at most `size` characters, never between the halves of a surrogate pair. */
function chunks(text: string, size: number): string[] {
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

export class AgentLedger implements BodyLedgerPort {
  readonly #storage: AgentStorage;
  readonly #bucket: BodyBucket | undefined;
  readonly #inlineMax: number;

  constructor(storage: AgentStorage, options: AgentLedgerOptions = {}) {
    this.#storage = storage;
    this.#bucket = options.bucket;
    this.#inlineMax = options.inlineMaxChars ?? CHUNK_CHARS;
  }

  async put(ref: SessionRef, body: string, meta: BodyMeta): Promise<void> {
    const sql = sqlOf(this.#storage);
    const bucket = this.#bucket;
    if (bucket !== undefined && body.length > this.#inlineMax) {
      // The body is durable before the row names it: a failed put leaves no row pointing nowhere.
      await bucket.put(ledgerKey(ref, meta.mem_id), JSON.stringify(body));
      this.#storage.transactionSync(() => {
        this.#forget(ref, [meta.mem_id]);
        sql.exec(
          "INSERT INTO eo_bodies (tenant, session, mem_id, meta, place, chunks) VALUES (?, ?, ?, ?, 'bucket', 0)",
          ref.tenant,
          ref.session,
          meta.mem_id,
          JSON.stringify(meta),
        );
      });
      return;
    }
    const pieces = chunks(body, CHUNK_CHARS);
    this.#storage.transactionSync(() => {
      this.#forget(ref, [meta.mem_id]);
      sql.exec(
        "INSERT INTO eo_bodies (tenant, session, mem_id, meta, place, chunks) VALUES (?, ?, ?, ?, 'sql', ?)",
        ref.tenant,
        ref.session,
        meta.mem_id,
        JSON.stringify(meta),
        pieces.length,
      );
      for (const [n, piece] of pieces.entries())
        sql.exec(
          "INSERT INTO eo_body_chunks (tenant, session, mem_id, n, text) VALUES (?, ?, ?, ?, ?)",
          ref.tenant,
          ref.session,
          meta.mem_id,
          n,
          JSON.stringify(piece),
        );
    });
  }

  #row(ref: SessionRef, memId: string): { meta: string; place: string } | undefined {
    return sqlOf(this.#storage)
      .exec<{ meta: string; place: string }>(
        `SELECT meta, place FROM eo_bodies WHERE ${KEY} AND mem_id = ?`,
        ref.tenant,
        ref.session,
        memId,
      )
      .toArray()[0];
  }

  async get(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    const row = this.#row(ref, memId);
    if (row === undefined) return null;
    const meta = JSON.parse(row.meta) as BodyMeta;
    if (row.place === "bucket") {
      const object = await this.#bucket?.get(ledgerKey(ref, memId));
      if (object === undefined || object === null) return null;
      return { body: JSON.parse(await object.text()) as string, meta };
    }
    const body = sqlOf(this.#storage)
      .exec<{ text: string }>(
        `SELECT text FROM eo_body_chunks WHERE ${KEY} AND mem_id = ? ORDER BY n`,
        ref.tenant,
        ref.session,
        memId,
      )
      .toArray()
      .map((r) => JSON.parse(r.text) as string)
      .join("");
    return { body, meta };
  }

  async head(ref: SessionRef, memId: string): Promise<BodyMeta | null> {
    const row = this.#row(ref, memId);
    return row === undefined ? null : (JSON.parse(row.meta) as BodyMeta);
  }

  async list(ref: SessionRef, limit = Infinity): Promise<string[]> {
    return sqlOf(this.#storage)
      .exec<{ mem_id: string }>(
        `SELECT mem_id FROM eo_bodies WHERE ${KEY} ORDER BY mem_id LIMIT ?`,
        ref.tenant,
        ref.session,
        Number.isFinite(limit) ? limit : -1,
      )
      .toArray()
      .map((r) => r.mem_id);
  }

  async delete(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    if (memIds.length === 0) return;
    const inBucket = sqlOf(this.#storage)
      .exec<{ mem_id: string }>(
        `SELECT mem_id FROM eo_bodies WHERE ${KEY} AND place = 'bucket' AND mem_id IN (SELECT value FROM json_each(?))`,
        ref.tenant,
        ref.session,
        idList(memIds),
      )
      .toArray()
      .map((r) => r.mem_id);
    // Objects first: a row is what names an object, so it goes last.
    if (inBucket.length > 0 && this.#bucket !== undefined)
      for (let i = 0; i < inBucket.length; i += 1000)
        await this.#bucket.delete(inBucket.slice(i, i + 1000).map((id) => ledgerKey(ref, id)));
    this.#storage.transactionSync(() => this.#forget(ref, memIds));
  }

  #forget(ref: SessionRef, memIds: readonly string[]): void {
    const sql = sqlOf(this.#storage);
    for (const table of ["eo_bodies", "eo_body_chunks"])
      sql.exec(
        `DELETE FROM ${table} WHERE ${KEY} AND mem_id IN (SELECT value FROM json_each(?))`,
        ref.tenant,
        ref.session,
        idList(memIds),
      );
  }
}

/**
 * The index on KV: `m/<tenant>/<session>/<mem_id>` → where the body is and its structural index, and
 * `s/<tenant>/<session>` → the session (so a tenant's sessions can be listed by prefix). KV is eventually
 * consistent (a write can take about a minute to show elsewhere, listings lag too): callers treat a miss as
 * "ask the ledger or the session state", and entries expire on their own a day after the session's retention.
 */
import type { SessionRef } from "../core/types.ts";
import { indexBodyKey, indexSessionKey, indexSessionPrefix } from "./keys.ts";
import { badCursor, type IndexedBody, type IndexedSession, type IndexPort } from "./ports.ts";

const DELETE_BATCH = 50;

export class KvIndex implements IndexPort {
  readonly #kv: KVNamespace;
  readonly #ttl: number | undefined;

  /** `ttlSeconds`: expiration of every entry written (KV's minimum is 60), undefined = never. */
  constructor(kv: KVNamespace, options: { ttlSeconds?: number } = {}) {
    this.#kv = kv;
    this.#ttl = options.ttlSeconds === undefined ? undefined : Math.max(60, options.ttlSeconds);
  }

  #options(): KVNamespacePutOptions {
    return this.#ttl === undefined ? {} : { expirationTtl: this.#ttl };
  }

  async putBody(ref: SessionRef, entry: IndexedBody): Promise<void> {
    await this.#kv.put(
      indexBodyKey(ref, entry.meta.mem_id),
      JSON.stringify(entry),
      this.#options(),
    );
  }

  async getBody(ref: SessionRef, memId: string): Promise<IndexedBody | null> {
    return this.#kv.get<IndexedBody>(indexBodyKey(ref, memId), "json");
  }

  async putSession(ref: SessionRef, entry: IndexedSession): Promise<void> {
    // The entry rides in the key's metadata, so a listing needs no extra read per session.
    await this.#kv.put(indexSessionKey(ref), "", { ...this.#options(), metadata: entry });
  }

  async listSessions(
    tenant: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<{ sessions: IndexedSession[]; cursor: string | null }> {
    // KV's cursors are base64 text: anything else was never one of them (and would cost a failed listing).
    if (options.cursor !== undefined && !/^[A-Za-z0-9+/=_.-]{1,1024}$/.test(options.cursor))
      throw badCursor();
    const prefix = indexSessionPrefix(tenant);
    const limit = options.limit ?? 1000;
    let page: KVNamespaceListResult<IndexedSession>;
    try {
      page = await this.#kv.list<IndexedSession>({
        prefix,
        limit,
        ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      });
    } catch (cause) {
      if (options.cursor === undefined) throw cause;
      // KV says only that the listing failed. The same listing without the cursor tells a cursor it cannot
      // read (the caller's mistake: a 400) from KV being unavailable (still a storage error).
      await this.#kv.list({ prefix, limit: 1 });
      throw badCursor(cause);
    }
    const sessions = page.keys.map(
      (k) => k.metadata ?? { session: k.name.slice(prefix.length), created_at: 0 },
    );
    return { sessions, cursor: page.list_complete ? null : page.cursor };
  }

  async deleteBodies(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    await this.#deleteKeys(memIds.map((id) => indexBodyKey(ref, id)));
  }

  async deleteSession(ref: SessionRef): Promise<void> {
    // A listing may miss recent keys: callers delete the mem_ids they know of first (deleteBodies).
    const keys = [indexSessionKey(ref)];
    let cursor: string | undefined;
    for (;;) {
      const page = await this.#kv.list({
        prefix: indexBodyKey(ref, ""),
        limit: 1000,
        ...(cursor === undefined ? {} : { cursor }),
      });
      keys.push(...page.keys.map((k) => k.name));
      if (page.list_complete) break;
      cursor = page.cursor;
    }
    await this.#deleteKeys(keys);
  }

  /** KV deletes one key per call; a bounded number in flight keeps a big session inside the platform's limits. */
  async #deleteKeys(keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += DELETE_BATCH)
      await Promise.all(keys.slice(i, i + DELETE_BATCH).map((key) => this.#kv.delete(key)));
  }
}

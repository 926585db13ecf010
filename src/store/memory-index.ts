/**
 * The in-memory twin of the KV index. `lagging: true` makes it behave like a KV location that has
 * not seen any write yet (every read misses, listings are empty): the composed store must pass its
 * contract that way too, which is what "nothing may depend on reading a KV write back" means in a
 * test.
 */
import type { SessionRef } from "../core/types.ts";
import {
  indexBodyKey as bodyKey,
  indexSessionPrefix,
  indexSessionKey as sessionKey,
} from "./keys.ts";
import { badCursor, type IndexedBody, type IndexedSession, type IndexPort } from "./ports.ts";

/** The lookup index in memory; `lagging: true` never shows a write (as KV may not, for a while). */
export class MemoryIndex implements IndexPort {
  readonly #entries = new Map<string, unknown>();
  readonly #lagging: boolean;

  constructor(options: { lagging?: boolean } = {}) {
    this.#lagging = options.lagging ?? false;
  }

  #read<T>(key: string): T | null {
    if (this.#lagging) return null;
    const v = this.#entries.get(key);
    return v === undefined ? null : (structuredClone(v) as T);
  }

  async putBody(ref: SessionRef, entry: IndexedBody): Promise<void> {
    this.#entries.set(bodyKey(ref, entry.meta.mem_id), structuredClone(entry));
  }

  async getBody(ref: SessionRef, memId: string): Promise<IndexedBody | null> {
    return this.#read<IndexedBody>(bodyKey(ref, memId));
  }

  async putSession(ref: SessionRef, entry: IndexedSession): Promise<void> {
    this.#entries.set(sessionKey(ref), structuredClone(entry));
  }

  async listSessions(
    tenant: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<{ sessions: IndexedSession[]; cursor: string | null }> {
    if (options.cursor !== undefined && !/^\d{1,9}$/.test(options.cursor)) throw badCursor();
    if (this.#lagging) return { sessions: [], cursor: null };
    const prefix = indexSessionPrefix(tenant);
    const keys = [...this.#entries.keys()].filter((k) => k.startsWith(prefix)).sort();
    const start = options.cursor === undefined ? 0 : Number(options.cursor);
    const limit = options.limit ?? 1000;
    const page = keys.slice(start, start + limit);
    const more = start + limit < keys.length;
    return {
      sessions: page.map((k) => structuredClone(this.#entries.get(k)) as IndexedSession),
      cursor: more ? String(start + limit) : null,
    };
  }

  async deleteBodies(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    for (const id of memIds) this.#entries.delete(bodyKey(ref, id));
  }

  async deleteSession(ref: SessionRef): Promise<void> {
    this.#entries.delete(sessionKey(ref));
    const prefix = bodyKey(ref, "");
    for (const key of [...this.#entries.keys()])
      if (key.startsWith(prefix)) this.#entries.delete(key);
  }

  /** Every key (tests). */
  keys(): string[] {
    return [...this.#entries.keys()];
  }
}

/** The in-memory twin of the R2 ledger (bodies by tenant/session/mem_id). */
import type { BodyMeta, SessionRef, StoredBody } from "../core/types.ts";
import { ledgerKey, ledgerPrefix } from "./keys.ts";
import type { BodyLedgerPort } from "./ports.ts";

/** Bodies in memory, by tenant, session and mem_id. */
export class MemoryLedger implements BodyLedgerPort {
  readonly #objects = new Map<string, StoredBody>();

  async put(ref: SessionRef, body: string, meta: BodyMeta): Promise<void> {
    this.#objects.set(ledgerKey(ref, meta.mem_id), { body, meta: structuredClone(meta) });
  }

  async get(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    const stored = this.#objects.get(ledgerKey(ref, memId));
    return stored === undefined ? null : { body: stored.body, meta: structuredClone(stored.meta) };
  }

  async head(ref: SessionRef, memId: string): Promise<BodyMeta | null> {
    const stored = this.#objects.get(ledgerKey(ref, memId));
    return stored === undefined ? null : structuredClone(stored.meta);
  }

  async list(ref: SessionRef, limit = Infinity): Promise<string[]> {
    const prefix = ledgerPrefix(ref);
    return [...this.#objects.keys()]
      .filter((k) => k.startsWith(prefix))
      .sort()
      .slice(0, limit)
      .map((k) => k.slice(prefix.length));
  }

  async delete(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    for (const id of memIds) this.#objects.delete(ledgerKey(ref, id));
  }

  /** Number of stored bodies (tests). */
  get size(): number {
    return this.#objects.size;
  }
}

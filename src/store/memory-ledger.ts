/** The in-memory twin of the R2 ledger (bodies by tenant/session/mem_id). */
import type { BodyMeta, SessionRef, StoredBody } from "../core/types.ts";
import { type BodyLedgerPort, ledgerKey, ledgerPrefix } from "./parts.ts";

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

  async list(ref: SessionRef): Promise<string[]> {
    const prefix = ledgerPrefix(ref);
    return [...this.#objects.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
  }

  async deleteSession(ref: SessionRef): Promise<string[]> {
    const prefix = ledgerPrefix(ref);
    const deleted: string[] = [];
    for (const key of [...this.#objects.keys()]) {
      if (key.startsWith(prefix)) {
        this.#objects.delete(key);
        deleted.push(key.slice(prefix.length));
      }
    }
    return deleted;
  }

  /** Number of stored bodies (tests). */
  get size(): number {
    return this.#objects.size;
  }
}

/**
 * The in-memory twin of the R2 extraction cache (values cloned in and out, as a serializing store
 * would).
 */
import type { CachedExtraction, ExtractionCache } from "../core/ports.ts";
import { extractionKey } from "./keys.ts";

/** The tenant's extraction cache in memory (values cloned in and out). */
export class MemoryExtractionCache implements ExtractionCache {
  readonly #entries = new Map<string, CachedExtraction>();

  async getExtraction(tenant: string, key: string): Promise<CachedExtraction | null> {
    const hit = this.#entries.get(extractionKey(tenant, key));
    return hit === undefined ? null : structuredClone(hit);
  }

  async putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void> {
    this.#entries.set(extractionKey(tenant, key), structuredClone(value));
  }

  /** Number of cached extractions (tests). */
  get size(): number {
    return this.#entries.size;
  }
}

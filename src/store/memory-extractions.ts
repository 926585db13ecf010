/**
 * The extraction cache in memory: the in-memory twin of the stores' extraction caches (values cloned
 * in and out, as a serializing store would), MemoryStore's, and the first level `edge-offload serve`
 * puts in front of its store's (store/open.ts). Bounded, unlike a bucket: least recently used entries
 * go first once the count or the bytes pass their bounds, so a process that reads many files holds a
 * bounded part of them.
 */
import type { CachedExtraction, ExtractionCache } from "../core/ports.ts";
import { extractionKey } from "./keys.ts";

export interface MemoryExtractionCacheOptions {
  /** Most entries kept (default 1000). */
  maxEntries?: number | undefined;
  /** Most bytes kept, counted as the entries' JSON in UTF-16 (default 64 MiB). */
  maxBytes?: number | undefined;
}

export const MEMORY_EXTRACTION_DEFAULTS = { maxEntries: 1000, maxBytes: 64 * 1024 * 1024 };

/** The tenant's extraction cache in memory (values cloned in and out), least recently used out first. */
export class MemoryExtractionCache implements ExtractionCache {
  /** In order of use, the least recent first (a Map keeps insertion order; a hit re-inserts). */
  readonly #entries = new Map<string, { value: CachedExtraction; bytes: number }>();
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(options: MemoryExtractionCacheOptions = {}) {
    this.#maxEntries = options.maxEntries ?? MEMORY_EXTRACTION_DEFAULTS.maxEntries;
    this.#maxBytes = options.maxBytes ?? MEMORY_EXTRACTION_DEFAULTS.maxBytes;
  }

  async getExtraction(tenant: string, key: string): Promise<CachedExtraction | null> {
    const k = extractionKey(tenant, key);
    const hit = this.#entries.get(k);
    if (hit === undefined) return null;
    this.#entries.delete(k);
    this.#entries.set(k, hit);
    return structuredClone(hit.value);
  }

  async putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void> {
    const k = extractionKey(tenant, key);
    this.#drop(k);
    const bytes = 2 * (k.length + JSON.stringify(value).length);
    // One entry over the whole bound is not kept: it would empty the cache for itself.
    if (bytes > this.#maxBytes || this.#maxEntries < 1) return;
    this.#entries.set(k, { value: structuredClone(value), bytes });
    this.#bytes += bytes;
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxEntries && this.#bytes <= this.#maxBytes) break;
      this.#drop(oldest);
    }
  }

  #drop(k: string): void {
    const entry = this.#entries.get(k);
    if (entry === undefined) return;
    this.#entries.delete(k);
    this.#bytes -= entry.bytes;
  }

  /** Number of cached extractions (tests). */
  get size(): number {
    return this.#entries.size;
  }

  /** Bytes the entries are counted as (tests, operators). */
  get bytes(): number {
    return this.#bytes;
  }
}

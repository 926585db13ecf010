/**
 * What the store-backed extraction caches share (sql-extractions.ts, redis-extractions.ts): how an
 * outcome is written (JSON: it escapes lone surrogates and NUL, so the text reads back exactly and any
 * engine's TEXT holds it), read (an unreadable or foreign value is a miss, never an error: the file is
 * extracted again and the entry rewritten), bounded (one value's size; how long entries live), and a
 * cache in the process put in front of a store's.
 */
import type { CachedExtraction, ExtractionCache } from "../core/ports.ts";
import { DEFAULT_RETENTION_SECONDS } from "./state.ts";

/**
 * The largest value a store keeps (UTF-8 bytes of its JSON): 8 MiB. The built-in ceiling on an
 * extraction's text is 2,000,000 characters (DEFAULT_EXTRACT_CEILINGS.max_chars), at most 3 bytes
 * each in UTF-8 (6 for the rare escaped control character), so every extraction under the built-in
 * ceilings but pathological ones fits, while a deployment that raises `max_chars` to its 50 M maximum
 * does not write 150 MB rows a turn must read back over the network (it extracts again instead). R2's
 * cache has no cap of its own (an object may be 5 GiB); MemoryExtractionCache's is its whole bound.
 */
export const EXTRACTION_VALUE_MAX_BYTES = 8 * 1024 * 1024;

/** What a store keeps of one tenant at most (SQL): entries, and bytes of their values. */
export const EXTRACTION_TENANT_DEFAULTS = { maxEntries: 10_000, maxBytes: 256 * 1024 * 1024 };

/** Options every store-backed extraction cache takes. */
export interface StoredExtractionOptions {
  /**
   * How long an entry lives (s) from when it was written: the store's retention, or 7 days when the
   * retention is 0 (sessions kept until deleted: a cache still ages out).
   */
  retentionSeconds?: number | undefined;
  /** The largest value kept (bytes of UTF-8 JSON; default EXTRACTION_VALUE_MAX_BYTES). */
  maxValueBytes?: number | undefined;
  now?: (() => number) | undefined;
}

/** An entry's lifetime in seconds (see StoredExtractionOptions.retentionSeconds). */
export function extractionLifetime(retentionSeconds: number | undefined): number {
  const r = Math.trunc(retentionSeconds ?? DEFAULT_RETENTION_SECONDS);
  return r > 0 ? r : DEFAULT_RETENTION_SECONDS;
}

/** UTF-8 bytes of a well-formed string (JSON.stringify's output always is), counted without a copy. */
function utf8Bytes(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))
      n += 1; // a surrogate pair: 2 units, 4 bytes
    else n += 2;
  }
  return n;
}

/** The value as stored, with its size; null when it is over `maxBytes` (not stored). */
export function encodeExtraction(
  value: CachedExtraction,
  maxBytes: number,
): { json: string; bytes: number } | null {
  const json = JSON.stringify(value);
  // A cheap first check: each UTF-16 unit is at least one byte.
  if (json.length > maxBytes) return null;
  const bytes = utf8Bytes(json);
  return bytes > maxBytes ? null : { json, bytes };
}

/** A stored value read back; null (a miss) when it is not JSON of an outcome. */
export function decodeExtraction(json: unknown): CachedExtraction | null {
  if (typeof json !== "string") return null;
  try {
    const v = JSON.parse(json) as unknown;
    if (typeof v !== "object" || v === null) return null;
    const ok = (v as { ok?: unknown }).ok;
    return ok === true || ok === false ? (v as CachedExtraction) : null;
  } catch {
    return null;
  }
}

/**
 * A cache in the process read before a store's own, and written with it: a hit in `front` is answered
 * without a round trip; a hit in `back` (another process's, or before a restart) fills `front`. Safe
 * because an entry never changes meaning: its key is the file's hash and the extraction's options.
 */
export class TieredExtractionCache implements ExtractionCache {
  readonly #front: ExtractionCache;
  readonly #back: ExtractionCache;

  constructor(front: ExtractionCache, back: ExtractionCache) {
    this.#front = front;
    this.#back = back;
  }

  async getExtraction(tenant: string, key: string): Promise<CachedExtraction | null> {
    const near = await this.#front.getExtraction(tenant, key);
    if (near !== null) return near;
    const far = await this.#back.getExtraction(tenant, key);
    if (far !== null) await this.#front.putExtraction(tenant, key, far);
    return far;
  }

  async putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void> {
    // The process keeps it even when the store's write fails (which the caller then hears of).
    await this.#front.putExtraction(tenant, key, value);
    await this.#back.putExtraction(tenant, key, value);
  }
}

/**
 * The extraction cache on R2, in the ledger's bucket: one object per extraction at
 * `extracts/<tenant>/<sha256>/<format>/<variant>`, the outcome as JSON (JSON escapes lone
 * surrogates, so the text reads back exactly), a few readable fields in the custom metadata for
 * operators browsing the bucket. Entries are not scoped by session and are not removed with one;
 * bound them with a lifecycle rule.
 */
import type { CachedExtraction, ExtractionCache } from "../core/ports.ts";
import { extractionKey } from "./keys.ts";

export class R2ExtractionCache implements ExtractionCache {
  readonly #bucket: R2Bucket;
  readonly #now: () => number;

  constructor(bucket: R2Bucket, options: { now?: () => number } = {}) {
    this.#bucket = bucket;
    this.#now = options.now ?? Date.now;
  }

  async getExtraction(tenant: string, key: string): Promise<CachedExtraction | null> {
    const object = await this.#bucket.get(extractionKey(tenant, key));
    if (object === null) return null;
    try {
      return JSON.parse(await object.text()) as CachedExtraction;
    } catch {
      return null; // an unreadable entry is a miss: the file is extracted again and the entry rewritten
    }
  }

  async putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void> {
    await this.#bucket.put(extractionKey(tenant, key), JSON.stringify(value), {
      httpMetadata: { contentType: "application/json" },
      customMetadata: {
        ok: String(value.ok),
        format: value.ok ? value.result.format : value.error.format,
        chars: value.ok ? String(value.result.text.length) : "0",
        created: new Date(this.#now()).toISOString(),
      },
    });
  }
}

/**
 * The extraction cache in Redis (RedisStore): one string key per entry,
 * `<prefix>tenant:{<tenant>}:x:<key>`, the outcome as JSON (extractions.ts), written with a time to
 * live of the store's retention, so Redis removes it and no sweep is needed. A value over
 * `maxValueBytes` is not stored. A tenant's entries are not counted: that would take a sorted set per
 * tenant kept in step with keys that expire on their own; the TTL and the server's `maxmemory` policy
 * bound them instead.
 */
import type { CachedExtraction, ExtractionCache } from "../core/ports.ts";
import {
  decodeExtraction,
  EXTRACTION_VALUE_MAX_BYTES,
  encodeExtraction,
  extractionLifetime,
  type StoredExtractionOptions,
} from "./extractions.ts";
import { DEFAULT_KEY_PREFIX, type RedisClient, tenantKeyBase } from "./redis-port.ts";

export interface RedisExtractionOptions extends Omit<StoredExtractionOptions, "now"> {
  /** Every key starts with it (default `eo:`). */
  prefix?: string | undefined;
}

/** The tenant's extraction cache in Redis (see above). */
export class RedisExtractionCache implements ExtractionCache {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #ttl: number;
  readonly #maxValue: number;

  constructor(redis: RedisClient, options: RedisExtractionOptions = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? DEFAULT_KEY_PREFIX;
    this.#ttl = extractionLifetime(options.retentionSeconds);
    this.#maxValue = options.maxValueBytes ?? EXTRACTION_VALUE_MAX_BYTES;
  }

  /** Where an entry lives (the tenant's hash tag, as its learning's keys). */
  key(tenant: string, key: string): string {
    return `${tenantKeyBase(this.#prefix, tenant)}x:${key}`;
  }

  async getExtraction(tenant: string, key: string): Promise<CachedExtraction | null> {
    return decodeExtraction(await this.#redis.call("GET", this.key(tenant, key)));
  }

  async putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void> {
    const stored = encodeExtraction(value, this.#maxValue);
    if (stored === null) return; // over the cap: the next turn extracts again
    await this.#redis.call("SET", this.key(tenant, key), stored.json, "EX", this.#ttl);
  }
}

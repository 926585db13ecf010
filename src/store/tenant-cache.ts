/**
 * The tenant's learning as a turn reads it: a per-isolate cache with a time to live over the
 * tenant's aggregate (a TenantLearning that lives elsewhere: the TenantDO, a shared database), so
 * nothing tenant-wide is on a turn's path. A turn reads
 * what is cached (nothing before the first read lands: the gate then learns from the session
 * alone); a missing or stale entry is read again in the background, one read at a time per
 * tenant. Additions go straight to the port, in the background too: the cache does not hold them.
 */
import type { TenantAggregate, TenantDelta, TenantLearning } from "./ports.ts";

/** How long a cached aggregate is used before it is read again. */
export const TENANT_CACHE_TTL_MS = 60_000;
/** Tenants an isolate caches at most (the least recently read go first). */
const TENANTS_CACHED = 1024;

export const EMPTY_AGGREGATE: TenantAggregate = { tools: {}, calibrations: {} };

interface Entry {
  value: TenantAggregate;
  /** When it was read (ms), -Infinity before the first read landed. */
  at: number;
  reading: Promise<void> | null;
}

/** A per-isolate cache over a tenant's learning that lives elsewhere (see above). */
export class TenantCache {
  readonly #port: TenantLearning;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(port: TenantLearning, options: { ttlMs?: number; now?: () => number } = {}) {
    this.#port = port;
    this.#ttlMs = options.ttlMs ?? TENANT_CACHE_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The cached aggregate, at once; `refresh` is the background read to keep alive when the entry
   * is missing or stale (null when it is fresh, or already being read).
   */
  peek(tenant: string): { value: TenantAggregate; refresh: Promise<void> | null } {
    let entry = this.#entries.get(tenant);
    if (entry === undefined) {
      entry = { value: EMPTY_AGGREGATE, at: Number.NEGATIVE_INFINITY, reading: null };
      if (this.#entries.size >= TENANTS_CACHED)
        this.#entries.delete(this.#entries.keys().next().value!);
    } else this.#entries.delete(tenant);
    this.#entries.set(tenant, entry);
    if (entry.reading !== null || this.#now() - entry.at < this.#ttlMs)
      return { value: entry.value, refresh: null };
    const e = entry;
    e.reading = this.#port
      .read(tenant)
      .then((value) => {
        e.value = value;
        e.at = this.#now();
      })
      .finally(() => {
        e.reading = null;
      });
    return { value: e.value, refresh: e.reading };
  }

  /** The aggregate read afresh (the reports: they may wait for it); the cache keeps it too. */
  async read(tenant: string): Promise<TenantAggregate> {
    const value = await this.#port.read(tenant);
    const entry = this.#entries.get(tenant);
    if (entry !== undefined) {
      entry.value = value;
      entry.at = this.#now();
    }
    return value;
  }

  add(tenant: string, delta: TenantDelta): Promise<void> {
    return this.#port.add(tenant, delta);
  }
}

const caches = new WeakMap<TenantLearning, TenantCache>();

/** The isolate's cache over `port` (one per port object, so every request of the isolate shares it). */
export function tenantCacheOf(port: TenantLearning): TenantCache {
  let cache = caches.get(port);
  if (cache === undefined) caches.set(port, (cache = new TenantCache(port)));
  return cache;
}

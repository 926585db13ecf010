/**
 * How often the tenant's learning statistics travel (tenant-copy.ts, tenant-shards.ts), in one place free
 * of any runtime's types: the scale simulation (bench/scale-sim.ts) runs on the same numbers.
 */

/** Deltas wait at most this long in a session before they are sent (batched with later ones). */
export const STATS_FLUSH_MS = 30 * 1000;
/**
 * A session's copy is refreshed, after a turn that read it, once it is older than this; its
 * calibration samples leave at most this long after the first of them.
 */
export const STATS_REFRESH_MS = 60 * 1000;

/** Shards per tenant unless OFFLOAD_TENANT_STATS_SHARDS says otherwise. */
export const DEFAULT_SHARDS = 16;
/** A shard sends its batched deltas to the tenant's object (and refreshes its copy) this often. */
export const SHARD_SYNC_MS = 10 * 1000;

/** FNV-1a: a stable spread of sessions over shards. */
export function shardOf(session: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < session.length; i++) {
    h ^= session.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}

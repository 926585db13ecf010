/**
 * The cold-cache moment. A provider's prompt cache lives for its TTL after the last request that read or
 * wrote it; a session idle for longer than that comes back to an empty cache and pays a full cache write for
 * its whole prompt whatever we do. Rewriting earlier bytes then (a stub in place of a result kept so far, the
 * recall tool added to `tools`) costs nothing extra, so the gate prices that turn without invalidation or
 * declaration rewrite, and may offload what a warm cache made too dear.
 *
 * Pure: the store measures how long the session has been idle (it has the clock), this decides.
 */
import type { Breakpoint } from "./formats/types.ts";
import { type GateInput, offloadGate } from "./gate.ts";
import type { Format } from "./types.ts";

/**
 * The idle time is measured from the commit of the session's last turn, which comes just before that turn's
 * provider call (and its recall hops, which read the cache again): the margin keeps a slow answer or a hop
 * from making a warm cache look cold. Being wrong that way would rewrite a cache the gate thought gone.
 */
export const COLD_MARGIN_SECONDS = 120;

/**
 * How long an entry can outlive its last use. Anthropic's TTLs are exact (5 minutes, or 1 hour). OpenAI keeps
 * a prefix 5-10 minutes idle and up to an hour, or 24 hours with extended retention: take the longest.
 */
export function lapseSeconds(format: Format, ttl: Breakpoint["ttl"]): number {
  if (format === "anthropic") return ttl === "1h" ? 3600 : 300;
  return ttl === "1h" ? 24 * 3600 : 3600;
}

/**
 * Whether the provider's cache for this session has lapsed: the request caches (it has a breakpoint) and the
 * session has been idle longer than the longest TTL among its breakpoints, plus the margin. Unknown idle time
 * (a first turn, a store that does not say) is never cold.
 */
export function cacheCold(
  format: Format,
  breakpoints: readonly Pick<Breakpoint, "ttl">[],
  idleSeconds: number | null | undefined,
): boolean {
  if (idleSeconds === null || idleSeconds === undefined || breakpoints.length === 0) return false;
  const lapse = Math.max(...breakpoints.map((b) => lapseSeconds(format, b.ttl)));
  return idleSeconds > lapse + COLD_MARGIN_SECONDS;
}

/**
 * A settled result the gate declines on a warm cache but would offload on a cold one: such a decline is
 * recorded as kept while the cache is warm (under a record id of its own), which stands while the cache stays
 * warm, and the result is weighed again on the first turn after a lapse. Every other decline is an ordinary
 * record: nothing a lapse changes would turn it around.
 */
export function waitsForColdCache(input: GateInput): boolean {
  if (input.cache_cold === true || !input.cached_side || input.first_delivery === true)
    return false;
  return offloadGate({ ...input, cache_cold: true }).fire;
}

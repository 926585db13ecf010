/**
 * When each call of a session happens, for the cache simulation's TTLs and for the store's clock (the turn
 * gaps the anchor prices, the idle time that tells the gate the cache has lapsed). From the session's own
 * timestamps (a request log that carries them), else from a gap model, else none: every call within the TTL.
 *
 * A gap model `BASE[,LONG@P]`: each call comes BASE seconds after the previous one, except that with
 * probability P a gap is LONG seconds instead (a person away, a long test run). The draw is a hash of the
 * session id and the call's index, so a run is reproducible and every policy sees the same timeline.
 */
import { OffloadError } from "../errors.ts";
import type { ReplaySession } from "./types.ts";

export interface GapModel {
  base_seconds: number;
  long_seconds: number;
  long_probability: number;
}

/** Where replayed timelines start (any fixed epoch does; this one keeps dates readable). */
export const REPLAY_EPOCH_MS = Date.UTC(2026, 0, 1);

/**
 * The `--gap` model: `BASE` seconds between calls, or `BASE,LONG@P` (a LONG gap with probability P, drawn from a
 * hash of the session id so every policy sees the same timeline). Throws an Error saying what is wrong.
 */
export function parseGapModel(spec: string): GapModel {
  const m =
    /^\s*(\d+(?:\.\d+)?)\s*(?:,\s*(\d+(?:\.\d+)?)\s*@\s*(0(?:\.\d+)?|1(?:\.0+)?)\s*)?$/.exec(spec);
  if (m === null)
    throw new OffloadError(
      "invalid_argument",
      `--gap must be BASE or BASE,LONG@P in seconds (e.g. 20 or 20,900@0.1), not ${JSON.stringify(spec)}`,
      { path: "gap" },
    );
  return {
    base_seconds: Number(m[1]),
    long_seconds: m[2] === undefined ? Number(m[1]) : Number(m[2]),
    long_probability: m[3] === undefined ? 0 : Number(m[3]),
  };
}

/**
 * FNV-1a of a string, mixed (murmur3's finalizer), as a fraction in [0, 1): the replay's reproducible
 * draws. Without the mix, keys that differ only in their last chars (a session's call indexes) land
 * close together, and the long gaps came in runs of ten consecutive calls instead of one call in ten.
 */
export function draw(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 2 ** 32;
}

/** The gap (s) before call `i` of session `id` under a gap model (the same draw for every policy). */
export function gapSeconds(model: GapModel, id: string, i: number): number {
  return draw(`${id}#${i}`) < model.long_probability ? model.long_seconds : model.base_seconds;
}

/** The time (ms) of each call of the session, or null when neither timestamps nor a model give one. */
export function callTimes(session: ReplaySession, model?: GapModel): number[] | null {
  if (session.times !== undefined && session.times.length === session.calls.length)
    return session.times;
  if (model === undefined) return null;
  let at = REPLAY_EPOCH_MS;
  return session.calls.map((_, i) => {
    if (i > 0) at += 1000 * gapSeconds(model, session.id, i);
    return at;
  });
}

/** A request log's timestamp: epoch seconds or ms, or an ISO date; null when absent or unreadable. */
export function timestampOf(value: unknown): number | null {
  if (typeof value === "number" && Number.isFinite(value))
    return value < 1e11 ? value * 1000 : value;
  if (typeof value === "string") {
    const t = Date.parse(value);
    return Number.isNaN(t) ? null : t;
  }
  return null;
}

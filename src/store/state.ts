/**
 * The session's rules, free of storage and clocks: the SQL session state and its in-memory twin
 * both delegate here, so the two cannot drift apart on what first-writer-wins, retention, the
 * index refresh or the size of a call mean.
 */

import type { TurnAsk } from "../core/ports.ts";
import type { ResultRecord, SessionRef } from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import type { TurnLease } from "./lifecycle.ts";
import type { SessionStart } from "./ports.ts";

/**
 * How many per-turn log lines a session keeps (older ones are dropped; totals live in the records).
 */
export const TURN_LOG_LIMIT = 1000;
/** Turn gaps are the median of this many recent ones. */
export const GAP_WINDOW = 8;

/** Median gap (seconds) between consecutive times, or null with fewer than two. */
export function medianGap(times: readonly number[]): number | null {
  if (times.length < 2) return null;
  const gaps = times
    .slice(1)
    .map((t, i) => (t - times[i]!) / 1000)
    .sort((a, b) => a - b);
  return gaps[Math.floor(gaps.length / 2)]!;
}

/**
 * Seconds since the most recent of `times` (ms), or null with none: how long the session has been
 * idle (past the provider's cache TTL, its cached prefix has lapsed).
 */
export function idleSince(times: readonly number[], now: number): number | null {
  const last = times[times.length - 1];
  return last === undefined ? null : Math.max(0, (now - last) / 1000);
}

/** Offloaded records among `inserted`, per tool name. */
export function offloadsOf(inserted: readonly ResultRecord[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of inserted)
    if (r.action === "offloaded") out[r.tool_name] = (out[r.tool_name] ?? 0) + 1;
  return out;
}

/**
 * How many proxy memos a session keeps. A memo is needed for as long as the client sends back the
 * turn it belongs to; past this many mixed turns the oldest goes (that turn is then sent as the
 * client holds it: still valid, only the recall answer is no longer spliced in).
 */
export const MEMO_LIMIT = 1000;

/**
 * The tenant → session index entry is refreshed at most this often (KV allows one write per key per
 * second).
 */
export const INDEX_REFRESH_MS = 24 * 60 * 60 * 1000;

/** Default retention of an idle session: 7 days. */
export const DEFAULT_RETENTION_SECONDS = 7 * 24 * 60 * 60;

/** The Durable Object name of a session: both ids, and "/" cannot occur in either. */
export function sessionObjectName(ref: SessionRef): string {
  return `${ref.tenant}/${ref.session}`;
}

/** Parse `OFFLOAD_RETENTION_SECONDS`: a whole number of seconds, 0 = keep until deleted. */
export function parseRetention(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === "") return DEFAULT_RETENTION_SECONDS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    throw new OffloadError(
      "internal",
      "OFFLOAD_RETENTION_SECONDS must be a whole number of seconds (0 keeps sessions until deleted)",
    );
  }
  return n;
}

/** When an idle session expires (epoch ms), or null when retention is off. */
export function expiresAt(lastActive: number, retentionSeconds: number): number | null {
  return retentionSeconds === 0 ? null : lastActive + retentionSeconds * 1000;
}

export function isExpired(now: number, lastActive: number, retentionSeconds: number): boolean {
  const at = expiresAt(lastActive, retentionSeconds);
  return at !== null && now >= at;
}

export function indexDue(now: number, lastIndexed: number | null): boolean {
  return lastIndexed === null || now - lastIndexed >= INDEX_REFRESH_MS;
}

/**
 * KV entries outlive the session's retention by a day, so the index never forgets a live session
 * first.
 */
export function indexTtlSeconds(retentionSeconds: number): number | undefined {
  return retentionSeconds === 0 ? undefined : retentionSeconds + INDEX_REFRESH_MS / 1000;
}

/**
 * How stale `last_active` may get before a turn's begin moves it (a write spared on almost every
 * begin): a quarter of the retention, at least a second; never with retention off.
 */
export function activityResolution(retentionSeconds: number): number {
  return retentionSeconds === 0 ? Number.POSITIVE_INFINITY : Math.max(1000, retentionSeconds * 250);
}

/**
 * Payload budget of one call to the session state, each way. Workers RPC carries at most 32 MiB per
 * message; records and ids are sent in batches well under it, whatever the request.
 */
export const RPC_BUDGET_BYTES = 8 * 1024 * 1024;

/** The JSON size of a value, for batching under `RPC_BUDGET_BYTES`. */
export function sizeOf(value: unknown): number {
  return JSON.stringify(value)?.length ?? 0;
}

/** Split `items` into runs whose JSON sizes stay under `budget` (one oversized item stands alone). */
export function batches<T>(items: readonly T[], budget: number, size = sizeOf): T[][] {
  const out: T[][] = [];
  let run: T[] = [];
  let used = 0;
  for (const item of items) {
    const n = size(item) + 1;
    if (run.length > 0 && used + n > budget) {
      out.push(run);
      run = [];
      used = 0;
    }
    run.push(item);
    used += n;
  }
  if (run.length > 0) out.push(run);
  return out;
}

/** A turn's start when the session has no live state. */
export function emptyStart(ask: TurnAsk, lease: TurnLease | null): SessionStart {
  return {
    config: {},
    records: [],
    answered: ask.ids.length,
    recall_declared: false,
    memos: [],
    session_tool_stats: {},
    calibrations: {},
    gap_seconds: null,
    idle_seconds: null,
    lease,
  };
}

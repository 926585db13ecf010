/**
 * The session's rules, free of storage and clocks: the SessionDO (SQLite) and its in-memory twin
 * both delegate here, so the two cannot drift apart on what first-writer-wins, retention or the
 * index refresh mean.
 */

import type { ToolStats } from "../core/ports.ts";
import type { ResultRecord, SessionRef } from "../core/types.ts";
import { OffloadError } from "../errors.ts";

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

/**
 * Offloads and recalls per tool name (all tools, or the asked ones): offloaded records counted by
 * their tool, recalls by the tool of the record that names the mem_id.
 */
export function toolStatsOf(
  records: Iterable<ResultRecord>,
  recallsByMemId: ReadonlyMap<string, number>,
  names?: readonly string[],
): Record<string, ToolStats> {
  const wanted = names === undefined ? null : new Set(names);
  const out: Record<string, ToolStats> = {};
  const toolOfMem = new Map<string, string>();
  for (const r of records) {
    if (r.action !== "offloaded") continue;
    if (r.mem_id !== null) toolOfMem.set(r.mem_id, r.tool_name);
    if (wanted !== null && !wanted.has(r.tool_name)) continue;
    (out[r.tool_name] ??= { offloaded: 0, recalls: 0 }).offloaded++;
  }
  for (const [memId, n] of recallsByMemId) {
    const tool = toolOfMem.get(memId);
    if (tool === undefined || (wanted !== null && !wanted.has(tool))) continue;
    (out[tool] ??= { offloaded: 0, recalls: 0 }).recalls += n;
  }
  return out;
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

/**
 * First writer wins per tool_use_id, also within one commit. Returns what to insert and, in the
 * order of `incoming`, the record that stands for each id.
 */
export function applyCommit(
  existing: ReadonlyMap<string, ResultRecord>,
  incoming: readonly ResultRecord[],
): { insert: ResultRecord[]; standing: ResultRecord[] } {
  const insert: ResultRecord[] = [];
  const seen = new Map<string, ResultRecord>();
  const standing: ResultRecord[] = [];
  for (const record of incoming) {
    const stands = existing.get(record.tool_use_id) ?? seen.get(record.tool_use_id);
    if (stands === undefined) {
      insert.push(record);
      seen.set(record.tool_use_id, record);
      standing.push(record);
    } else standing.push(stands);
  }
  return { insert, standing };
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
 * A session object answers only for the session it was created for (guards against a name mix-up).
 */
export function checkScope(stored: SessionRef, ref: SessionRef): void {
  if (stored.tenant !== ref.tenant || stored.session !== ref.session) {
    throw new OffloadError("internal", "session state belongs to another session");
  }
}

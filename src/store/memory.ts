/**
 * The in-memory twin of the storage port: the library's default store, and the reference the contract suite
 * is written against. Values are cloned on the way in and out, as a serializing store would.
 */
import type { BodyMeta, ResultRecord, SessionRef, StoredBody, TurnLog } from "../core/types.ts";
import type { CachedExtraction } from "../extract/cache.ts";
import type {
  CommitResult,
  LoadedState,
  OffloadStore,
  SessionSummary,
  ToolStats,
  TurnCommit,
} from "./port.ts";

interface SessionData {
  records: Map<string, ResultRecord>;
  bodies: Map<string, StoredBody>;
  recall_declared: boolean;
  calls: number;
  recalls: number;
  turns: TurnLog[];
  toolStats: Map<string, ToolStats>;
  /** Commit times (ms), the most recent last. */
  times: number[];
}

/** How many per-turn log lines a session keeps (older ones are dropped; totals live in the records). */
export const TURN_LOG_LIMIT = 1000;
/** Turn gaps are the median of this many recent ones. */
export const GAP_WINDOW = 8;

export interface MemoryStoreOptions {
  /** The clock used to measure gaps between turns (ms). */
  now?: () => number;
}

function bump(map: Map<string, ToolStats>, tool: string, key: keyof ToolStats): void {
  const s = map.get(tool) ?? { offloaded: 0, recalls: 0 };
  s[key]++;
  map.set(tool, s);
}

function pick(
  map: Map<string, ToolStats> | undefined,
  names: readonly string[],
): Record<string, ToolStats> {
  const out: Record<string, ToolStats> = {};
  for (const n of names) {
    const s = map?.get(n);
    if (s !== undefined) out[n] = { ...s };
  }
  return out;
}

/** Median gap (seconds) between consecutive times, or null with fewer than two. */
export function medianGap(times: readonly number[]): number | null {
  if (times.length < 2) return null;
  const gaps = times
    .slice(1)
    .map((t, i) => (t - times[i]!) / 1000)
    .sort((a, b) => a - b);
  return gaps[Math.floor(gaps.length / 2)]!;
}

/** Seconds since the most recent of `times` (ms), or null with none: how long the session has been idle. */
export function idleSince(times: readonly number[], now: number): number | null {
  const last = times[times.length - 1];
  return last === undefined ? null : Math.max(0, (now - last) / 1000);
}

export class MemoryStore implements OffloadStore {
  readonly #sessions = new Map<string, SessionData>();
  readonly #tenantTools = new Map<string, Map<string, ToolStats>>();
  readonly #extractions = new Map<string, CachedExtraction>();
  readonly #now: () => number;

  constructor(options: MemoryStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
  }

  #key(ref: SessionRef): string {
    return JSON.stringify([ref.tenant, ref.session]);
  }

  #data(ref: SessionRef, create: true): SessionData;
  #data(ref: SessionRef, create: false): SessionData | undefined;
  #data(ref: SessionRef, create: boolean): SessionData | undefined {
    const key = this.#key(ref);
    let data = this.#sessions.get(key);
    if (data === undefined && create) {
      data = {
        records: new Map(),
        bodies: new Map(),
        recall_declared: false,
        calls: 0,
        recalls: 0,
        turns: [],
        toolStats: new Map(),
        times: [],
      };
      this.#sessions.set(key, data);
    }
    return data;
  }

  #tenant(tenant: string): Map<string, ToolStats> {
    let map = this.#tenantTools.get(tenant);
    if (map === undefined) this.#tenantTools.set(tenant, (map = new Map()));
    return map;
  }

  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<LoadedState> {
    const data = this.#data(ref, false);
    const records = new Map<string, ResultRecord>();
    if (data !== undefined) {
      for (const id of toolUseIds) {
        const r = data.records.get(id);
        if (r !== undefined) records.set(id, structuredClone(r));
      }
    }
    return {
      records,
      recall_declared: data?.recall_declared ?? false,
      tool_stats: pick(this.#tenantTools.get(ref.tenant), toolNames),
      session_tool_stats: pick(data?.toolStats, toolNames),
      gap_seconds: medianGap(data?.times ?? []),
      idle_seconds: idleSince(data?.times ?? [], this.#now()),
    };
  }

  async commit(ref: SessionRef, commit: TurnCommit): Promise<CommitResult> {
    const data = this.#data(ref, true);
    const standing = new Map<string, ResultRecord>();
    for (const record of commit.records) {
      const existing = data.records.get(record.tool_use_id);
      if (existing === undefined) {
        data.records.set(record.tool_use_id, structuredClone(record));
        if (record.action === "offloaded") {
          bump(data.toolStats, record.tool_name, "offloaded");
          // A shadow turn's offloads were never shown as stubs, so they cannot be recalled: not tenant evidence.
          if (!commit.log.shadow) bump(this.#tenant(ref.tenant), record.tool_name, "offloaded");
        }
      }
      standing.set(record.tool_use_id, structuredClone(existing ?? record));
    }
    data.recall_declared ||= commit.recall_declared;
    data.calls++;
    data.turns.push(structuredClone(commit.log));
    if (data.turns.length > TURN_LOG_LIMIT)
      data.turns.splice(0, data.turns.length - TURN_LOG_LIMIT);
    data.times.push(this.#now());
    if (data.times.length > GAP_WINDOW + 1)
      data.times.splice(0, data.times.length - GAP_WINDOW - 1);
    return { records: standing };
  }

  async putBody(ref: SessionRef, body: string, meta: BodyMeta): Promise<void> {
    this.#data(ref, true).bodies.set(meta.mem_id, { body, meta: structuredClone(meta) });
  }

  async getBody(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    const stored = this.#data(ref, false)?.bodies.get(memId);
    return stored === undefined ? null : { body: stored.body, meta: structuredClone(stored.meta) };
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<void> {
    const data = this.#data(ref, true);
    data.recalls++;
    // Counted for the tool of the offloaded result that named this mem_id (as the SessionDO does).
    let tool: string | undefined;
    for (const r of data.records.values())
      if (r.mem_id === memId && r.action === "offloaded") tool = r.tool_name;
    if (tool !== undefined) {
      bump(data.toolStats, tool, "recalls");
      bump(this.#tenant(ref.tenant), tool, "recalls");
    }
  }

  async describeSession(ref: SessionRef): Promise<SessionSummary | null> {
    const data = this.#data(ref, false);
    if (data === undefined) return null;
    return {
      tenant: ref.tenant,
      session: ref.session,
      calls: data.calls,
      recall_declared: data.recall_declared,
      recalls: data.recalls,
      tool_stats: Object.fromEntries([...data.toolStats].map(([k, v]) => [k, { ...v }])),
      records: [...data.records.values()].map((r) => structuredClone(r)),
      turns: data.turns.map((t) => structuredClone(t)),
    };
  }

  async deleteSession(ref: SessionRef): Promise<void> {
    this.#sessions.delete(this.#key(ref));
  }

  async getExtraction(tenant: string, key: string): Promise<CachedExtraction | null> {
    const hit = this.#extractions.get(JSON.stringify([tenant, key]));
    return hit === undefined ? null : structuredClone(hit);
  }

  async putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void> {
    this.#extractions.set(JSON.stringify([tenant, key]), structuredClone(value));
  }
}

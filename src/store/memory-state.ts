/**
 * The in-memory twin of the SQL session state (sql-session.ts): the same rules (state.ts,
 * lifecycle.ts, usage.ts, report.ts), Maps instead of tables, for the library's `MemoryStore`.
 * Values are cloned on the way in and out, as a serializing store would.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { Calibration } from "../core/calibration.ts";
import type { ToolStats, TurnAsk } from "../core/ports.ts";
import { memoAnchors, type ProxyMemo, type ResultRecord, type SessionRef } from "../core/types.ts";
import {
  admitted,
  endPurge,
  FRESH_LIFECYCLE,
  isGone,
  type Lifecycle,
  leaseOf,
  orphansOf,
  PURGE_GRACE_MS,
  refusalOf,
  startPurge,
  type TurnLease,
} from "./lifecycle.ts";
import type {
  RecordsBatch,
  RecordsResult,
  SessionCommit,
  SessionCommitResult,
  SessionDetail,
  SessionFinish,
  SessionStart,
  SessionState,
} from "./ports.ts";
import {
  type LastTurn,
  type LoggedTurn,
  lastTurnOf,
  loggedTurn,
  recallTotal,
  reportData,
  type SessionReportData,
} from "./report.ts";
import { SESSION_END_MS } from "./session-lengths.ts";
import {
  emptyStart,
  GAP_WINDOW,
  idleSince,
  indexDue,
  MEMO_LIMIT,
  medianGap,
  offloadsOf,
  TURN_LOG_LIMIT,
} from "./state.ts";
import {
  findTurn,
  finishedLine,
  learnUsage,
  type TurnKey,
  type UsageOutcome,
  withUsage,
} from "./usage.ts";

/** A live session: what a purge empties. */
interface Live {
  created_at: number;
  last_active: number;
  calls: number;
  recall_declared: boolean;
  config: OffloadConfigPatch;
  last_indexed: number | null;
  last_turn: LastTurn | null;
  calibrations: Record<string, Calibration>;
  records: Map<string, ResultRecord>;
  turns: { seq: number; line: LoggedTurn }[];
  recalls: Map<string, number>;
  tools: Map<string, ToolStats>;
  memos: { seq: number; memo: ProxyMemo }[];
  /** When the session's length was counted (session-lengths.ts), null before. */
  ended_at: number | null;
}

/** A session: its lifecycle (outlives a purge), and its live state when there is one. */
interface Entry {
  life: Lifecycle;
  last_seq: number;
  live: Live | null;
  /** Bodies a refused commit wrote, noted for deletion. */
  orphans: Map<string, { deleted_at: number | null }>;
}

const clone = <T>(value: T): T => structuredClone(value);

/** The session state in memory: the SQL session state's rules, for one process. */
export class MemorySessionState implements SessionState {
  readonly #entries = new Map<string, Entry>();
  readonly #now: () => number;

  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  #key(ref: SessionRef): string {
    return JSON.stringify([ref.tenant, ref.session]);
  }

  /** The session's entry; a purge nobody confirmed (its caller failed) ends after its grace. */
  #entry(ref: SessionRef, create: boolean): Entry | undefined {
    const key = this.#key(ref);
    let entry = this.#entries.get(key);
    if (entry === undefined && create) {
      entry = { life: FRESH_LIFECYCLE, last_seq: 0, live: null, orphans: new Map() };
      this.#entries.set(key, entry);
    }
    const now = this.#now();
    if (entry?.life.purging_since != null && now - entry.life.purging_since > PURGE_GRACE_MS)
      entry.life = endPurge(entry.life, now);
    return entry;
  }

  /** The live session, created on a write; active now. */
  #live(entry: Entry): Live {
    const now = this.#now();
    entry.live ??= {
      created_at: now,
      last_active: now,
      calls: 0,
      recall_declared: false,
      config: {},
      last_indexed: null,
      last_turn: null,
      calibrations: {},
      records: new Map(),
      turns: [],
      recalls: new Map(),
      tools: new Map(),
      memos: [],
      ended_at: null,
    };
    entry.live.last_active = now;
    return entry.live;
  }

  async begin(ref: SessionRef, ask: TurnAsk): Promise<SessionStart> {
    const now = this.#now();
    const entry = this.#entry(ref, false);
    const life = entry?.life ?? FRESH_LIFECYCLE;
    if (entry?.live != null) entry.live.last_active = now;
    else if (entry !== undefined && life.tombstone_at !== null)
      entry.life = { ...life, last_begin: now };
    const lease = leaseOf(life, now);
    const s = entry?.live;
    if (s == null) return emptyStart(ask, lease);
    const anchors = new Set(ask.anchors ?? []);
    const memos = s.memos
      .map((m) => m.memo)
      .filter((m) => memoAnchors(m).some((a) => anchors.has(a)));
    const ids = [...ask.ids, ...memos.flatMap((m) => m.calls.map((c) => c.id))];
    const times = s.turns.slice(-(GAP_WINDOW + 1)).map((t) => t.line.at);
    return clone({
      config: s.config,
      records: ids.flatMap((id) => s.records.get(id) ?? []),
      answered: ids.length,
      recall_declared: s.recall_declared,
      memos,
      session_tool_stats: Object.fromEntries(
        ask.names.flatMap((n) => (s.tools.has(n) ? [[n, s.tools.get(n)!]] : [])),
      ),
      calibrations: s.calibrations,
      gap_seconds: medianGap(times),
      idle_seconds: idleSince(times, now),
      lease,
    });
  }

  async records(
    ref: SessionRef,
    ids: readonly string[],
  ): Promise<{ records: ResultRecord[]; answered: number }> {
    const s = this.#entry(ref, false)?.live;
    return clone({
      records: s == null ? [] : ids.flatMap((id) => s.records.get(id) ?? []),
      answered: ids.length,
    });
  }

  /**
   * The records that may stand under `lease`: none when the session was deleted since (its bodies
   * noted for deletion), else all but those naming a body noted for deletion.
   */
  #admit(
    entry: Entry,
    records: readonly ResultRecord[],
    lease: TurnLease | null,
  ): ResultRecord[] | "deleted" | "expired" {
    const refused = refusalOf(lease, entry.life, this.#now());
    if (refused !== null) {
      const named = (memId: string) =>
        [...(entry.live?.records.values() ?? [])].some((r) => r.mem_id === memId);
      for (const memId of orphansOf(records, named)) entry.orphans.set(memId, { deleted_at: null });
      return refused;
    }
    return admitted(records, (m) => entry.orphans.get(m), lease!);
  }

  /** First writer wins, by id; returns what stands and the offloads inserted per tool. */
  #insert(s: Live, records: readonly ResultRecord[]) {
    const inserted: ResultRecord[] = [];
    for (const r of records)
      if (!s.records.has(r.tool_use_id)) {
        s.records.set(r.tool_use_id, clone(r));
        inserted.push(r);
      }
    const offloads = offloadsOf(inserted);
    for (const [tool, n] of Object.entries(offloads)) {
      const stats = s.tools.get(tool) ?? { offloaded: 0, recalls: 0 };
      s.tools.set(tool, { ...stats, offloaded: stats.offloaded + n });
    }
    return { standing: records.map((r) => clone(s.records.get(r.tool_use_id)!)), offloads };
  }

  async addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult> {
    const entry = this.#entry(ref, true)!;
    const ok = this.#admit(entry, batch.records, batch.lease);
    if (typeof ok === "string") return { records: [], offloads: {}, refused: ok };
    const { standing, offloads } = this.#insert(this.#live(entry), ok);
    return { records: standing, offloads };
  }

  async commit(ref: SessionRef, commit: SessionCommit): Promise<SessionCommitResult> {
    const entry = this.#entry(ref, true)!;
    const ok = this.#admit(entry, commit.records, commit.lease);
    if (typeof ok === "string")
      return { records: [], seq: 0, index_due: false, offloads: {}, refused: ok };
    const now = this.#now();
    const s = this.#live(entry);
    const { standing, offloads } = this.#insert(s, ok);
    const seq = ++entry.last_seq;
    let log = clone(commit.log);
    if (commit.finish !== undefined) {
      const done = finishedLine(seq, log, clone(commit.finish), s.calibrations);
      log = done.log;
      if (done.calibrations !== null) s.calibrations = done.calibrations;
    }
    s.calls++;
    s.recall_declared ||= commit.recall_declared;
    const due = indexDue(now, s.last_indexed);
    if (due) s.last_indexed = now;
    if (commit.decisions !== undefined)
      s.last_turn = clone(lastTurnOf(commit.log, commit.decisions, now, commit.decisions_total));
    s.turns.push({ seq, line: loggedTurn(log, now, 0) });
    if (s.turns.length > TURN_LOG_LIMIT) s.turns.splice(0, s.turns.length - TURN_LOG_LIMIT);
    entry.life = { ...entry.life, tombstone_at: null, last_begin: null };
    if (commit.finish?.memos !== undefined) this.#keepMemos(s, commit.finish.memos);
    return { records: standing, seq, index_due: due, offloads };
  }

  async finish(ref: SessionRef, seq: number | null, finish: SessionFinish): Promise<void> {
    const entry = this.#entry(ref, false);
    // Deleted while the provider answered: the session stays gone.
    if (entry?.live == null && isGone(entry?.life ?? FRESH_LIFECYCLE)) return;
    if (entry === undefined && (finish.memos ?? []).length === 0) return;
    const s = this.#live(entry ?? this.#entry(ref, true)!);
    const line = seq === null ? undefined : s.turns.find((t) => t.seq === seq);
    if (line !== undefined) {
      const { at, recalls, ...log } = line.line;
      const done = finishedLine(line.seq, log, clone(finish), s.calibrations);
      line.line = loggedTurn(done.log, at, recalls);
      if (done.calibrations !== null) s.calibrations = done.calibrations;
    }
    if (finish.memos !== undefined) this.#keepMemos(s, finish.memos);
  }

  #keepMemos(s: Live, memos: readonly ProxyMemo[]): void {
    let seq = s.memos[s.memos.length - 1]?.seq ?? 0;
    for (const memo of memos) s.memos.push({ seq: ++seq, memo: clone(memo) });
    if (s.memos.length > MEMO_LIMIT) s.memos.splice(0, s.memos.length - MEMO_LIMIT);
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    const entry = this.#entry(ref, true)!;
    // A recall of a session that is gone (deleted while the body was read) brings nothing back.
    if (entry.live === null && isGone(entry.life)) return null;
    const s = this.#live(entry);
    s.recalls.set(memId, (s.recalls.get(memId) ?? 0) + 1);
    const latest = s.turns[s.turns.length - 1];
    if (latest !== undefined) latest.line.recalls++;
    for (const r of s.records.values())
      if (r.mem_id === memId && r.action === "offloaded") {
        const stats = s.tools.get(r.tool_name) ?? { offloaded: 0, recalls: 0 };
        s.tools.set(r.tool_name, { ...stats, recalls: stats.recalls + 1 });
        return r.tool_name;
      }
    return null;
  }

  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    const s = this.#entry(ref, false)?.live;
    if (s == null) return null;
    const found = findTurn(
      s.turns.map((t) => ({ seq: t.seq, log: t.line, entry: t })),
      key,
    );
    if (found === undefined) return { status: "unknown_turn" };
    const next = withUsage(found.seq, found.log, clone(usage));
    if (next.log !== null) {
      found.entry.line = { ...found.entry.line, ...next.log };
      if (next.outcome.status === "recorded" && next.outcome.estimate !== null)
        s.calibrations = learnUsage(s.calibrations, usage, next.outcome.estimate).calibrations;
    }
    return clone(next.outcome);
  }

  async describe(ref: SessionRef): Promise<SessionDetail | null> {
    const s = this.#entry(ref, false)?.live;
    if (s == null) return null;
    return clone({
      tenant: ref.tenant,
      session: ref.session,
      calls: s.calls,
      recall_declared: s.recall_declared,
      recalls: recallTotal(s.recalls),
      tool_stats: Object.fromEntries(
        [...s.tools.entries()]
          .filter(([, t]) => t.offloaded > 0)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      ),
      records: [...s.records.values()],
      turns: s.turns.map((t) => t.line),
      config: s.config,
      created_at: s.created_at,
      last_active: s.last_active,
      recalls_by_mem_id: Object.fromEntries(s.recalls),
    });
  }

  async report(
    ref: SessionRef,
    options: { turns?: boolean } = {},
  ): Promise<SessionReportData | null> {
    const s = this.#entry(ref, false)?.live;
    if (s == null) return null;
    return clone(
      reportData(
        {
          ref,
          created_at: s.created_at,
          last_active: s.last_active,
          calls: s.calls,
          recall_declared: s.recall_declared,
          config: s.config,
          records: s.records.values(),
          recalls: s.recalls,
          turns: s.turns.map((t) => t.line),
          last_turn: s.last_turn,
        },
        options,
      ),
    );
  }

  async getConfig(ref: SessionRef): Promise<OffloadConfigPatch> {
    return clone(this.#entry(ref, false)?.live?.config ?? {});
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    this.#live(this.#entry(ref, true)!).config = clone(patch);
  }

  async destroy(ref: SessionRef): Promise<string[]> {
    const entry = this.#entry(ref, true)!;
    const named =
      entry.live === null
        ? []
        : [
            ...new Set(
              [...entry.live.records.values()].flatMap((r) =>
                r.mem_id === null ? [] : [r.mem_id],
              ),
            ),
          ].sort();
    // The generation moves before anything is deleted: no turn that began earlier can commit now.
    entry.life = startPurge(entry.life, this.#now());
    entry.live = null;
    entry.orphans.clear();
    return named;
  }

  async purged(ref: SessionRef): Promise<void> {
    const entry = this.#entry(ref, false);
    if (entry !== undefined && entry.life.purging_since !== null)
      entry.life = endPurge(entry.life, this.#now());
  }

  async end(ref: SessionRef, options: { idle?: boolean } = {}): Promise<number | null> {
    const s = this.#entry(ref, false)?.live;
    const now = this.#now();
    if (!counts(s) || (options.idle === true && now - s.last_active < SESSION_END_MS)) return null;
    s.ended_at = now;
    return s.calls;
  }

  /** Sessions idle for SESSION_END_MS whose length is not counted yet (at most `limit`). */
  async ended(limit = 100): Promise<SessionRef[]> {
    const idleSince = this.#now() - SESSION_END_MS;
    const out: SessionRef[] = [];
    for (const [key, entry] of this.#entries) {
      if (out.length >= limit) break;
      if (counts(entry.live) && entry.live.last_active <= idleSince) {
        const [tenant, session] = JSON.parse(key) as [string, string];
        out.push({ tenant, session });
      }
    }
    return out;
  }
}

/** A live session with calls whose length is still to be counted when it ends. */
function counts(s: Live | null | undefined): s is Live {
  return s != null && s.calls > 0 && s.ended_at === null;
}

/**
 * The session state in Redis: the SQL session state's rules (lifecycle.ts, state.ts, usage.ts,
 * report.ts) over a session's hashes (redis-port.ts has the keys and the one write). A reader takes one
 * MULTI; a writer reads, computes, and writes through the version check, reading again when another
 * writer came first. Retention is Redis's own: every write sets the session's keys (bodies and index
 * entries included) to expire `retentionSeconds` after it, and a begin refreshes them as SQL's begin
 * moves `last_active`, so an idle session goes whole.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { Calibration } from "../core/calibration.ts";
import type { ToolStats, TurnAsk } from "../core/ports.ts";
import {
  memoAnchors,
  type ProxyMemo,
  type ResultRecord,
  type SessionRef,
  type TurnLog,
} from "../core/types.ts";
import {
  admitted,
  endPurge,
  isGone,
  type Lifecycle,
  leaseOf,
  orphansOf,
  PURGE_GRACE_MS,
  refusalOf,
  startPurge,
  TURN_LEASE_MS,
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
  casWrite,
  DEFAULT_KEY_PREFIX,
  hash,
  hmget,
  type Op,
  optimistic,
  type RedisClient,
  type SessionKeys,
  sessionKeys,
  snapshot,
  values,
} from "./redis-port.ts";
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
  activityResolution,
  DEFAULT_RETENTION_SECONDS,
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

export interface RedisSessionOptions {
  /** Every key starts with it (default `eo:`). */
  prefix?: string;
  now?: () => number;
  /** Idle sessions expire this long after their last write (0: never); default 7 days. */
  retentionSeconds?: number;
}

/** The session's row, parsed. */
interface Row {
  v: string;
  life: Lifecycle;
  last_seq: number;
  created_at: number | null;
  last_active: number;
  calls: number;
  recall_declared: boolean;
  config: string;
  last_indexed: number | null;
  last_turn: string | null;
  calibration: string;
  /** The latest turns' commit times (GAP_WINDOW + 1 at most). */
  times: number[];
  /** Records decided so far (their order). */
  n: number;
  /** The last memo's seq. */
  memo_seq: number;
  /** The latest line's seq, null when the session has none. */
  line_seq: number | null;
  /** When its length was counted for the tenant (session-lengths.ts), null before. */
  ended_at: number | null;
}

const int = (v: string | undefined) => (v === undefined || v === "" ? 0 : Number(v));
const intOrNull = (v: string | undefined) => (v === undefined || v === "" ? null : Number(v));
const field = (v: number | null) => (v === null ? "" : String(v));

function rowOf(h: Record<string, string>): Row {
  return {
    v: h.v ?? "0",
    life: {
      epoch: int(h.epoch),
      purging_since: intOrNull(h.purging_since),
      tombstone_at: intOrNull(h.tombstone_at),
      last_begin: intOrNull(h.last_begin),
    },
    last_seq: int(h.last_seq),
    created_at: intOrNull(h.created_at),
    last_active: int(h.last_active),
    calls: int(h.calls),
    recall_declared: h.recall_declared === "1",
    config: h.config ?? "{}",
    last_indexed: intOrNull(h.last_indexed),
    last_turn: h.last_turn === undefined || h.last_turn === "" ? null : h.last_turn,
    calibration: h.calibration ?? "{}",
    times: h.times === undefined ? [] : (JSON.parse(h.times) as number[]),
    n: int(h.n),
    memo_seq: int(h.memo_seq),
    line_seq: intOrNull(h.line_seq),
    ended_at: intOrNull(h.ended_at),
  };
}

type LiveRow = Row & { created_at: number };
const live = (row: Row): row is LiveRow => row.created_at !== null;

/** A stored record: the record and its place in the order first decided. */
interface StoredRecord {
  n: number;
  r: ResultRecord;
}

const parseRecord = (text: string | null): ResultRecord | null =>
  text === null ? null : (JSON.parse(text) as StoredRecord).r;

/** A stored line. */
interface StoredLine {
  log: TurnLog;
  at: number;
}

/** The live fields a purge resets (the lifecycle stays). */
const EMPTY_LIVE: [string, string][] = [
  ["created_at", ""],
  ["last_active", "0"],
  ["calls", "0"],
  ["recall_declared", "0"],
  ["config", "{}"],
  ["last_indexed", ""],
  ["last_turn", ""],
  ["calibration", "{}"],
  ["times", "[]"],
  ["n", "0"],
  ["line_seq", ""],
  ["ended_at", ""],
];

/** The keys a purge empties (the row stays, and so do the ledger's and the index's: purge.ts). */
const LIVE_KEYS = [
  "records",
  "mems",
  "turns",
  "turnRecalls",
  "recalls",
  "offloaded",
  "toolRecalls",
  "memos",
  "anchors",
  "orphans",
] as const;

/** The session state in Redis (see above). */
export class RedisSessionState implements SessionState {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #now: () => number;
  readonly retentionSeconds: number;

  constructor(redis: RedisClient, options: RedisSessionOptions = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? DEFAULT_KEY_PREFIX;
    this.#now = options.now ?? Date.now;
    this.retentionSeconds = options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS;
  }

  #keys(ref: SessionRef): SessionKeys {
    return sessionKeys(this.#prefix, ref);
  }

  /** Sessions a purge started and nobody confirmed; sessions with bodies noted for deletion. */
  get #purging(): string {
    return `${this.#prefix}purging`;
  }
  get #orphaned(): string {
    return `${this.#prefix}orphaned`;
  }

  /** Sessions by last activity (the sweep's list of sessions that may have ended). */
  get #active(): string {
    return `${this.#prefix}active`;
  }

  /** The writes, if the session's version is still the row's (the sweep's list kept with them). */
  #write(k: SessionKeys, row: Row, ops: Op[]): Promise<boolean> {
    return casWrite(this.#redis, k, row.v, this.retentionSeconds, ops, this.#active);
  }

  /** The row's writes once the session is written: live (if it was not), active now. */
  #touch(row: Row, now: number): Op {
    return ["HSET", "row", "last_active", now, "created_at", row.created_at ?? now];
  }

  async begin(ref: SessionRef, ask: TurnAsk): Promise<SessionStart> {
    const k = this.#keys(ref);
    const anchors = [...new Set(ask.anchors ?? [])];
    const names = [...new Set(ask.names)];
    return optimistic(async () => {
      const now = this.#now();
      const [h, recs, offs, recs2, anchored] = await snapshot(this.#redis, [
        ["HGETALL", k.row],
        hmget(k.records, ask.ids),
        hmget(k.offloaded, names),
        hmget(k.toolRecalls, names),
        hmget(k.anchors, anchors),
      ]);
      const row = rowOf(hash(h));
      const life = row.life;
      // A write only where SQL's begin writes: a long-idle live session's activity (its keys'
      // time to live with it), a tombstone's latest begin.
      let ops: Op[] | null = null;
      if (live(row) && now - row.last_active >= activityResolution(this.retentionSeconds))
        ops = [["HSET", "row", "last_active", now]];
      else if (row.v !== "0" && !live(row) && life.tombstone_at !== null)
        ops = [["HSET", "row", "last_begin", now]];
      if (ops !== null && !(await this.#write(k, row, ops))) return undefined;
      const lease = leaseOf(life, now);
      if (!live(row)) return emptyStart(ask, lease);
      const seqs = new Set<string>();
      for (const list of values(anchored))
        if (list !== null) for (const s of JSON.parse(list) as number[]) seqs.add(String(s));
      let memos: ProxyMemo[] = [];
      const found = new Map<string, ResultRecord>();
      for (const [i, text] of values(recs).entries()) {
        const r = parseRecord(text);
        if (r !== null) found.set(ask.ids[i]!, r);
      }
      if (seqs.size > 0) {
        const order = [...seqs].sort((a, b) => Number(a) - Number(b));
        const texts = values((await snapshot(this.#redis, [hmget(k.memos, order)]))[0]);
        memos = texts.flatMap((t) => (t === null ? [] : [JSON.parse(t) as ProxyMemo]));
        const callIds = memos.flatMap((m) => m.calls.map((c) => c.id));
        if (callIds.length > 0) {
          const more = values((await snapshot(this.#redis, [hmget(k.records, callIds)]))[0]);
          for (const [i, text] of more.entries()) {
            const r = parseRecord(text);
            if (r !== null) found.set(callIds[i]!, r);
          }
        }
      }
      const ids = [...ask.ids, ...memos.flatMap((m) => m.calls.map((c) => c.id))];
      const stats: Record<string, ToolStats> = {};
      const o = values(offs);
      const rc = values(recs2);
      names.forEach((name, i) => {
        if (o[i] != null || rc[i] != null)
          stats[name] = { offloaded: int(o[i] ?? undefined), recalls: int(rc[i] ?? undefined) };
      });
      return {
        config: JSON.parse(row.config) as OffloadConfigPatch,
        records: ids.flatMap((id) => found.get(id) ?? []),
        answered: ids.length,
        recall_declared: row.recall_declared,
        memos,
        session_tool_stats: stats,
        calibrations: JSON.parse(row.calibration) as Record<string, Calibration>,
        gap_seconds: medianGap(row.times),
        idle_seconds: idleSince(row.times, now),
        lease,
      };
    });
  }

  async records(
    ref: SessionRef,
    ids: readonly string[],
  ): Promise<{ records: ResultRecord[]; answered: number }> {
    const texts = values((await snapshot(this.#redis, [hmget(this.#keys(ref).records, ids)]))[0]);
    return {
      records: texts.flatMap((t) => parseRecord(t) ?? []),
      answered: ids.length,
    };
  }

  /**
   * A commit's or a batch's records under its lease, with the writes they make: refused (their
   * bodies noted for deletion), or those that may stand inserted, first writer wins.
   */
  async #admit(
    ref: SessionRef,
    records: readonly ResultRecord[],
    lease: TurnLease | null,
    now: number,
    extra: (string | number)[][] = [],
  ) {
    const k = this.#keys(ref);
    const ids = [...new Set(records.map((r) => r.tool_use_id))];
    const mems = [...new Set(records.flatMap((r) => (r.mem_id === null ? [] : [r.mem_id])))];
    const [h, recs, named, orphans, ...rest] = await snapshot(this.#redis, [
      ["HGETALL", k.row],
      hmget(k.records, ids),
      hmget(k.mems, mems),
      ["HGETALL", k.orphans],
      ...extra,
    ]);
    const row = rowOf(hash(h));
    const ops: Op[] = [];
    const refused = refusalOf(lease, row.life, now);
    if (refused !== null) {
      const isNamed = new Set(mems.filter((_, i) => values(named)[i] != null));
      const noted = orphansOf(records, (m) => isNamed.has(m));
      if (noted.length > 0) ops.push(["HSET", "orphans", ...noted.flatMap((m) => [m, ""])]);
      return { k, row, ops, refused, noted: noted.length > 0, rest } as const;
    }
    const orphanMap = new Map(
      Object.entries(hash(orphans)).map(([m, d]) => [m, { deleted_at: intOrNull(d) }]),
    );
    const ok =
      orphanMap.size === 0 ? [...records] : admitted(records, (m) => orphanMap.get(m), lease!);
    const standing = new Map<string, ResultRecord>();
    values(recs).forEach((t, i) => {
      const r = parseRecord(t);
      if (r !== null) standing.set(ids[i]!, r);
    });
    const offloadedBefore = new Map(mems.map((m, i) => [m, values(named)[i] ?? null]));
    const inserted: ResultRecord[] = [];
    let n = row.n;
    const recordFields: string[] = [];
    const memFields: string[] = [];
    for (const r of ok) {
      if (standing.has(r.tool_use_id)) continue;
      standing.set(r.tool_use_id, r);
      inserted.push(r);
      recordFields.push(r.tool_use_id, JSON.stringify({ n: ++n, r } satisfies StoredRecord));
      if (r.mem_id !== null) {
        const before = offloadedBefore.get(r.mem_id) ?? null;
        // The tool a recall of this mem_id counts for: its offloaded record's.
        if (before === null || (before === "" && r.action === "offloaded")) {
          const tool = r.action === "offloaded" ? r.tool_name : "";
          offloadedBefore.set(r.mem_id, tool);
          memFields.push(r.mem_id, tool);
        }
      }
    }
    for (let i = 0; i < recordFields.length; i += 500)
      ops.push(["HSET", "records", ...recordFields.slice(i, i + 500)]);
    for (let i = 0; i < memFields.length; i += 500)
      ops.push(["HSET", "mems", ...memFields.slice(i, i + 500)]);
    const offloads = offloadsOf(inserted);
    for (const [tool, count] of Object.entries(offloads))
      ops.push(["HINCRBY", "offloaded", tool, count]);
    if (inserted.length > 0) ops.push(["HSET", "row", "n", n]);
    return {
      k,
      row,
      ops,
      refused: null,
      noted: false,
      rest,
      standing: records.flatMap((r) => standing.get(r.tool_use_id) ?? []),
      offloads,
    } as const;
  }

  /** A refused write's bodies noted for deletion: the sweep deletes them. */
  async #noteOrphans(ref: SessionRef, noted: boolean): Promise<void> {
    if (noted)
      await this.#redis.call("SADD", this.#orphaned, JSON.stringify([ref.tenant, ref.session]));
  }

  async addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult> {
    return optimistic(async () => {
      const now = this.#now();
      const a = await this.#admit(ref, batch.records, batch.lease, now);
      if (a.refused !== null) {
        if (!(await this.#write(a.k, a.row, a.ops))) return undefined;
        await this.#noteOrphans(ref, a.noted);
        return { records: [], offloads: {}, refused: a.refused };
      }
      if (!(await this.#write(a.k, a.row, [...a.ops, this.#touch(a.row, now)]))) return undefined;
      return { records: a.standing, offloads: a.offloads };
    });
  }

  async commit(ref: SessionRef, commit: SessionCommit): Promise<SessionCommitResult> {
    const memos = commit.finish?.memos ?? [];
    return optimistic(async () => {
      const now = this.#now();
      const k = this.#keys(ref);
      const a = await this.#admit(ref, commit.records, commit.lease, now, [
        hmget(k.anchors, anchorsOf(memos)),
      ]);
      if (a.refused !== null) {
        if (!(await this.#write(a.k, a.row, a.ops))) return undefined;
        await this.#noteOrphans(ref, a.noted);
        return { records: [], seq: 0, index_due: false, offloads: {}, refused: a.refused };
      }
      const { row, ops } = a;
      const seq = row.last_seq + 1;
      const due = indexDue(now, row.last_indexed);
      let log = commit.log;
      let calibration: string | null = null;
      if (commit.finish !== undefined) {
        const done = finishedLine(seq, log, commit.finish, JSON.parse(row.calibration));
        log = done.log;
        if (done.calibrations !== null) calibration = JSON.stringify(done.calibrations);
      }
      const fields: (string | number)[] = [
        "last_seq",
        seq,
        "calls",
        row.calls + 1,
        "last_active",
        now,
        "created_at",
        row.created_at ?? now,
        "recall_declared",
        row.recall_declared || commit.recall_declared ? 1 : 0,
        "last_indexed",
        due ? now : field(row.last_indexed),
        "tombstone_at",
        "",
        "last_begin",
        "",
        "times",
        JSON.stringify([...row.times, now].slice(-(GAP_WINDOW + 1))),
        "line_seq",
        seq,
      ];
      if (commit.decisions !== undefined)
        fields.push(
          "last_turn",
          JSON.stringify(lastTurnOf(commit.log, commit.decisions, now, commit.decisions_total)),
        );
      if (calibration !== null) fields.push("calibration", calibration);
      ops.push(["HSET", "row", ...fields]);
      ops.push(["HSET", "turns", seq, JSON.stringify({ log, at: now } satisfies StoredLine)]);
      if (seq > TURN_LOG_LIMIT) ops.push(["HDEL", "turns", seq - TURN_LOG_LIMIT]);
      if (seq > TURN_LOG_LIMIT) ops.push(["HDEL", "turnRecalls", seq - TURN_LOG_LIMIT]);
      if (memos.length > 0) ops.push(...this.#keepMemos(row, memos, a.rest[0]));
      if (!(await this.#write(a.k, row, ops))) return undefined;
      return { records: a.standing, seq, index_due: due, offloads: a.offloads };
    });
  }

  /** The memos' writes, after the session's others; the oldest beyond MEMO_LIMIT go. */
  #keepMemos(row: Row, memos: readonly ProxyMemo[], anchorsReply: unknown): Op[] {
    const anchors = anchorsOf(memos);
    const lists = new Map<string, number[]>();
    values(anchorsReply).forEach((t, i) => {
      lists.set(anchors[i]!, t === null ? [] : (JSON.parse(t) as number[]));
    });
    let seq = row.memo_seq;
    const first = seq + 1;
    const memoFields: (string | number)[] = [];
    for (const memo of memos) {
      seq++;
      memoFields.push(seq, JSON.stringify(memo));
      for (const anchor of new Set(memoAnchors(memo))) lists.get(anchor)!.push(seq);
    }
    const floor = seq - MEMO_LIMIT;
    const ops: Op[] = [
      ["HSET", "memos", ...memoFields],
      ["HSET", "row", "memo_seq", seq],
      [
        "HSET",
        "anchors",
        ...[...lists].flatMap(([a, l]) => [a, JSON.stringify(l.filter((s) => s > floor))]),
      ],
    ];
    // Memos that fall out of the window; anchors elsewhere naming them read as nothing.
    const gone: number[] = [];
    for (let s = Math.max(1, first - MEMO_LIMIT); s <= floor; s++) gone.push(s);
    if (gone.length > 0) ops.push(["HDEL", "memos", ...gone]);
    return ops;
  }

  async finish(ref: SessionRef, seq: number | null, finish: SessionFinish): Promise<void> {
    const memos = finish.memos ?? [];
    const k = this.#keys(ref);
    await optimistic(async () => {
      const now = this.#now();
      const [h, line, anchored] = await snapshot(this.#redis, [
        ["HGETALL", k.row],
        seq === null ? ["EXISTS", k.turns] : ["HGET", k.turns, seq],
        hmget(k.anchors, anchorsOf(memos)),
      ]);
      const row = rowOf(hash(h));
      // Deleted while the provider answered: the session stays gone.
      if (!live(row) && isGone(row.life)) return true;
      if (row.v === "0" && memos.length === 0) return true;
      const ops: Op[] = [this.#touch(row, now)];
      if (seq !== null && typeof line === "string") {
        const stored = JSON.parse(line) as StoredLine;
        const done = finishedLine(seq, stored.log, finish, JSON.parse(row.calibration));
        ops.push(["HSET", "turns", seq, JSON.stringify({ log: done.log, at: stored.at })]);
        if (done.calibrations !== null)
          ops.push(["HSET", "row", "calibration", JSON.stringify(done.calibrations)]);
      }
      if (memos.length > 0) ops.push(...this.#keepMemos(row, memos, anchored));
      return (await this.#write(k, row, ops)) ? true : undefined;
    });
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    const k = this.#keys(ref);
    const out = await optimistic(async () => {
      const [h, tool] = await snapshot(this.#redis, [
        ["HGETALL", k.row],
        ["HGET", k.mems, memId],
      ]);
      const row = rowOf(hash(h));
      // A recall of a session that is gone (deleted while the body was read) brings nothing back.
      if (!live(row) && isGone(row.life)) return { tool: null };
      const name = typeof tool === "string" && tool !== "" ? tool : null;
      const ops: Op[] = [this.#touch(row, this.#now()), ["HINCRBY", "recalls", memId, 1]];
      // The model read this back answering the latest logged turn's prompt.
      if (row.line_seq !== null) ops.push(["HINCRBY", "turnRecalls", row.line_seq, 1]);
      if (name !== null) ops.push(["HINCRBY", "toolRecalls", name, 1]);
      return (await this.#write(k, row, ops)) ? { tool: name } : undefined;
    });
    return out.tool;
  }

  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    const k = this.#keys(ref);
    return optimistic(async () => {
      const [h, reply] = await snapshot(this.#redis, [
        ["HGETALL", k.row],
        "seq" in key ? ["HGET", k.turns, key.seq] : ["HGETALL", k.turns],
      ]);
      const row = rowOf(hash(h));
      if (!live(row)) return { outcome: null };
      const lines: { seq: number; log: TurnLog; at: number }[] =
        "seq" in key
          ? typeof reply === "string"
            ? [{ seq: key.seq, ...(JSON.parse(reply) as StoredLine) }]
            : []
          : Object.entries(hash(reply))
              .map(([s, t]) => ({ seq: Number(s), ...(JSON.parse(t) as StoredLine) }))
              .sort((a, b) => a.seq - b.seq);
      const line = findTurn(lines, key);
      if (line === undefined) return { outcome: { status: "unknown_turn" } as UsageOutcome };
      const next = withUsage(line.seq, line.log, usage);
      if (next.log === null) return { outcome: next.outcome };
      const ops: Op[] = [
        ["HSET", "turns", line.seq, JSON.stringify({ log: next.log, at: line.at })],
      ];
      if (next.outcome.status === "recorded" && next.outcome.estimate !== null) {
        const learned = learnUsage(JSON.parse(row.calibration), usage, next.outcome.estimate);
        ops.push(["HSET", "row", "calibration", JSON.stringify(learned.calibrations)]);
      }
      return (await this.#write(k, row, ops)) ? { outcome: next.outcome } : undefined;
    }).then((o) => o.outcome);
  }

  /** Everything of a live session, read in one MULTI (null when there is none). */
  async #whole(ref: SessionRef) {
    const k = this.#keys(ref);
    const [h, records, turns, turnRecalls, recalls, offloaded, toolRecalls] = await snapshot(
      this.#redis,
      [
        ["HGETALL", k.row],
        ["HGETALL", k.records],
        ["HGETALL", k.turns],
        ["HGETALL", k.turnRecalls],
        ["HGETALL", k.recalls],
        ["HGETALL", k.offloaded],
        ["HGETALL", k.toolRecalls],
      ],
    );
    const row = rowOf(hash(h));
    if (!live(row)) return null;
    const counts = hash(turnRecalls);
    const lines: LoggedTurn[] = Object.entries(hash(turns))
      .map(([s, t]) => [Number(s), JSON.parse(t) as StoredLine] as const)
      .sort((a, b) => a[0] - b[0])
      .map(([s, l]) => loggedTurn(l.log, l.at, int(counts[String(s)])));
    const tools = hash(toolRecalls);
    return {
      row,
      records: Object.values(hash(records))
        .map((t) => JSON.parse(t) as StoredRecord)
        .sort((a, b) => a.n - b.n)
        .map((s) => s.r),
      lines,
      recalls: new Map(
        Object.entries(hash(recalls))
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([m, c]) => [m, Number(c)]),
      ),
      tools: Object.fromEntries(
        Object.entries(hash(offloaded))
          .filter(([, n]) => Number(n) > 0)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([t, n]): [string, ToolStats] => [
            t,
            { offloaded: Number(n), recalls: int(tools[t]) },
          ]),
      ),
    };
  }

  async describe(ref: SessionRef): Promise<SessionDetail | null> {
    const w = await this.#whole(ref);
    if (w === null) return null;
    return {
      tenant: ref.tenant,
      session: ref.session,
      calls: w.row.calls,
      recall_declared: w.row.recall_declared,
      recalls: recallTotal(w.recalls),
      tool_stats: w.tools,
      records: w.records,
      turns: w.lines,
      config: JSON.parse(w.row.config) as OffloadConfigPatch,
      created_at: w.row.created_at,
      last_active: w.row.last_active,
      recalls_by_mem_id: Object.fromEntries(w.recalls),
    };
  }

  async report(
    ref: SessionRef,
    options: { turns?: boolean } = {},
  ): Promise<SessionReportData | null> {
    const w = await this.#whole(ref);
    if (w === null) return null;
    return reportData(
      {
        ref,
        created_at: w.row.created_at,
        last_active: w.row.last_active,
        calls: w.row.calls,
        recall_declared: w.row.recall_declared,
        config: JSON.parse(w.row.config) as OffloadConfigPatch,
        records: w.records,
        recalls: w.recalls,
        turns: w.lines,
        last_turn: w.row.last_turn === null ? null : (JSON.parse(w.row.last_turn) as LastTurn),
      },
      options,
    );
  }

  async getConfig(ref: SessionRef): Promise<OffloadConfigPatch> {
    const row = rowOf(hash(await this.#redis.call("HGETALL", this.#keys(ref).row)));
    return live(row) ? (JSON.parse(row.config) as OffloadConfigPatch) : {};
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    const k = this.#keys(ref);
    await optimistic(async () => {
      const row = rowOf(hash(await this.#redis.call("HGETALL", k.row)));
      const ops: Op[] = [
        this.#touch(row, this.#now()),
        ["HSET", "row", "config", JSON.stringify(patch)],
      ];
      return (await this.#write(k, row, ops)) ? true : undefined;
    });
  }

  async destroy(ref: SessionRef): Promise<string[]> {
    const k = this.#keys(ref);
    const named = await optimistic(async () => {
      const [h, mems] = await snapshot(this.#redis, [
        ["HGETALL", k.row],
        ["HKEYS", k.mems],
      ]);
      const row = rowOf(hash(h));
      const names = live(row) ? (mems as string[]).slice().sort() : [];
      // The generation moves before anything is deleted: no turn that began earlier can commit.
      const life = startPurge(row.life, this.#now());
      const ops: Op[] = [
        [
          "HSET",
          "row",
          "epoch",
          life.epoch,
          "purging_since",
          field(life.purging_since),
          "tombstone_at",
          "",
          "last_begin",
          "",
          ...EMPTY_LIVE.flat(),
        ],
        ...LIVE_KEYS.map((key): Op => ["DEL", key]),
      ];
      return (await this.#write(k, row, ops)) ? names : undefined;
    });
    await this.#redis.call("SADD", this.#purging, JSON.stringify([ref.tenant, ref.session]));
    return named;
  }

  async purged(ref: SessionRef): Promise<void> {
    const k = this.#keys(ref);
    await optimistic(async () => {
      const row = rowOf(hash(await this.#redis.call("HGETALL", k.row)));
      if (row.life.purging_since === null) return true;
      const life = endPurge(row.life, this.#now());
      const ops: Op[] = [
        ["HSET", "row", "purging_since", "", "tombstone_at", field(life.tombstone_at)],
      ];
      return (await this.#write(k, row, ops)) ? true : undefined;
    });
    await this.#redis.call("SREM", this.#purging, JSON.stringify([ref.tenant, ref.session]));
  }

  async end(ref: SessionRef, options: { idle?: boolean } = {}): Promise<number | null> {
    const k = this.#keys(ref);
    const out = await optimistic(async () => {
      const now = this.#now();
      const row = rowOf(hash(await this.#redis.call("HGETALL", k.row)));
      if (!counts(row) || (options.idle === true && now - row.last_active < SESSION_END_MS))
        return { calls: null };
      const ok = await this.#write(k, row, [["HSET", "row", "ended_at", now]]);
      return ok ? { calls: row.calls } : undefined;
    });
    return out.calls;
  }

  /**
   * Sessions idle for SESSION_END_MS whose length is not counted yet (at most `limit`): the sweep's
   * list by activity, read oldest first; sessions counted, gone or expired leave it.
   */
  async ended(limit = 100): Promise<SessionRef[]> {
    const idleSince = this.#now() - SESSION_END_MS;
    const members = (await this.#redis.call(
      "ZRANGE",
      this.#active,
      "-inf",
      idleSince,
      "BYSCORE",
      "LIMIT",
      0,
      limit,
    )) as string[];
    const out: SessionRef[] = [];
    for (const member of members) {
      const [tenant, session] = JSON.parse(member) as [string, string];
      const ref = { tenant, session };
      const row = rowOf(hash(await this.#redis.call("HGETALL", this.#keys(ref).row)));
      if (counts(row) && row.last_active <= idleSince) out.push(ref);
      else if (!counts(row)) await this.#redis.call("ZREM", this.#active, member);
    }
    return out;
  }

  /**
   * Sessions whose purge was never confirmed (their caller failed): what the sweep purges again.
   * Idle sessions need no sweep: their keys expire.
   */
  async expired(limit = 100): Promise<SessionRef[]> {
    const out: SessionRef[] = [];
    const now = this.#now();
    for (const ref of await this.#members(this.#purging, limit)) {
      const row = rowOf(hash(await this.#redis.call("HGETALL", this.#keys(ref).row)));
      if (row.life.purging_since === null)
        await this.#redis.call("SREM", this.#purging, JSON.stringify([ref.tenant, ref.session]));
      else if (row.life.purging_since <= now - PURGE_GRACE_MS) out.push(ref);
    }
    return out;
  }

  /** Sessions with bodies noted for deletion (or deletions still remembered). */
  orphaned(limit = 100): Promise<SessionRef[]> {
    return this.#members(this.#orphaned, limit);
  }

  async #members(set: string, limit: number): Promise<SessionRef[]> {
    const reply = (await this.#redis.call("SRANDMEMBER", set, limit)) as string[] | null;
    return (reply ?? []).map((m) => {
      const [tenant, session] = JSON.parse(m) as [string, string];
      return { tenant, session };
    });
  }

  async pendingOrphans(ref: SessionRef, limit = 1000): Promise<string[]> {
    const all = hash(await this.#redis.call("HGETALL", this.#keys(ref).orphans));
    return Object.entries(all)
      .filter(([, d]) => d === "")
      .map(([m]) => m)
      .sort()
      .slice(0, limit);
  }

  /**
   * These bodies are gone: a record naming one is refused until a lease after now; deletions older
   * than a lease are forgotten, and the session leaves the sweep's set once nothing is left.
   */
  async orphansDeleted(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    const k = this.#keys(ref);
    const left = await optimistic(async () => {
      const now = this.#now();
      const [h, all] = await snapshot(this.#redis, [
        ["HGETALL", k.row],
        ["HGETALL", k.orphans],
      ]);
      const row = rowOf(hash(h));
      const orphans = hash(all);
      for (const m of memIds) if (orphans[m] === "") orphans[m] = String(now);
      const old = Object.keys(orphans).filter(
        (m) => orphans[m] !== "" && Number(orphans[m]) < now - TURN_LEASE_MS,
      );
      for (const m of old) delete orphans[m];
      const ops: Op[] = [];
      const done = memIds.filter((m) => orphans[m] !== undefined);
      if (done.length > 0) ops.push(["HSET", "orphans", ...done.flatMap((m) => [m, now])]);
      if (old.length > 0) ops.push(["HDEL", "orphans", ...old]);
      if (ops.length === 0) return Object.keys(orphans).length;
      return (await this.#write(k, row, ops)) ? Object.keys(orphans).length : undefined;
    });
    if (left === 0)
      await this.#redis.call("SREM", this.#orphaned, JSON.stringify([ref.tenant, ref.session]));
  }
}

/** A live session with calls whose length is still to be counted when it ends. */
function counts(row: Row): row is LiveRow {
  return live(row) && row.calls > 0 && row.ended_at === null;
}

/** The anchors memos are kept under. */
function anchorsOf(memos: readonly ProxyMemo[]): string[] {
  return [...new Set(memos.flatMap((m) => memoAnchors(m)))];
}

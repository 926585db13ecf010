/**
 * SessionDO: one per tenant+session (`idFromName("<tenant>/<session>")`), SQLite storage, RPC
 * methods. It is the authority for the session's sticky decisions, and it serializes the session's
 * turns: each method runs its SQL synchronously inside the object's input gate, so two commits
 * never interleave, and the second sees the first's records (first writer wins, state.ts). Bodies
 * never come here: the Worker writes R2 and sends only small records.
 *
 * A turn's protocol (turn-protocol.ts): `begin` answers the config, the records, the memos and a
 * lease in one call; `commit` (and `addRecords` for a large first sight) writes under that lease.
 * Every purge moves the session's generation first (lifecycle.ts), so a turn that began before a
 * delete or a retention purge cannot commit after it, and the session does not come back.
 *
 * The one alarm serves: retention (an idle session is purged OFFLOAD_RETENTION_SECONDS after its
 * last activity; 0 keeps sessions until deleted), a purge whose caller never confirmed it, the
 * tombstone's sweep, bodies noted for deletion, and the tenant statistics' exchange (the session
 * holds a copy: tenant-copy.ts).
 */
import { DurableObject } from "cloudflare:workers";
import type { OffloadConfigPatch } from "../config.ts";
import { promptOf, type TurnUsage } from "../core/billing.ts";
import { calibratedTokens, calibrationReady } from "../core/calibration.ts";
import type { ToolStats, TurnCommit } from "../core/ports.ts";
import { resolveModel } from "../core/pricing.ts";
import type {
  ProxyTurnNote,
  ResultRecord,
  SessionRef,
  TurnEstimate,
  TurnLog,
} from "../core/types.ts";
import type { Env } from "../env.ts";
import type { ProxyMemo, ProxyState, ProxyTurn } from "../proxy/port.ts";
import { purgeBodies } from "../store/composed.ts";
import { KvIndex } from "../store/kv.ts";
import type {
  LastTurn,
  SessionCommitResult,
  SessionDetail,
  SessionLoad,
  SessionReportData,
} from "../store/ports.ts";
import { R2Ledger } from "../store/r2.ts";
import { withTimeout } from "../store/timeout.ts";
import {
  type BeginAsk,
  type BeginState,
  type RecordsBatch,
  type RecordsResult,
  RPC_BUDGET_BYTES,
  refusalOf,
  type SessionBegin,
  TURN_LEASE_MS,
  type TurnLease,
} from "../store/turn-protocol.ts";
import {
  admitted,
  earliest,
  endPurge,
  FRESH_LIFECYCLE,
  isGone,
  type Lifecycle,
  leaseOf,
  ORPHAN_DELAY_MS,
  orphansOf,
  PURGE_GRACE_MS,
  startPurge,
  sweepAt,
} from "./lifecycle.ts";
import { anchoredMemos } from "./memos.ts";
import { lastTurnOf, latestOf, recordCounts, totalsOf } from "./report.ts";
import { type SessionRow, SessionTables } from "./session-tables.ts";
import {
  applyCommit,
  expiresAt,
  GAP_WINDOW,
  idleSince,
  indexDue,
  indexTtlSeconds,
  isExpired,
  MEMO_LIMIT,
  medianGap,
  offloadsOf,
  parseRetention,
  TURN_LOG_LIMIT,
  toolStatsOf,
} from "./state.ts";
import { TenantCopy } from "./tenant-copy.ts";
import { statsExchange } from "./tenant-shards.ts";
import { findTurn, type TurnKey, type UsageOutcome, withUsage } from "./usage.ts";

/** A session's very first read of the tenant's statistics waits at most this long. */
const FIRST_STATS_WAIT_MS = 1000;

export class SessionDO extends DurableObject<Env> {
  readonly #t: SessionTables;
  readonly #stats: TenantCopy;
  /** A new session's first read of the tenant's counts, until its first commit stores it. */
  #firstStats: { names: string[]; stats: Record<string, ToolStats>; at: number } | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#t = new SessionTables(ctx.storage);
    this.#stats = new TenantCopy(this.#t);
  }

  #retention(): number {
    return parseRetention(this.env.OFFLOAD_RETENTION_SECONDS);
  }

  /** How stale last_active may get before a begin moves it: a quarter of the retention. */
  #activityResolution(): number {
    const retention = this.#retention();
    return retention === 0 ? Number.POSITIVE_INFINITY : Math.max(1000, retention * 250);
  }

  /** Read once per object: only this object writes it. */
  #lifeCache: Lifecycle | undefined;

  #life(): Lifecycle {
    this.#lifeCache ??= this.#t.meta<Lifecycle>("lifecycle") ?? FRESH_LIFECYCLE;
    return this.#lifeCache;
  }

  #ref(): SessionRef | undefined {
    return this.#t.meta<SessionRef>("ref");
  }

  /** The lifecycle changes: the ref is kept with it, so the alarm can purge without a row. */
  #setLife(life: Lifecycle, ref: SessionRef): void {
    this.#lifeCache = life;
    this.#t.setMeta("lifecycle", life);
    this.#t.setMeta("ref", { tenant: ref.tenant, session: ref.session });
  }

  /** When the alarm must fire next, for whatever is due first. */
  #due(): number | null {
    if (this.#t.open(false) === null) return null;
    const life = this.#life();
    const row = this.#t.row();
    const orphans = this.#t.sql
      .exec<{ pending: number; oldest: number | null }>(
        "SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS pending, min(deleted_at) AS oldest FROM orphans",
      )
      .one();
    return earliest(
      row === null ? null : expiresAt(row.last_active, this.#retention()),
      life.purging_since === null ? null : life.purging_since + PURGE_GRACE_MS,
      row === null ? sweepAt(life) : null,
      orphans.pending > 0 ? Date.now() + ORPHAN_DELAY_MS : null,
      orphans.oldest === null ? null : orphans.oldest + TURN_LEASE_MS,
      this.#stats.due(),
    );
  }

  /** Arms the alarm for what is due, unless it already fires in time. */
  async #arm(): Promise<void> {
    const due = this.#due();
    if (due === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > due) await this.ctx.storage.setAlarm(due);
  }

  /**
   * A turn starts reading: activity (the retention clock restarts, so no alarm purges mid-turn)
   * and, on a tombstone, a begin the sweep must wait for. Writes only where storage exists.
   */
  #started(ref: SessionRef, row: SessionRow | null, now: number): TurnLease | null {
    const life = this.#life();
    // The turn's commit moves last_active; a begin only does when a long turn could otherwise
    // outlast the retention it has left (a write spared on almost every turn).
    if (row !== null && now - row.last_active >= this.#activityResolution())
      this.#t.sql.exec("UPDATE session SET last_active = ? WHERE id = 1", now);
    else if (row === null && life.tombstone_at !== null)
      this.#setLife({ ...life, last_begin: now }, ref);
    return leaseOf(life, now);
  }

  #state(
    row: SessionRow | null,
    ids: readonly string[],
    names: readonly string[],
    now: number,
    tenant: Record<string, ToolStats>,
  ): Omit<BeginState, "lease"> {
    if (row === null)
      return {
        records: [],
        answered: ids.length,
        recall_declared: false,
        session_tool_stats: {},
        tool_stats: tenant,
        calibrations: {},
        gap_seconds: null,
      };
    const times = this.#t.sql
      .exec<{ at: number }>("SELECT at FROM turns ORDER BY seq DESC LIMIT ?", GAP_WINDOW + 1)
      .toArray()
      .map((r) => r.at)
      .reverse();
    const { records, answered } = this.#t.recordsWithin(ids, RPC_BUDGET_BYTES);
    return {
      records,
      answered,
      recall_declared: row.recall_declared === 1,
      session_tool_stats:
        names.length === 0 ? {} : toolStatsOf(this.#t.allRecords(), this.#t.recalls(), names),
      tool_stats: tenant,
      calibrations: this.#stats.calibration.read(),
      gap_seconds: medianGap(times),
      idle_seconds: idleSince(times, now),
    };
  }

  /**
   * The tenant's statistics for a read, from the session's copy. A session that never held one
   * asks its shard now (once, bounded, best effort: the gate learns from the session alone without
   * it); afterwards a stale copy is only marked for the alarm's refresh, off the turn's path.
   * `refresh`: the alarm must be armed for that.
   */
  async #tenantStats(
    ref: SessionRef,
    names: readonly string[],
  ): Promise<{ stats: Record<string, ToolStats>; refresh: boolean }> {
    if (names.length === 0) return { stats: {}, refresh: false };
    const stored = this.#t.open(false) !== null;
    if (stored && this.#stats.filled()) {
      const stats = this.#stats.read(names);
      return { stats, refresh: this.#stats.want(names, Date.now()) };
    }
    const first = this.#firstStats;
    if (first !== null && names.every((n) => first.names.includes(n)))
      return { stats: first.stats, refresh: false };
    try {
      const { counts: stats } = await withTimeout(
        () => this.#exchange(ref)({}, names, []),
        FIRST_STATS_WAIT_MS,
      );
      // Kept until the session is written (its first commit fills the copy with it).
      this.#firstStats = { names: [...names], stats, at: Date.now() };
      if (this.#t.open(false) !== null) this.#keepFirstStats();
      return { stats, refresh: false };
    } catch {
      // The gate learns from the session alone until the alarm's refresh.
      return { stats: {}, refresh: stored && this.#stats.want(names, Date.now()) };
    }
  }

  /** The first read's counts, into the copy once the session has storage. */
  #keepFirstStats(): void {
    const first = this.#firstStats;
    if (first === null || this.#stats.filled()) return;
    this.#stats.fill(first.stats, first.names, first.at);
    this.#firstStats = null;
  }

  #exchange(ref: SessionRef) {
    return statsExchange(this.env, ref);
  }

  async begin(ref: SessionRef, ask: BeginAsk): Promise<SessionBegin> {
    const tenant =
      ask.ids === null ? { stats: {}, refresh: false } : await this.#tenantStats(ref, ask.names);
    const now = Date.now();
    const row = this.#t.row(ref);
    const lease = this.#started(ref, row, now);
    const memos = row === null ? [] : this.#anchored(ask.anchors);
    const ids =
      ask.ids === null ? null : [...ask.ids, ...memos.flatMap((m) => m.calls.map((c) => c.id))];
    const state = ids === null ? null : this.#state(row, ids, ask.names, now, tenant.stats);
    // The retention alarm re-arms itself for the later activity: only a refresh needs arming here.
    if (tenant.refresh || (state !== null && this.#stats.wantCalibration(now))) await this.#arm();
    return {
      config: row === null ? {} : (JSON.parse(row.config) as OffloadConfigPatch),
      state: state === null ? null : { ...state, lease },
      memos,
    };
  }

  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<SessionLoad> {
    const tenant = await this.#tenantStats(ref, toolNames);
    const now = Date.now();
    const row = this.#t.row(ref);
    const lease = this.#started(ref, row, now);
    const state = this.#state(row, toolUseIds, toolNames, now, tenant.stats);
    if (tenant.refresh || this.#stats.wantCalibration(now)) await this.#arm();
    return { ...state, lease };
  }

  /**
   * The records of `records` that may stand, or null when the commit is refused (its bodies are
   * then noted for deletion by the alarm).
   */
  #admit(
    records: readonly ResultRecord[],
    lease: TurnLease | null | undefined,
    now: number,
  ): ResultRecord[] | null {
    const life = this.#life();
    if (refusalOf(lease, { epoch: life.epoch, purging: life.purging_since !== null }, now)) {
      const noted = orphansOf(records, (m) => this.#t.names(m));
      for (const memId of noted)
        this.#t.sql.exec(
          "INSERT INTO orphans (mem_id, deleted_at) VALUES (?, NULL) ON CONFLICT (mem_id) DO UPDATE SET deleted_at = NULL",
          memId,
        );
      return null;
    }
    return admitted(records, (m) => this.#t.orphan(m), lease);
  }

  /** Inserts what stands (first writer wins); the tenant's deltas are noted for the alarm. */
  #insert(
    records: readonly ResultRecord[],
    shadow: boolean,
    now: number,
  ): { standing: ResultRecord[]; offloads: Record<string, number> } {
    const existing = new Map(
      this.#t.records(records.map((r) => r.tool_use_id)).map((r) => [r.tool_use_id, r]),
    );
    const { insert, standing } = applyCommit(existing, records);
    for (const r of insert)
      this.#t.sql.exec(
        "INSERT INTO records (tool_use_id, mem_id, record) VALUES (?, ?, ?)",
        r.tool_use_id,
        r.mem_id,
        JSON.stringify(r),
      );
    const offloads = offloadsOf(insert);
    // A shadow turn's offloads were never shown to the model as stubs: they would only teach
    // "never recalled".
    if (!shadow)
      this.#stats.note(
        Object.fromEntries(Object.entries(offloads).map(([t, n]) => [t, { offloaded: n }])),
        now,
      );
    return { standing, offloads };
  }

  async addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult> {
    const now = Date.now();
    this.#t.open(true); // outside the transaction: a rollback must not leave #ready true without the tables
    const result = this.ctx.storage.transactionSync((): RecordsResult => {
      const ok = this.#admit(batch.records, batch.lease, now);
      if (ok === null) return { records: [], offloads: {}, refused: "deleted" };
      this.#t.touch(ref, now);
      const { standing, offloads } = this.#insert(ok, batch.shadow, now);
      return { records: standing, offloads };
    });
    await this.#arm();
    return result;
  }

  async commit(ref: SessionRef, commit: TurnCommit): Promise<SessionCommitResult> {
    const now = Date.now();
    this.#t.open(true);
    const result = this.ctx.storage.transactionSync((): SessionCommitResult => {
      const ok = this.#admit(commit.records, commit.lease as TurnLease | undefined, now);
      if (ok === null)
        return { records: [], index_due: false, offloads: {}, turn_seq: 0, refused: "deleted" };
      // One write of the session's row per turn (rows written are what a turn costs most).
      const row = this.#t.ensure(ref, now);
      this.#keepFirstStats();
      const { standing, offloads } = this.#insert(ok, commit.log.shadow, now);
      const due = indexDue(now, row.last_indexed);
      this.#t.sql.exec(
        "UPDATE session SET calls = calls + 1, recall_declared = max(recall_declared, ?), last_indexed = ?, last_active = ? WHERE id = 1",
        commit.recall_declared ? 1 : 0,
        due ? now : row.last_indexed,
        now,
      );
      const seq = this.#t.sql
        .exec<{ seq: number }>(
          "INSERT INTO turns (log, at) VALUES (?, ?) RETURNING seq",
          JSON.stringify(commit.log),
          now,
        )
        .one().seq;
      this.#t.sql.exec(
        "DELETE FROM turns WHERE seq <= (SELECT max(seq) FROM turns) - ?",
        TURN_LOG_LIMIT,
      );
      if (commit.decisions !== undefined) {
        this.#t.sql.exec(
          "INSERT INTO last_turn (id, turn) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET turn = excluded.turn",
          JSON.stringify(lastTurnOf(commit.log, commit.decisions, now, commit.decisions_total)),
        );
      }
      // Written again: the session is alive, its tombstone (if any) is gone.
      const life = this.#life();
      if (life.tombstone_at !== null)
        this.#setLife({ ...life, tombstone_at: null, last_begin: null }, ref);
      return { records: standing, index_due: due, offloads, turn_seq: seq };
    });
    await this.#arm();
    return result;
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    // A recall of a session that is gone (deleted while the body was read) brings nothing back.
    if (this.#t.row(ref) === null && isGone(this.#life())) return null;
    const now = Date.now();
    this.#t.open(true);
    const tool = this.ctx.storage.transactionSync(() => {
      this.#t.touch(ref, now);
      this.#t.sql.exec(
        "INSERT INTO recalls (mem_id, count) VALUES (?, 1) ON CONFLICT (mem_id) DO UPDATE SET count = count + 1",
        memId,
      );
      // The model read this back answering the latest logged turn's prompt.
      this.#t.sql.exec(
        "UPDATE turns SET recalls = recalls + 1 WHERE seq = (SELECT max(seq) FROM turns)",
      );
      const named = this.#t.sql
        .exec<{ record: string }>("SELECT record FROM records WHERE mem_id = ? LIMIT 1", memId)
        .toArray()[0];
      const record = named === undefined ? null : (JSON.parse(named.record) as ResultRecord);
      const tool = record !== null && record.action === "offloaded" ? record.tool_name : null;
      if (tool !== null) this.#stats.note({ [tool]: { recalls: 1 } }, now);
      return tool;
    });
    await this.#arm();
    return tool;
  }

  describe(ref: SessionRef): SessionDetail | null {
    const row = this.#t.row(ref);
    if (row === null) return null;
    const recalls = this.#t.recalls();
    const records = this.#t.allRecords();
    return {
      tenant: row.tenant,
      session: row.session,
      calls: row.calls,
      recall_declared: row.recall_declared === 1,
      recalls: [...recalls.values()].reduce((n, c) => n + c, 0),
      tool_stats: toolStatsOf(records, recalls),
      records,
      turns: this.#t.turns(),
      config: JSON.parse(row.config) as OffloadConfigPatch,
      created_at: row.created_at,
      last_active: row.last_active,
      recalls_by_mem_id: Object.fromEntries(recalls),
    };
  }

  report(ref: SessionRef, options: { turns?: boolean } = {}): SessionReportData | null {
    const row = this.#t.row(ref);
    if (row === null) return null;
    const recalls = this.#t.recalls();
    const turns = this.#t.turns();
    const last = this.#t.sql
      .exec<{ turn: string }>("SELECT turn FROM last_turn WHERE id = 1")
      .toArray()[0];
    return {
      tenant: row.tenant,
      session: row.session,
      created_at: row.created_at,
      last_active: row.last_active,
      calls: row.calls,
      recall_declared: row.recall_declared === 1,
      config: JSON.parse(row.config) as OffloadConfigPatch,
      // Only the action and mem_id of each record: the stubs stay in SQLite.
      records: recordCounts(
        this.#t.sql
          .exec<{ action: ResultRecord["action"]; mem_id: string | null }>(
            "SELECT json_extract(record, '$.action') AS action, mem_id FROM records",
          )
          .toArray(),
        recalls,
      ),
      recalls: [...recalls.values()].reduce((n, c) => n + c, 0),
      totals: totalsOf(turns),
      latest: latestOf(turns),
      turns: options.turns === false ? [] : turns,
      last_turn: last === undefined ? null : (JSON.parse(last.turn) as LastTurn),
    };
  }

  getConfig(ref: SessionRef): OffloadConfigPatch {
    const row = this.#t.row(ref);
    return row === null ? {} : (JSON.parse(row.config) as OffloadConfigPatch);
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    this.#t.open(true);
    this.ctx.storage.transactionSync(() => {
      this.#t.touch(ref, Date.now());
      this.#t.sql.exec("UPDATE session SET config = ? WHERE id = 1", JSON.stringify(patch));
    });
    await this.#arm();
  }

  /**
   * The memos anchored on one of `anchors` (SQLite picks them out: the others are not even parsed).
   */
  #anchored(anchors: readonly string[] | undefined): ProxyMemo[] {
    if (anchors === undefined || anchors.length === 0) return [];
    const rows = this.#t.sql
      .exec<{ memo: string }>(
        `SELECT memo FROM memos WHERE
           json_extract(memo, '$.from') IN (SELECT value FROM json_each(?1))
           OR EXISTS (SELECT 1 FROM json_each(memo, '$.anchors') a WHERE a.value IN (SELECT value FROM json_each(?1)))
         ORDER BY seq`,
        JSON.stringify(anchors),
      )
      .toArray();
    return anchoredMemos(
      rows.map((r) => JSON.parse(r.memo) as ProxyMemo),
      anchors,
    );
  }

  #memos(): ProxyMemo[] {
    return this.#t.sql
      .exec<{ memo: string }>("SELECT memo FROM memos ORDER BY seq")
      .toArray()
      .map((r) => JSON.parse(r.memo) as ProxyMemo);
  }

  /**
   * The config layer and the proxy's memos in one read (a proxied call makes it before compacting).
   */
  proxyState(ref: SessionRef): ProxyState {
    const row = this.#t.row(ref);
    if (row === null) return { config: {}, memos: [] };
    return { config: JSON.parse(row.config) as OffloadConfigPatch, memos: this.#memos() };
  }

  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    // Deleted while the provider answered: the session stays gone.
    if (this.#t.row(ref) === null && isGone(this.#life())) return;
    this.#t.open(true);
    this.ctx.storage.transactionSync(() => {
      this.#t.touch(ref, Date.now());
      if (turn.turn_seq !== null) {
        const line = this.#t.sql
          .exec<{ log: string }>("SELECT log FROM turns WHERE seq = ?", turn.turn_seq)
          .toArray()[0];
        if (line !== undefined) {
          const note: ProxyTurnNote = {
            hops: turn.note.hops,
            recalls: turn.note.recalls,
            exhausted: turn.note.exhausted,
          };
          let log: TurnLog = { ...(JSON.parse(line.log) as TurnLog), proxy: note };
          // Learned once: only when the line takes this usage (a repeat changes nothing).
          if (turn.usage !== undefined && log.usage === undefined) {
            const usage = this.#learn(turn.usage, turn.estimate ?? log.estimate ?? null);
            log = withUsage(turn.turn_seq, log, usage).log ?? log;
          }
          this.#t.sql.exec(
            "UPDATE turns SET log = ? WHERE seq = ?",
            JSON.stringify(log),
            turn.turn_seq,
          );
        }
      }
      for (const memo of turn.memos)
        this.#t.sql.exec("INSERT INTO memos (memo) VALUES (?)", JSON.stringify(memo));
      if (turn.memos.length > 0)
        this.#t.sql.exec(
          "DELETE FROM memos WHERE seq <= (SELECT max(seq) FROM memos) - ?",
          MEMO_LIMIT,
        );
    });
    await this.#arm();
  }

  /**
   * Keeps a turn's measured usage on its log line (the first report stands; the same numbers again
   * change nothing). Null for an unknown session.
   */
  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    if (this.#t.row(ref) === null) return null;
    const outcome = this.ctx.storage.transactionSync((): UsageOutcome => {
      const lines = this.#t.sql
        .exec<{ seq: number; log: string }>(
          "seq" in key
            ? "SELECT seq, log FROM turns WHERE seq = ?"
            : "SELECT seq, log FROM turns WHERE json_extract(log, '$.turn') = ? ORDER BY seq DESC LIMIT 1",
          "seq" in key ? key.seq : key.turn,
        )
        .toArray()
        .map((r) => ({ seq: r.seq, log: JSON.parse(r.log) as TurnLog }));
      const line = findTurn(lines, key);
      if (line === undefined) return { status: "unknown_turn" };
      const next = withUsage(line.seq, line.log, usage);
      if (next.outcome.status === "recorded" && next.outcome.estimate !== null)
        this.#learn(usage, next.outcome.estimate);
      if (next.log !== null)
        this.#t.sql.exec(
          "UPDATE turns SET log = ? WHERE seq = ?",
          JSON.stringify(next.log),
          line.seq,
        );
      return next.outcome;
    });
    return outcome;
  }

  /**
   * A measured turn calibrates the tenant's estimates for its model: the session's copy at once,
   * the tenant's with the next exchange (calibration-copy.ts). The client's own call against the
   * request as sent (the hops' calls are requests we built, not estimated). Returns the usage with
   * the removed tokens at the refined calibration, once it is ready. In the caller's transaction.
   */
  #learn(usage: TurnUsage, estimate: TurnEstimate | null): TurnUsage {
    const model = estimate === null ? undefined : resolveModel(usage.model ?? estimate.model)?.id;
    if (estimate === null || model === undefined) return usage;
    const cal = this.#stats.calibration.learn(
      { model, estimate: estimate.sent, measured: promptOf(usage.first) },
      Date.now(),
    );
    return calibrationReady(cal)
      ? { ...usage, removed_calibrated: calibratedTokens(cal, estimate.removed) }
      : usage;
  }

  /**
   * Starts a purge: the generation moves (no turn that began earlier can commit), the session's
   * own tables are emptied, and new turns pass through until `purged` (or the alarm, should the
   * caller never confirm). Returns the mem_ids the records named, for the caller's purge.
   */
  async destroy(ref: SessionRef): Promise<string[]> {
    this.#t.open(true);
    const named = this.ctx.storage.transactionSync(() => {
      const row = this.#t.row(ref);
      const names = row === null ? [] : this.#t.memIds();
      this.#setLife(startPurge(this.#life(), Date.now()), ref);
      this.#t.clearSession();
      return names;
    });
    await this.#arm();
    return named;
  }

  /** The caller's purge is done: turns may write again; a tombstone waits for the sweep. */
  async purged(ref: SessionRef): Promise<void> {
    const life = this.#life();
    if (life.purging_since === null) return;
    this.#setLife(endPurge(life, Date.now()), ref);
    await this.#arm();
  }

  #purgeBackends(ref: SessionRef, named: readonly string[]): Promise<void> {
    return purgeBodies(ref, named, new R2Ledger(this.env.LEDGER), this.#index());
  }

  #index(): KvIndex {
    return new KvIndex(this.env.INDEX, { ttlSeconds: indexTtlSeconds(this.#retention()) });
  }

  override async alarm(): Promise<void> {
    // Read afresh: the alarm decides what to purge from what storage holds.
    this.#lifeCache = undefined;
    if (this.#t.open(false) === null) return;
    const ref = this.#ref() ?? this.#t.row() ?? undefined;
    const now = Date.now();
    const life = this.#life();
    const row = this.#t.row();
    if (ref !== undefined) {
      // A purge nobody confirmed (its caller failed half way): purge again, then confirm.
      if (life.purging_since !== null && now >= life.purging_since + PURGE_GRACE_MS) {
        await this.#purgeBackends(ref, []);
        await this.purged(ref);
        return this.#rearm();
      }
      // Retention: the generation moves first, then the backends are purged.
      if (row !== null && isExpired(now, row.last_active, this.#retention())) {
        await this.destroy(ref);
        await this.#purgeBackends(ref, []);
        await this.purged(ref);
        return this.#rearm();
      }
      // The tombstone: a lease after the purge and the last begin since, nothing older can write.
      const sweep = sweepAt(life);
      if (row === null && sweep !== null && now >= sweep) {
        this.#setLife(startPurge(life, now), ref);
        await this.#purgeBackends(ref, []);
        await this.#syncStats(ref);
        if (this.#t.row() === null) {
          await this.ctx.storage.deleteAlarm();
          await this.ctx.storage.deleteAll();
          this.#t.forget();
          this.#lifeCache = undefined;
          return;
        }
        await this.purged(ref);
      }
      await this.#deleteOrphans(ref);
      await this.#syncStats(ref);
    }
    await this.#rearm();
  }

  async #rearm(): Promise<void> {
    const due = this.#due();
    if (due === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.max(due, Date.now() + 100));
  }

  /**
   * Deletes the bodies noted for deletion. A record naming one is refused meanwhile, and until a
   * lease after it is gone (a turn that began before may have written it again).
   */
  async #deleteOrphans(ref: SessionRef): Promise<void> {
    const due = this.#t.sql
      .exec<{ mem_id: string }>("SELECT mem_id FROM orphans WHERE deleted_at IS NULL LIMIT 1000")
      .toArray()
      .map((r) => r.mem_id);
    if (due.length > 0) {
      await this.#index().deleteBodies(ref, due);
      await new R2Ledger(this.env.LEDGER).delete(ref, due);
      const now = Date.now();
      for (const memId of due)
        this.#t.sql.exec(
          "UPDATE orphans SET deleted_at = ? WHERE mem_id = ? AND deleted_at IS NULL",
          now,
          memId,
        );
    }
    this.#t.sql.exec(
      "DELETE FROM orphans WHERE deleted_at IS NOT NULL AND deleted_at < ?",
      Date.now() - TURN_LEASE_MS,
    );
  }

  /** Best effort: a failed exchange leaves the deltas pending for the next alarm. */
  async #syncStats(ref: SessionRef): Promise<void> {
    if (this.#stats.due() === null) return;
    try {
      await this.#stats.sync(this.#exchange(ref), Date.now);
    } catch (cause) {
      console.error(
        `[edge-offload] the tenant statistics exchange failed: ${cause instanceof Error ? cause.message.slice(0, 200) : "unknown error"}`,
      );
    }
  }
}

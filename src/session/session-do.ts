/**
 * SessionDO: one per tenant+session (`idFromName("<tenant>/<session>")`), SQLite storage, RPC
 * methods. It is the authority for the session's sticky decisions, and it serializes the session's
 * turns: each method runs its SQL synchronously inside the object's input gate, so two commits
 * never interleave, and the second sees the first's records (first writer wins, state.ts). Bodies
 * never come here: the Worker writes R2 and sends only small records.
 *
 * A turn's protocol (turn-protocol.ts): `begin` answers the config, the records, the memos and a
 * lease in one call (session-begin.ts); `commit` (and `addRecords` for a large first sight) writes
 * under that lease (session-commit.ts). Every purge moves the session's generation first
 * (lifecycle.ts), so a turn that began before a delete or a retention purge cannot commit after
 * it, and the session does not come back. A commit that only logs its turn (a steady turn) is held
 * in memory and written later with others, and so is the calibration sample a measured turn teaches
 * (held-writes.ts): every other method that reads or writes the turn log writes what is held first,
 * and a purge drops the held lines.
 *
 * The one alarm (session-alarm.ts, armed by session-life.ts) serves: retention (an idle session is
 * purged OFFLOAD_RETENTION_SECONDS after its last activity; 0 keeps sessions until deleted), a
 * purge whose caller never confirmed it, the tombstone's sweep, bodies noted for deletion, and the
 * tenant statistics' exchange (the session holds a copy: tenant-copy.ts).
 *
 * The RPC methods stay here (workerd calls them by name) and delegate to those pieces.
 */
import { DurableObject } from "cloudflare:workers";
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { TurnCommit } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import type { Env } from "../env.ts";
import type { ProxyState, ProxyTurn } from "../proxy/port.ts";
import type {
  SessionCommitResult,
  SessionDetail,
  SessionLoad,
  SessionReportData,
} from "../store/ports.ts";
import type {
  BeginAsk,
  RecordsBatch,
  RecordsResult,
  SessionBegin,
} from "../store/turn-protocol.ts";
import { HeldWrites, parseLineWindow } from "./held-writes.ts";
import { SessionAlarm } from "./session-alarm.ts";
import { SessionBeginReads } from "./session-begin.ts";
import { SessionCommits } from "./session-commit.ts";
import { SessionLife, type SessionParts } from "./session-life.ts";
import { SessionTables } from "./session-tables.ts";
import { SessionUsage } from "./session-usage.ts";
import { describeSession, proxyStateOf, sessionReport } from "./session-views.ts";
import { TenantCopy } from "./tenant-copy.ts";
import type { TurnKey, UsageOutcome } from "./usage.ts";

export class SessionDO extends DurableObject<Env> {
  readonly #t: SessionTables;
  readonly #held: HeldWrites;
  readonly #life: SessionLife;
  readonly #begin: SessionBeginReads;
  readonly #commits: SessionCommits;
  readonly #usage: SessionUsage;
  readonly #alarm: SessionAlarm;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#t = new SessionTables(ctx.storage);
    const stats = new TenantCopy(this.#t);
    this.#held = new HeldWrites(
      this.#t,
      ctx.storage,
      () => parseLineWindow(env.OFFLOAD_TURN_LOG_WINDOW_MS),
      stats.calibration,
    );
    const parts: SessionParts = {
      t: this.#t,
      held: this.#held,
      stats,
      storage: ctx.storage,
      env,
    };
    this.#life = new SessionLife(parts);
    this.#begin = new SessionBeginReads(parts, this.#life);
    this.#commits = new SessionCommits(parts, this.#life, this.#begin);
    this.#usage = new SessionUsage(parts, this.#life);
    this.#alarm = new SessionAlarm(parts, this.#life);
  }

  begin(ref: SessionRef, ask: BeginAsk): Promise<SessionBegin> {
    return this.#begin.begin(ref, ask);
  }

  load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<SessionLoad> {
    return this.#begin.load(ref, toolUseIds, toolNames);
  }

  addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult> {
    return this.#commits.addRecords(ref, batch);
  }

  commit(ref: SessionRef, commit: TurnCommit): Promise<SessionCommitResult> {
    return this.#commits.commit(ref, commit);
  }

  noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    return this.#commits.noteRecall(ref, memId);
  }

  describe(ref: SessionRef): SessionDetail | null {
    this.#held.flush();
    return describeSession(this.#t, ref);
  }

  report(ref: SessionRef, options: { turns?: boolean } = {}): SessionReportData | null {
    this.#held.flush();
    return sessionReport(this.#t, ref, options);
  }

  getConfig(ref: SessionRef): OffloadConfigPatch {
    const row = this.#t.row(ref);
    return row === null ? {} : (JSON.parse(row.config) as OffloadConfigPatch);
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    this.#t.open(true);
    this.ctx.storage.transactionSync(() => {
      this.#held.write();
      this.#t.touch(ref, Date.now());
      this.#t.sql.exec("UPDATE session SET config = ? WHERE id = 1", JSON.stringify(patch));
    });
    await this.#life.arm();
  }

  /**
   * The config layer and the proxy's memos in one read (a proxied call makes it before compacting).
   */
  proxyState(ref: SessionRef): ProxyState {
    return proxyStateOf(this.#t, ref);
  }

  finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    return this.#usage.finishProxyTurn(ref, turn);
  }

  /**
   * Keeps a turn's measured usage on its log line (the first report stands; the same numbers again
   * change nothing). Null for an unknown session.
   */
  recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    return this.#usage.recordUsage(ref, key, usage);
  }

  /**
   * Starts a purge: the generation moves (no turn that began earlier can commit), the session's
   * own tables are emptied, and new turns pass through until `purged` (or the alarm, should the
   * caller never confirm). Returns the mem_ids the records named, for the caller's purge.
   */
  destroy(ref: SessionRef): Promise<string[]> {
    return this.#alarm.destroy(ref);
  }

  /** The caller's purge is done: turns may write again; a tombstone waits for the sweep. */
  purged(ref: SessionRef): Promise<void> {
    return this.#alarm.purged(ref);
  }

  override alarm(): Promise<void> {
    return this.#alarm.run();
  }
}

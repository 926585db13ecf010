/**
 * SessionDO: one per tenant+session (`idFromName("<tenant>/<session>")`), a thin host of the SQL
 * session state (sql-session.ts) in its own SQLite, plus the one alarm. Its RPC methods are the
 * `SessionState` port's; each is one transaction of the object's storage, and the object runs them
 * one at a time, so two commits never interleave and the second sees the first's records. Bodies
 * never come here: the Worker writes R2 and sends only small records.
 *
 * The alarm serves retention (an idle session is purged OFFLOAD_RETENTION_SECONDS after its last
 * activity; 0 keeps sessions until deleted), the session's end (idle for an hour, or purged: its
 * length goes to the tenant's learning, once, session-lengths.ts), a purge whose caller never
 * confirmed it, the tombstone's sweep (once no turn that began before the purge can write, the
 * object's storage is emptied) and the bodies a refused commit wrote. Every write re-arms it for
 * what is due first.
 */
import { DurableObject } from "cloudflare:workers";
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { TurnAsk } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import type { Env } from "../env.ts";
import { OffloadError } from "../errors.ts";
import { describeCause } from "./backend-calls.ts";
import { durableTenants } from "./durable.ts";
import { KvIndex } from "./kv.ts";
import { PURGE_GRACE_MS, sweepAt } from "./lifecycle.ts";
import type {
  RecordsBatch,
  RecordsResult,
  SessionCommit,
  SessionCommitResult,
  SessionDetail,
  SessionFinish,
  SessionReportData,
  SessionStart,
  TurnKey,
  UsageOutcome,
} from "./ports.ts";
import { purgeBodies } from "./purge.ts";
import { R2Ledger } from "./r2.ts";
import { durableSql } from "./sql.ts";
import { alarmDue, SqlSessionState } from "./sql-session.ts";
import { indexTtlSeconds, isExpired, parseRetention, sessionObjectName } from "./state.ts";

export class SessionDO extends DurableObject<Env> {
  readonly #state: SqlSessionState;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#state = new SqlSessionState(durableSql(ctx.storage), {
      retentionSeconds: parseRetention(env.OFFLOAD_RETENTION_SECONDS),
    });
  }

  /** An object answers only for the session it is named after (guards against a name mix-up). */
  #check(ref: SessionRef): void {
    const name = this.ctx.id.name;
    if (name !== undefined && name !== sessionObjectName(ref))
      throw new OffloadError("internal", "session state belongs to another session");
  }

  /** A write's result, once the alarm is armed for what it made due. */
  async #armed<T>(ref: SessionRef, result: T): Promise<T> {
    const state = await this.#state.alarmState(ref);
    const due = state === null ? null : alarmDue(state, this.#state.retentionSeconds, Date.now());
    if (due === null) return result;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > due) await this.ctx.storage.setAlarm(due);
    return result;
  }

  begin(ref: SessionRef, ask: TurnAsk): Promise<SessionStart> {
    this.#check(ref);
    return this.#state.begin(ref, ask);
  }

  records(ref: SessionRef, ids: readonly string[]) {
    this.#check(ref);
    return this.#state.records(ref, ids);
  }

  async addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult> {
    this.#check(ref);
    return this.#armed(ref, await this.#state.addRecords(ref, batch));
  }

  async commit(ref: SessionRef, commit: SessionCommit): Promise<SessionCommitResult> {
    this.#check(ref);
    return this.#armed(ref, await this.#state.commit(ref, commit));
  }

  async finish(ref: SessionRef, seq: number | null, finish: SessionFinish): Promise<void> {
    this.#check(ref);
    await this.#state.finish(ref, seq, finish);
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    this.#check(ref);
    return this.#armed(ref, await this.#state.noteRecall(ref, memId));
  }

  recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    this.#check(ref);
    return this.#state.recordUsage(ref, key, usage);
  }

  describe(ref: SessionRef): Promise<SessionDetail | null> {
    this.#check(ref);
    return this.#state.describe(ref);
  }

  report(ref: SessionRef, options: { turns?: boolean } = {}): Promise<SessionReportData | null> {
    this.#check(ref);
    return this.#state.report(ref, options);
  }

  getConfig(ref: SessionRef): Promise<OffloadConfigPatch> {
    this.#check(ref);
    return this.#state.getConfig(ref);
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    this.#check(ref);
    await this.#armed(ref, await this.#state.setConfig(ref, patch));
  }

  async destroy(ref: SessionRef): Promise<string[]> {
    this.#check(ref);
    return this.#armed(ref, await this.#state.destroy(ref));
  }

  async purged(ref: SessionRef): Promise<void> {
    this.#check(ref);
    await this.#armed(ref, await this.#state.purged(ref));
  }

  end(ref: SessionRef, options: { idle?: boolean } = {}): Promise<number | null> {
    this.#check(ref);
    return this.#state.end(ref, options);
  }

  /** The alarm: whatever is due, then the next alarm. */
  override async alarm(): Promise<void> {
    const state = this.#state;
    const ref = (await state.refs(1))[0];
    const now = Date.now();
    const due = ref === undefined ? null : await state.alarmState(ref);
    if (ref === undefined || due === null) return;
    const { life } = due;
    if (life.purging_since !== null && now >= life.purging_since + PURGE_GRACE_MS) {
      // A purge nobody confirmed (its caller failed half way): purge again, then confirm.
      await this.#purgeBackends(ref, []);
      await state.purged(ref);
    } else if (
      due.last_active !== null &&
      isExpired(now, due.last_active, state.retentionSeconds)
    ) {
      // Retention: the session has ended; the generation moves first, then the backends are purged.
      await this.#ended(ref, false);
      const named = await state.destroy(ref);
      await this.#purgeBackends(ref, named);
      await state.purged(ref);
    } else {
      if (due.end_at !== null && now >= due.end_at) await this.#ended(ref, true);
      const sweep = sweepAt(life);
      if (due.last_active === null && sweep !== null && now >= sweep) {
        // The tombstone: a lease after the purge and the last begin since, nothing older can
        // write. The session's prefix is purged once more, then the object emptied.
        await state.destroy(ref);
        await this.#purgeBackends(ref, []);
        if ((await state.alarmState(ref))?.last_active === null) {
          await this.ctx.storage.deleteAlarm();
          await this.ctx.storage.deleteAll();
          state.forget();
          return;
        }
        await state.purged(ref);
      }
      await this.#deleteOrphans(ref);
    }
    const next = await state.alarmState(ref);
    const at = next === null ? null : alarmDue(next, state.retentionSeconds, Date.now());
    if (at === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.max(at, Date.now() + 100));
  }

  /**
   * The session ended: its length goes to the tenant's learning, once. Best effort (a lost length
   * only slows the horizon's learning): a failed addition is logged, not retried.
   */
  async #ended(ref: SessionRef, idle: boolean): Promise<void> {
    const calls = await this.#state.end(ref, { idle });
    if (calls === null) return;
    try {
      await durableTenants(this.env.TENANTS).add(ref.tenant, { ended: [calls] });
    } catch (cause) {
      console.error(
        `[edge-offload] the session length's learning write failed: ${describeCause(cause)}`,
      );
    }
  }

  #index(): KvIndex {
    return new KvIndex(this.env.INDEX, {
      ttlSeconds: indexTtlSeconds(this.#state.retentionSeconds),
    });
  }

  #purgeBackends(ref: SessionRef, named: readonly string[]): Promise<void> {
    return purgeBodies(ref, named, new R2Ledger(this.env.LEDGER), this.#index());
  }

  /**
   * Deletes the bodies noted for deletion. A record naming one is refused meanwhile, and until a
   * lease after it is gone (a turn that began before may have written it again).
   */
  async #deleteOrphans(ref: SessionRef): Promise<void> {
    const due = await this.#state.pendingOrphans(ref);
    if (due.length > 0) {
      await this.#index().deleteBodies(ref, due);
      await new R2Ledger(this.env.LEDGER).delete(ref, due);
    }
    await this.#state.orphansDeleted(ref, due);
  }
}

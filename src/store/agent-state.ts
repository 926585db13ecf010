/**
 * The session state in an agent's own Durable Object: the SessionDO's rules (state.ts, report.ts)
 * over `eo_` tables keyed by tenant and session, beside the agent's own tables. Each method runs its
 * SQL synchronously (writes in one `transactionSync`), so within the object no two turns interleave
 * and the second sees the first's records, as in the SessionDO. Retention is the agent's: its
 * lifetime is the conversation's, and `destroy` forgets a session when the app clears it (never the
 * rest of the object's storage). The rows and their reads are in agent-state-rows.ts, the writes in
 * agent-state-writes.ts.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { TurnCommit } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import type { ProxyMemo, ProxyState, ProxyTurn } from "../proxy/port.ts";
import { recallTotal, reportData } from "../session/report.ts";
import { GAP_WINDOW, medianGap, toolStatsOf } from "../session/state.ts";
import type { TurnKey, UsageOutcome } from "../session/usage.ts";
import { type AgentStorage, sqlOf } from "./agent-sql.ts";
import {
  KEY,
  recallsOf,
  recordsOf,
  type SessionRow,
  sessionRow,
  turnsOf,
} from "./agent-state-rows.ts";
import {
  commitRows,
  destroyRows,
  finishProxyRows,
  noteRecallRows,
  recordUsageRows,
  touch,
} from "./agent-state-writes.ts";
import type {
  LastTurn,
  SessionCommitResult,
  SessionDetail,
  SessionLoad,
  SessionReportData,
  SessionStatePort,
} from "./ports.ts";

export class AgentSessionState implements SessionStatePort {
  readonly #storage: AgentStorage;
  readonly #now: () => number;

  constructor(storage: AgentStorage, options: { now?: () => number } = {}) {
    this.#storage = storage;
    this.#now = options.now ?? Date.now;
  }

  get #sql() {
    return sqlOf(this.#storage);
  }

  #row(ref: SessionRef): SessionRow | null {
    return sessionRow(this.#sql, ref);
  }

  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<SessionLoad> {
    const row = this.#row(ref);
    if (row === null)
      return { records: [], recall_declared: false, session_tool_stats: {}, gap_seconds: null };
    const times = this.#sql
      .exec<{ at: number }>(
        `SELECT at FROM eo_turns WHERE ${KEY} ORDER BY seq DESC LIMIT ?`,
        ref.tenant,
        ref.session,
        GAP_WINDOW + 1,
      )
      .toArray()
      .map((r) => r.at)
      .reverse();
    return {
      records: recordsOf(this.#sql, ref, toolUseIds),
      recall_declared: row.recall_declared === 1,
      session_tool_stats:
        toolNames.length === 0
          ? {}
          : toolStatsOf(recordsOf(this.#sql, ref, null), recallsOf(this.#sql, ref), toolNames),
      gap_seconds: medianGap(times),
    };
  }

  async commit(ref: SessionRef, commit: TurnCommit): Promise<SessionCommitResult> {
    const now = this.#now();
    const sql = this.#sql;
    return this.#storage.transactionSync(() => commitRows(sql, ref, commit, now));
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    const sql = this.#sql;
    return this.#storage.transactionSync(() => noteRecallRows(sql, ref, memId, this.#now()));
  }

  async describe(ref: SessionRef): Promise<SessionDetail | null> {
    const row = this.#row(ref);
    if (row === null) return null;
    const recalls = recallsOf(this.#sql, ref);
    const records = recordsOf(this.#sql, ref, null);
    return {
      tenant: ref.tenant,
      session: ref.session,
      calls: row.calls,
      recall_declared: row.recall_declared === 1,
      recalls: recallTotal(recalls),
      tool_stats: toolStatsOf(records, recalls),
      records,
      turns: turnsOf(this.#sql, ref),
      config: JSON.parse(row.config) as OffloadConfigPatch,
      created_at: row.created_at,
      last_active: row.last_active,
      recalls_by_mem_id: Object.fromEntries(recalls),
    };
  }

  async report(
    ref: SessionRef,
    options: { turns?: boolean } = {},
  ): Promise<SessionReportData | null> {
    const row = this.#row(ref);
    if (row === null) return null;
    return reportData(
      {
        ref,
        created_at: row.created_at,
        last_active: row.last_active,
        calls: row.calls,
        recall_declared: row.recall_declared === 1,
        config: JSON.parse(row.config) as OffloadConfigPatch,
        records: recordsOf(this.#sql, ref, null),
        recalls: recallsOf(this.#sql, ref),
        turns: turnsOf(this.#sql, ref),
        last_turn: row.last_turn === null ? null : (JSON.parse(row.last_turn) as LastTurn),
      },
      options,
    );
  }

  async getConfig(ref: SessionRef): Promise<OffloadConfigPatch> {
    const row = this.#row(ref);
    return row === null ? {} : (JSON.parse(row.config) as OffloadConfigPatch);
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    this.#storage.transactionSync(() => {
      touch(this.#sql, ref, this.#now());
      this.#sql.exec(
        `UPDATE eo_sessions SET config = ? WHERE ${KEY}`,
        JSON.stringify(patch),
        ref.tenant,
        ref.session,
      );
    });
  }

  async proxyState(ref: SessionRef): Promise<ProxyState> {
    const row = this.#row(ref);
    if (row === null) return { config: {}, memos: [] };
    const memos = this.#sql
      .exec<{ memo: string }>(
        `SELECT memo FROM eo_memos WHERE ${KEY} ORDER BY seq`,
        ref.tenant,
        ref.session,
      )
      .toArray()
      .map((r) => JSON.parse(r.memo) as ProxyMemo);
    return { config: JSON.parse(row.config) as OffloadConfigPatch, memos };
  }

  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    const sql = this.#sql;
    this.#storage.transactionSync(() => finishProxyRows(sql, ref, turn, this.#now()));
  }

  /** The provider's usage for a logged turn (the usage route): idempotent, see session/usage.ts. */
  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    const sql = this.#sql;
    return this.#storage.transactionSync(() => recordUsageRows(sql, ref, key, usage));
  }

  async destroy(ref: SessionRef): Promise<string[]> {
    const sql = this.#sql;
    return this.#storage.transactionSync(() => destroyRows(sql, ref));
  }
}

/**
 * SessionDO: one per tenant+session (`idFromName("<tenant>/<session>")`), SQLite storage, RPC
 * methods. It is the authority for the session's sticky decisions, and it serializes the session's
 * turns: each method runs its SQL synchronously inside the object's input gate, so two commits
 * never interleave, and the second sees the first's records (first writer wins, state.ts). Bodies
 * never come here: the Worker writes R2 and sends only small records.
 *
 * Retention: every write moves `last_active`; an alarm at last_active + OFFLOAD_RETENTION_SECONDS
 * purges an idle session (its state, its R2 bodies, its KV entries). 0 keeps sessions until they
 * are deleted.
 */
import { DurableObject } from "cloudflare:workers";
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { TurnCommit } from "../core/ports.ts";
import type { ProxyTurnNote, ResultRecord, SessionRef, TurnLog } from "../core/types.ts";
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
import { lastTurnOf, latestOf, recordCounts, totalsOf } from "./report.ts";
import { SessionTables } from "./session-tables.ts";
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
import { findTurn, type TurnKey, type UsageOutcome, withUsage } from "./usage.ts";

export class SessionDO extends DurableObject<Env> {
  readonly #t: SessionTables;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#t = new SessionTables(ctx.storage);
  }

  #retention(): number {
    return parseRetention(this.env.OFFLOAD_RETENTION_SECONDS);
  }

  async #schedule(): Promise<void> {
    const retention = this.#retention();
    if (retention === 0) return;
    // One pending alarm is enough: when it fires it re-arms itself if the session was active since.
    if ((await this.ctx.storage.getAlarm()) === null)
      await this.ctx.storage.setAlarm(expiresAt(Date.now(), retention)!);
  }

  load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): SessionLoad {
    const row = this.#t.row(ref);
    if (row === null)
      return { records: [], recall_declared: false, session_tool_stats: {}, gap_seconds: null };
    const times = this.#t.sql
      .exec<{ at: number }>("SELECT at FROM turns ORDER BY seq DESC LIMIT ?", GAP_WINDOW + 1)
      .toArray()
      .map((r) => r.at)
      .reverse();
    return {
      records: this.#t.records(toolUseIds),
      recall_declared: row.recall_declared === 1,
      session_tool_stats:
        toolNames.length === 0
          ? {}
          : toolStatsOf(this.#t.allRecords(), this.#t.recalls(), toolNames),
      gap_seconds: medianGap(times),
      idle_seconds: idleSince(times, Date.now()),
    };
  }

  async commit(ref: SessionRef, commit: TurnCommit): Promise<SessionCommitResult> {
    const now = Date.now();
    this.#t.open(true); // outside the transaction: a rollback must not leave #ready true without the tables
    const result = this.ctx.storage.transactionSync(() => {
      const row = this.#t.touch(ref, now);
      const existing = new Map(
        this.#t.records(commit.records.map((r) => r.tool_use_id)).map((r) => [r.tool_use_id, r]),
      );
      const { insert, standing } = applyCommit(existing, commit.records);
      for (const r of insert)
        this.#t.sql.exec(
          "INSERT INTO records (tool_use_id, mem_id, record) VALUES (?, ?, ?)",
          r.tool_use_id,
          r.mem_id,
          JSON.stringify(r),
        );
      const due = indexDue(now, row.last_indexed);
      this.#t.sql.exec(
        "UPDATE session SET calls = calls + 1, recall_declared = max(recall_declared, ?), last_indexed = ? WHERE id = 1",
        commit.recall_declared ? 1 : 0,
        due ? now : row.last_indexed,
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
          JSON.stringify(lastTurnOf(commit.log, commit.decisions, now)),
        );
      }
      return { records: standing, index_due: due, offloads: offloadsOf(insert), turn_seq: seq };
    });
    await this.#schedule();
    return result;
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    this.#t.open(true);
    const tool = this.ctx.storage.transactionSync(() => {
      this.#t.touch(ref, Date.now());
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
      return record !== null && record.action === "offloaded" ? record.tool_name : null;
    });
    await this.#schedule();
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
    await this.#schedule();
  }

  /**
   * The config layer and the proxy's memos in one read (a proxied call makes it before compacting).
   */
  proxyState(ref: SessionRef): ProxyState {
    const row = this.#t.row(ref);
    if (row === null) return { config: {}, memos: [] };
    const memos = this.#t.sql
      .exec<{ memo: string }>("SELECT memo FROM memos ORDER BY seq")
      .toArray()
      .map((r) => JSON.parse(r.memo) as ProxyMemo);
    return { config: JSON.parse(row.config) as OffloadConfigPatch, memos };
  }

  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
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
          if (turn.usage !== undefined) log = withUsage(turn.turn_seq, log, turn.usage).log ?? log;
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
    await this.#schedule();
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
   * Forget everything; returns the mem_ids the records named, for the caller to clean the index.
   */
  async destroy(ref: SessionRef): Promise<string[]> {
    const row = this.#t.row(ref);
    const named = row === null ? [] : this.#t.memIds();
    await this.#wipe();
    return named;
  }

  async #wipe(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.#t.forget();
  }

  override async alarm(): Promise<void> {
    const row = this.#t.row();
    if (row === null) return void (await this.#wipe());
    const retention = this.#retention();
    if (!isExpired(Date.now(), row.last_active, retention)) {
      const at = expiresAt(row.last_active, retention);
      if (at !== null) await this.ctx.storage.setAlarm(at);
      return;
    }
    const ref = { tenant: row.tenant, session: row.session };
    // No turn may interleave with the purge; if it throws, nothing local is lost and the alarm is
    // retried.
    await this.ctx.blockConcurrencyWhile(async () => {
      await purgeBodies(
        ref,
        this.#t.memIds(),
        new R2Ledger(this.env.LEDGER),
        new KvIndex(this.env.INDEX, { ttlSeconds: indexTtlSeconds(retention) }),
      );
      await this.#wipe();
    });
  }
}

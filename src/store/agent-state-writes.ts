/**
 * The session state's writes in an agent's SQLite, under the SessionDO's rules (state.ts): each runs inside
 * the caller's `transactionSync`, so within the object no two turns interleave.
 */
import type { TurnUsage } from "../core/billing.ts";
import type { TurnCommit } from "../core/ports.ts";
import type { ResultRecord, SessionRef, TurnLog } from "../core/types.ts";
import type { ProxyTurn } from "../proxy/port.ts";
import { lastTurnOf } from "../session/report.ts";
import { applyCommit, indexDue, MEMO_LIMIT, offloadsOf, TURN_LOG_LIMIT } from "../session/state.ts";
import { findTurn, type TurnKey, type UsageOutcome, withUsage } from "../session/usage.ts";
import { KEY, recordsOf, type SessionRow, type Sql, sessionRow } from "./agent-state-rows.ts";
import type { SessionCommitResult } from "./ports.ts";

/** The session's row, created on its first write; every write counts as activity. */
export function touch(sql: Sql, ref: SessionRef, now: number): SessionRow {
  sql.exec(
    "INSERT INTO eo_sessions (tenant, session, created_at, last_active) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, session) DO UPDATE SET last_active = excluded.last_active",
    ref.tenant,
    ref.session,
    now,
    now,
  );
  return sessionRow(sql, ref)!;
}

/** A turn's records, counts and log line (the `commit` of the session state port). */
export function commitRows(
  sql: Sql,
  ref: SessionRef,
  commit: TurnCommit,
  now: number,
): SessionCommitResult {
  const row = touch(sql, ref, now);
  const existing = new Map(
    recordsOf(
      sql,
      ref,
      commit.records.map((r) => r.tool_use_id),
    ).map((r) => [r.tool_use_id, r]),
  );
  const { insert, standing } = applyCommit(existing, commit.records);
  for (const r of insert)
    sql.exec(
      "INSERT INTO eo_records (tenant, session, tool_use_id, mem_id, record) VALUES (?, ?, ?, ?, ?)",
      ref.tenant,
      ref.session,
      r.tool_use_id,
      r.mem_id,
      JSON.stringify(r),
    );
  const due = indexDue(now, row.last_indexed);
  sql.exec(
    `UPDATE eo_sessions SET calls = calls + 1, recall_declared = max(recall_declared, ?), last_indexed = ? WHERE ${KEY}`,
    commit.recall_declared ? 1 : 0,
    due ? now : row.last_indexed,
    ref.tenant,
    ref.session,
  );
  const seq = sql
    .exec<{ seq: number }>(
      "INSERT INTO eo_turns (tenant, session, log, at) VALUES (?, ?, ?, ?) RETURNING seq",
      ref.tenant,
      ref.session,
      JSON.stringify(commit.log),
      now,
    )
    .one().seq;
  keepLatest(sql, "eo_turns", ref, TURN_LOG_LIMIT);
  if (commit.decisions !== undefined)
    sql.exec(
      `UPDATE eo_sessions SET last_turn = ? WHERE ${KEY}`,
      JSON.stringify(lastTurnOf(commit.log, commit.decisions, now)),
      ref.tenant,
      ref.session,
    );
  return { records: standing, index_due: due, offloads: offloadsOf(insert), turn_seq: seq };
}

/** One recall counted; the recalled result's tool name when it was offloaded (for the tenant's stats). */
export function noteRecallRows(
  sql: Sql,
  ref: SessionRef,
  memId: string,
  now: number,
): string | null {
  touch(sql, ref, now);
  sql.exec(
    "INSERT INTO eo_recalls (tenant, session, mem_id, count) VALUES (?, ?, ?, 1) ON CONFLICT (tenant, session, mem_id) DO UPDATE SET count = count + 1",
    ref.tenant,
    ref.session,
    memId,
  );
  // The model read this back answering the latest logged turn's prompt.
  sql.exec(
    `UPDATE eo_turns SET recalls = recalls + 1 WHERE seq = (SELECT max(seq) FROM eo_turns WHERE ${KEY})`,
    ref.tenant,
    ref.session,
  );
  const named = sql
    .exec<{ record: string }>(
      `SELECT record FROM eo_records WHERE ${KEY} AND mem_id = ? LIMIT 1`,
      ref.tenant,
      ref.session,
      memId,
    )
    .toArray()[0];
  const record = named === undefined ? null : (JSON.parse(named.record) as ResultRecord);
  return record !== null && record.action === "offloaded" ? record.tool_name : null;
}

/** A proxied turn's hops noted on its log line, and its memos kept (the latest MEMO_LIMIT). */
export function finishProxyRows(sql: Sql, ref: SessionRef, turn: ProxyTurn, now: number): void {
  touch(sql, ref, now);
  if (turn.turn_seq !== null) {
    const line = sql
      .exec<{ log: string }>(
        `SELECT log FROM eo_turns WHERE ${KEY} AND seq = ?`,
        ref.tenant,
        ref.session,
        turn.turn_seq,
      )
      .toArray()[0];
    if (line !== undefined) {
      const { hops, recalls, exhausted } = turn.note;
      let log: TurnLog = {
        ...(JSON.parse(line.log) as TurnLog),
        proxy: { hops, recalls, exhausted },
      };
      if (turn.usage !== undefined) log = withUsage(turn.turn_seq, log, turn.usage).log ?? log;
      sql.exec("UPDATE eo_turns SET log = ? WHERE seq = ?", JSON.stringify(log), turn.turn_seq);
    }
  }
  for (const memo of turn.memos)
    sql.exec(
      "INSERT INTO eo_memos (tenant, session, memo) VALUES (?, ?, ?)",
      ref.tenant,
      ref.session,
      JSON.stringify(memo),
    );
  if (turn.memos.length > 0) keepLatest(sql, "eo_memos", ref, MEMO_LIMIT);
}

/** The provider's usage for a logged turn (the usage route): idempotent, see session/usage.ts. */
export function recordUsageRows(
  sql: Sql,
  ref: SessionRef,
  key: TurnKey,
  usage: TurnUsage,
): UsageOutcome | null {
  if (sessionRow(sql, ref) === null) return null;
  const lines = sql
    .exec<{ seq: number; log: string }>(
      "seq" in key
        ? `SELECT seq, log FROM eo_turns WHERE ${KEY} AND seq = ?`
        : `SELECT seq, log FROM eo_turns WHERE ${KEY} AND json_extract(log, '$.turn') = ? ORDER BY seq DESC LIMIT 1`,
      ref.tenant,
      ref.session,
      "seq" in key ? key.seq : key.turn,
    )
    .toArray()
    .map((r) => ({ seq: r.seq, log: JSON.parse(r.log) as TurnLog }));
  const line = findTurn(lines, key);
  if (line === undefined) return { status: "unknown_turn" };
  const next = withUsage(line.seq, line.log, usage);
  if (next.log !== null)
    sql.exec("UPDATE eo_turns SET log = ? WHERE seq = ?", JSON.stringify(next.log), line.seq);
  return next.outcome;
}

/** Every line of the session, gone; the mem_ids its records named (their bodies are the ledger's to purge). */
export function destroyRows(sql: Sql, ref: SessionRef): string[] {
  if (sessionRow(sql, ref) === null) return [];
  const named = sql
    .exec<{ mem_id: string }>(
      `SELECT DISTINCT mem_id FROM eo_records WHERE ${KEY} AND mem_id IS NOT NULL`,
      ref.tenant,
      ref.session,
    )
    .toArray()
    .map((r) => r.mem_id);
  for (const table of ["eo_sessions", "eo_records", "eo_turns", "eo_recalls", "eo_memos"])
    sql.exec(`DELETE FROM ${table} WHERE ${KEY}`, ref.tenant, ref.session);
  return named;
}

/** Drops the session's oldest lines of `table` beyond the latest `limit`. */
function keepLatest(
  sql: Sql,
  table: "eo_turns" | "eo_memos",
  ref: SessionRef,
  limit: number,
): void {
  sql.exec(
    `DELETE FROM ${table} WHERE ${KEY} AND seq NOT IN (SELECT seq FROM ${table} WHERE ${KEY} ORDER BY seq DESC LIMIT ?)`,
    ref.tenant,
    ref.session,
    ref.tenant,
    ref.session,
    limit,
  );
}

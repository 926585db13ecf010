/**
 * The session state's rows in an agent's SQLite (the `eo_` tables of agent-sql.ts), each table keyed by
 * tenant and session, and the reads the state's answers are built from.
 */
import type { ResultRecord, SessionRef, TurnLog } from "../core/types.ts";
import { loggedTurn } from "../session/report.ts";
import { type AgentStorage, idList } from "./agent-sql.ts";
import type { LoggedTurn } from "./ports.ts";

export type Sql = AgentStorage["sql"];

/** A session's line of eo_sessions. */
export type SessionRow = {
  recall_declared: number;
  calls: number;
  config: string;
  created_at: number;
  last_active: number;
  last_indexed: number | null;
  last_turn: string | null;
};

/** The condition that picks one session's lines of any `eo_` session table. */
export const KEY = "tenant = ? AND session = ?";

export function sessionRow(sql: Sql, ref: SessionRef): SessionRow | null {
  return (
    sql
      .exec<SessionRow>(
        `SELECT recall_declared, calls, config, created_at, last_active, last_indexed, last_turn FROM eo_sessions WHERE ${KEY}`,
        ref.tenant,
        ref.session,
      )
      .toArray()[0] ?? null
  );
}

/** The session's records: those of `ids`, or all of them (in the order they were written) when null. */
export function recordsOf(
  sql: Sql,
  ref: SessionRef,
  ids: readonly string[] | null,
): ResultRecord[] {
  const rows =
    ids === null
      ? sql.exec<{ record: string }>(
          `SELECT record FROM eo_records WHERE ${KEY} ORDER BY rowid`,
          ref.tenant,
          ref.session,
        )
      : sql.exec<{ record: string }>(
          `SELECT record FROM eo_records WHERE ${KEY} AND tool_use_id IN (SELECT value FROM json_each(?))`,
          ref.tenant,
          ref.session,
          idList(ids),
        );
  return rows.toArray().map((r) => JSON.parse(r.record) as ResultRecord);
}

/** Recalls counted per mem_id. */
export function recallsOf(sql: Sql, ref: SessionRef): Map<string, number> {
  return new Map(
    sql
      .exec<{ mem_id: string; count: number }>(
        `SELECT mem_id, count FROM eo_recalls WHERE ${KEY} ORDER BY mem_id`,
        ref.tenant,
        ref.session,
      )
      .toArray()
      .map((r) => [r.mem_id, r.count]),
  );
}

/** The turn log, oldest first. */
export function turnsOf(sql: Sql, ref: SessionRef): LoggedTurn[] {
  return sql
    .exec<{ log: string; at: number; recalls: number }>(
      `SELECT log, at, recalls FROM eo_turns WHERE ${KEY} ORDER BY seq`,
      ref.tenant,
      ref.session,
    )
    .toArray()
    .map((r) => loggedTurn(JSON.parse(r.log) as TurnLog, r.at, r.recalls));
}

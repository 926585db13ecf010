/**
 * The SessionDO's reads for others than a turn: the session's detail (`describe`), the savings
 * report's data (`report`, computed where the state lives: no stubs travel) and the proxy's state
 * (the config layer and the memos in one read). Plain functions over the object's tables.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { ResultRecord, SessionRef } from "../core/types.ts";
import type { ProxyMemo, ProxyState } from "../proxy/port.ts";
import type { LastTurn, SessionDetail, SessionReportData } from "../store/ports.ts";
import { recallTotal, reportData } from "./report.ts";
import type { SessionTables } from "./session-tables.ts";
import { toolStatsOf } from "./state.ts";

/** The session's detail (records, turns, config, counters); null for an unknown session. */
export function describeSession(t: SessionTables, ref: SessionRef): SessionDetail | null {
  const row = t.row(ref);
  if (row === null) return null;
  const recalls = t.recalls();
  const records = t.allRecords();
  return {
    tenant: row.tenant,
    session: row.session,
    calls: row.calls,
    recall_declared: row.recall_declared === 1,
    recalls: recallTotal(recalls),
    tool_stats: toolStatsOf(records, recalls),
    records,
    turns: t.turns(),
    config: JSON.parse(row.config) as OffloadConfigPatch,
    created_at: row.created_at,
    last_active: row.last_active,
    recalls_by_mem_id: Object.fromEntries(recalls),
  };
}

/** The savings report's data; null for an unknown session. */
export function sessionReport(
  t: SessionTables,
  ref: SessionRef,
  options: { turns?: boolean },
): SessionReportData | null {
  const row = t.row(ref);
  if (row === null) return null;
  const last = t.sql.exec<{ turn: string }>("SELECT turn FROM last_turn WHERE id = 1").toArray()[0];
  return reportData(
    {
      ref: { tenant: row.tenant, session: row.session },
      created_at: row.created_at,
      last_active: row.last_active,
      calls: row.calls,
      recall_declared: row.recall_declared === 1,
      config: JSON.parse(row.config) as OffloadConfigPatch,
      // Only the id, action and mem_id of each record: the stubs stay in SQLite.
      records: t.sql
        .exec<{ tool_use_id: string; action: ResultRecord["action"]; mem_id: string | null }>(
          "SELECT tool_use_id, json_extract(record, '$.action') AS action, mem_id FROM records",
        )
        .toArray(),
      recalls: t.recalls(),
      turns: t.turns(),
      last_turn: last === undefined ? null : (JSON.parse(last.turn) as LastTurn),
    },
    options,
  );
}

/**
 * The config layer and the proxy's memos in one read (a proxied call makes it before compacting).
 */
export function proxyStateOf(t: SessionTables, ref: SessionRef): ProxyState {
  const row = t.row(ref);
  if (row === null) return { config: {}, memos: [] };
  const memos = t.sql
    .exec<{ memo: string }>("SELECT memo FROM memos ORDER BY seq")
    .toArray()
    .map((r) => JSON.parse(r.memo) as ProxyMemo);
  return { config: JSON.parse(row.config) as OffloadConfigPatch, memos };
}

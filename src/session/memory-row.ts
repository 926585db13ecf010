/**
 * A session as the in-memory twin of the SessionDO holds it (memory-state.ts), and the reads built
 * from it for others than a turn: the session's detail and the savings report's data. Values are
 * cloned on the way out, as RPC would.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { ResultRecord, SessionRef } from "../core/types.ts";
import type { ProxyMemo } from "../proxy/port.ts";
import type { LastTurn, LoggedTurn, SessionDetail, SessionReportData } from "../store/ports.ts";
import { recallTotal, reportData } from "./report.ts";
import { toolStatsOf } from "./state.ts";

export interface MemoryRow {
  records: Map<string, ResultRecord>;
  /**
   * Turn log lines with the sequence number their commit returned (the proxy notes its hops on one
   * later).
   */
  turns: { seq: number; line: LoggedTurn }[];
  seq: number;
  last_turn: LastTurn | null;
  memos: ProxyMemo[];
  recall_declared: boolean;
  calls: number;
  recalls: Map<string, number>;
  config: OffloadConfigPatch;
  created_at: number;
  last_active: number;
  last_indexed: number | null;
  /** Commit times, most recent last (for the gap between turns). */
  times: number[];
}

/** A session's first write: an empty row, active now. */
export function newRow(now: number): MemoryRow {
  return {
    records: new Map(),
    turns: [],
    seq: 0,
    last_turn: null,
    memos: [],
    recall_declared: false,
    calls: 0,
    recalls: new Map(),
    config: {},
    created_at: now,
    last_active: now,
    last_indexed: null,
    times: [],
  };
}

/** The session's detail (records, turns, config, counters). */
export function describeRow(ref: SessionRef, row: MemoryRow): SessionDetail {
  const recalls = recallTotal(row.recalls);
  return {
    tenant: ref.tenant,
    session: ref.session,
    calls: row.calls,
    recall_declared: row.recall_declared,
    recalls,
    tool_stats: toolStatsOf(row.records.values(), row.recalls),
    records: [...row.records.values()].map((r) => structuredClone(r)),
    turns: row.turns.map((t) => structuredClone(t.line)),
    config: structuredClone(row.config),
    created_at: row.created_at,
    last_active: row.last_active,
    recalls_by_mem_id: Object.fromEntries(row.recalls),
  };
}

/** The savings report's data. */
export function reportOfRow(
  ref: SessionRef,
  row: MemoryRow,
  options: { turns?: boolean },
): SessionReportData {
  return reportData(
    {
      ref,
      created_at: row.created_at,
      last_active: row.last_active,
      calls: row.calls,
      recall_declared: row.recall_declared,
      config: structuredClone(row.config),
      records: row.records.values(),
      recalls: row.recalls,
      turns: row.turns.map((t) => structuredClone(t.line)),
      last_turn: structuredClone(row.last_turn),
    },
    options,
  );
}

/**
 * The savings report's data and rules, free of storage and clocks: the SQL session state and its
 * in-memory twin both build their report with these, so the two agree on what a turn saved, what
 * counts as a shadow saving and what the last turn keeps. Computed where the state lives: no record
 * bodies or stubs travel.
 */
import type { OffloadConfigPatch } from "../config.ts";
import { pressureId, warmId } from "../core/turn/context.ts";
import type { ResultRecord, SessionRef, TurnDecision, TurnLog } from "../core/types.ts";
import { type BilledTotals, billedSession } from "./billing-report.ts";

/**
 * A turn as the session logged it: the core's line, when it was committed, and the recalls that
 * followed it.
 */
export interface LoggedTurn extends TurnLog {
  /** Commit time, epoch milliseconds. */
  at: number;
  /**
   * Successful recalls counted after this turn's compact call and before the next one's: the model,
   * answering this turn's prompt, read these back.
   */
  recalls: number;
}

/**
 * The decisions of the session's latest turn (at most LAST_DECISIONS_LIMIT of them, the last in
 * request order).
 */
export interface LastTurn {
  at: number;
  turn: number;
  shadow: boolean;
  decisions: TurnDecision[];
  /** How many results the turn decided (more than `decisions` holds when it was cut). */
  decisions_total: number;
}

/** Sums over the logged turns (the last TURN_LOG_LIMIT); live and shadow savings apart. */
export interface TurnTotals {
  turns_logged: number;
  shadow_turns: number;
  tokens_before: number;
  tokens_after: number;
  /** Live turns: what offload saved. */
  saved_tokens: number;
  saved_usd: number;
  /** Shadow turns: what offload would have saved. */
  would_save_tokens: number;
  would_save_usd: number;
  gate_fired: number;
  gate_declined: number;
  /** What the provider billed on the turns whose usage was measured (billing-report.ts). */
  billed: BilledTotals;
}

/**
 * What the savings report needs, computed where the state lives (no record bodies or stubs travel).
 */
export interface SessionReportData {
  tenant: string;
  session: string;
  created_at: number;
  last_active: number;
  calls: number;
  recall_declared: boolean;
  config: OffloadConfigPatch;
  /**
   * The sticky decisions by action; `offloaded_recalled`: offloaded results recalled at least once.
   */
  records: { kept: number; compacted: number; offloaded: number; offloaded_recalled: number };
  /** Successful recalls in the session (all of them, logged turns or not). */
  recalls: number;
  totals: TurnTotals;
  /**
   * The latest logged turn (whether or not the per-turn lines were asked for), null before the
   * first.
   */
  latest: { turn: number; at: number; shadow: boolean } | null;
  /** Oldest first; empty when not asked for. */
  turns: LoggedTurn[];
  last_turn: LastTurn | null;
}

/**
 * The last turn's decisions kept for the report. A Durable Object row holds at most 2 MB and a
 * decision with its gate breakdown is under 1 KB, so this stays far below; a turn with more results
 * keeps the last ones in request order (the freshest, where new decisions are taken).
 */
export const LAST_DECISIONS_LIMIT = 200;

const roundUsd = (x: number): number => Math.round(x * 1e9) / 1e9;

/**
 * A stored turn line with its commit time and recall count. Lines logged before shadow mode and
 * gate counts existed lack those fields: they read as live turns whose gate was not counted.
 */
export function loggedTurn(
  log: Partial<TurnLog> & Omit<TurnLog, "shadow" | "gate_fired" | "gate_declined">,
  at: number,
  recalls: number,
): LoggedTurn {
  return {
    ...log,
    shadow: log.shadow === true,
    gate_fired: log.gate_fired ?? 0,
    gate_declined: log.gate_declined ?? 0,
    at,
    recalls,
  };
}

export function lastTurnOf(
  log: TurnLog,
  decisions: readonly TurnDecision[],
  at: number,
  total = decisions.length,
): LastTurn {
  return {
    at,
    turn: log.turn,
    shadow: log.shadow,
    decisions: decisions.slice(-LAST_DECISIONS_LIMIT).map((d) => ({ ...d })),
    decisions_total: Math.max(total, decisions.length),
  };
}

export function latestOf(turns: readonly LoggedTurn[]): SessionReportData["latest"] {
  const t = turns[turns.length - 1];
  return t === undefined ? null : { turn: t.turn, at: t.at, shadow: t.shadow };
}

export function totalsOf(turns: readonly (TurnLog & { at: number })[]): TurnTotals {
  const billed = billedSession(turns);
  const per = billed.turns;
  const t: TurnTotals = {
    turns_logged: turns.length,
    shadow_turns: 0,
    tokens_before: 0,
    tokens_after: 0,
    saved_tokens: 0,
    saved_usd: 0,
    would_save_tokens: 0,
    would_save_usd: 0,
    gate_fired: 0,
    gate_declined: 0,
    billed: billed.totals,
  };
  for (const [i, turn] of turns.entries()) {
    t.tokens_before += turn.tokens_before;
    t.tokens_after += turn.tokens_after;
    t.gate_fired += turn.gate_fired;
    t.gate_declined += turn.gate_declined;
    const saved = turn.tokens_before - turn.tokens_after;
    if (turn.shadow) {
      t.shadow_turns++;
      t.would_save_tokens += saved;
      t.would_save_usd += turn.saved_usd;
    } else {
      t.saved_tokens += saved;
      // Modelled where a measured turn grounds it; else the tokens taken out at their rate, net of
      // the recall hops' calls where the provider's usage says what they cost.
      t.saved_usd += billed.estimated?.[i] ?? turn.saved_usd - (per[i]?.hops_usd ?? 0);
    }
  }
  t.saved_usd = roundUsd(t.saved_usd);
  t.would_save_usd = roundUsd(t.would_save_usd);
  return t;
}

const PRESSURE = pressureId("");
const WARM = warmId("");

/**
 * The session's results by how they stand: one count per result, though a result may hold up to
 * three records (its own, a context-pressure offload `#pressure`, a kept-while-warm `#warm`). The
 * pressure record is what the result is sent as when there is one; else its own decision; else
 * the warm one.
 */
export function recordCounts(
  records: Iterable<Pick<ResultRecord, "tool_use_id" | "action" | "mem_id">>,
  recallsByMemId: ReadonlyMap<string, number>,
): SessionReportData["records"] {
  const standing = new Map<
    string,
    { rank: number; record: Pick<ResultRecord, "action" | "mem_id"> }
  >();
  for (const r of records) {
    const [id, rank] = r.tool_use_id.endsWith(PRESSURE)
      ? [r.tool_use_id.slice(0, -PRESSURE.length), 2]
      : r.tool_use_id.endsWith(WARM)
        ? [r.tool_use_id.slice(0, -WARM.length), 0]
        : [r.tool_use_id, 1];
    const held = standing.get(id);
    if (held === undefined || held.rank < rank) standing.set(id, { rank, record: r });
  }
  const out = { kept: 0, compacted: 0, offloaded: 0, offloaded_recalled: 0 };
  for (const { record: r } of standing.values()) {
    out[r.action]++;
    if (r.action === "offloaded" && r.mem_id !== null && (recallsByMemId.get(r.mem_id) ?? 0) > 0)
      out.offloaded_recalled++;
  }
  return out;
}

/** What a session state holds for its report, however it stores it (SQLite tables, memory). */
export interface ReportSource {
  ref: SessionRef;
  created_at: number;
  last_active: number;
  calls: number;
  recall_declared: boolean;
  config: OffloadConfigPatch;
  records: Iterable<Pick<ResultRecord, "tool_use_id" | "action" | "mem_id">>;
  recalls: ReadonlyMap<string, number>;
  turns: LoggedTurn[];
  last_turn: LastTurn | null;
}

/**
 * The savings report's data: the same derivation for the SessionDO, its in-memory twin and the
 * Agent's store (counts per result, recall total, totals, latest turn).
 */
export function reportData(src: ReportSource, options: { turns?: boolean }): SessionReportData {
  return {
    tenant: src.ref.tenant,
    session: src.ref.session,
    created_at: src.created_at,
    last_active: src.last_active,
    calls: src.calls,
    recall_declared: src.recall_declared,
    config: src.config,
    records: recordCounts(src.records, src.recalls),
    recalls: recallTotal(src.recalls),
    totals: totalsOf(src.turns),
    latest: latestOf(src.turns),
    turns: options.turns === false ? [] : src.turns,
    last_turn: src.last_turn,
  };
}

/** Recalls of the session, all mem_ids together. */
export function recallTotal(recalls: ReadonlyMap<string, number>): number {
  let n = 0;
  for (const c of recalls.values()) n += c;
  return n;
}

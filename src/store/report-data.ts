/**
 * The session's report as the session state computes it where the state lives: the logged turns,
 * the latest turn's decisions, the sums over the log (no record bodies or stubs travel).
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnDecision, TurnLog } from "../core/types.ts";
import type { BilledTotals } from "./billing-report.ts";

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

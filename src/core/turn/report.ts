/**
 * What a turn reports: its counts (the same for the log line the store keeps and the report the
 * caller gets), the net-saving gate's verdicts, and the shadow-mode view of a report
 * (docs/measure.md).
 */
import type { AttachmentReport, AttachmentTally } from "../attachments/types.ts";
import type { ToolResultSite } from "../formats/types.ts";
import { ratesFor, usd } from "../pricing.ts";
import type { Problem } from "../problems.ts";
import { REQUEST_CHARS_PER_TOKEN } from "../tokens.ts";
import type { Format, TurnCounts, TurnDecision, TurnEstimate, TurnLog } from "../types.ts";
import type { AnchorReport } from "./anchor.ts";
import { type Outcome, rawLength, type TurnContext } from "./context.ts";
import type { PressureReport } from "./pressure.ts";
import type { ToolRuleCount } from "./tool-rules.ts";

export interface CompactReport extends TurnCounts {
  format: Format;
  enabled: boolean;
  offload: boolean;
  model: string | null;
  /** Price-table entry used by the gate, or null (unknown model: nothing is offloaded). */
  priced_as: string | null;
  /** Assistant turns in the request. */
  turn: number;
  saved_tokens: number;
  recall_tool: "added" | "present" | "none";
  /**
   * The `anthropic-beta` values the request as compacted needs (the recall tool declared inline, beta
   * `inline-tools-2026-09-15`); the proxy adds them, a compact() caller sends them. Absent: none.
   */
  anthropic_beta?: string[];
  /**
   * Shadow mode: the request came back unchanged; counts, tokens and saving are what offload would
   * do.
   */
  shadow: boolean;
  /**
   * The advancing cache anchor (tool_result_medium_tier "cache_anchor"): whether one was placed,
   * and why.
   */
  anchor: AnchorReport | null;
  /**
   * Document and image blocks under the attachment policy (null when "native"); in the totals
   * above.
   */
  attachments: AttachmentReport | null;
  /** What went wrong without failing the call. */
  errors: Problem[];
  /**
   * The turn's estimates by class of content (what its log line keeps to set the provider's usage
   * against); absent when the turn decided nothing.
   */
  estimate?: TurnEstimate;
  /** Context-pressure mode's batch this turn (pressure.ts), null when there was none. */
  pressure?: PressureReport | null;
  /** What each tool rule matched this turn (`tool_result_tool_rules`); absent or empty: none did. */
  tool_rules?: ToolRuleCount[];
}

/** The report of a turn that decided nothing (compaction off, or the session state unreadable). */
export function emptyReport(format: Format, enabled: boolean, offload: boolean): CompactReport {
  return {
    format,
    enabled,
    offload,
    model: null,
    priced_as: null,
    turn: 0,
    results: 0,
    kept: 0,
    compacted: 0,
    offloaded: 0,
    new_decisions: 0,
    tokens_before: 0,
    tokens_after: 0,
    saved_tokens: 0,
    saved_usd: 0,
    recall_tool: "none",
    shadow: false,
    anchor: null,
    attachments: null,
    errors: [],
  };
}

/** Estimated tokens of the request outside its tool results (and counted attachments). */
export function otherTokensOf(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  media: AttachmentTally,
): number {
  let other = ctx.analysis.prompt_chars - (ctx.analysis.unsent_chars ?? 0);
  for (const site of sites) other -= rawLength(site);
  return Math.round(Math.max(0, other - media.outside_chars) / REQUEST_CHARS_PER_TOKEN);
}

/**
 * The turn's counts from its outcomes. Tokens outside the results are the request's other chars at
 * the request rate; attachments count at their estimated native cost, not as the chars of their
 * base64; the recall tool's declaration (`toolTokens`) counts in what is sent.
 */
export function countTurn(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  outcomes: ReadonlyMap<ToolResultSite, Outcome>,
  fresh: number,
  toolTokens: number,
  media: AttachmentTally,
): TurnCounts {
  const count = { kept: 0, compacted: 0, offloaded: 0 };
  const { analysis, price } = ctx;
  let full = 0;
  let sent = 0;
  let savedUsd = 0;
  const rates =
    price === null ? null : ratesFor(price, analysis.prompt_chars / REQUEST_CHARS_PER_TOKEN);
  const lastBp = analysis.breakpoints[analysis.breakpoints.length - 1];
  for (const site of sites) {
    const d = outcomes.get(site)!.decision;
    count[d.action]++;
    full += d.tokens;
    sent += d.sent_tokens;
    if (rates !== null && d.action !== "kept") {
      const cached = lastBp !== undefined && site.position < lastBp.position;
      savedUsd += usd(d.tokens - d.sent_tokens, cached ? rates.cache_read : rates.input);
    }
  }
  // The recall tool's declaration rides in the cached head of every request that carries it: its
  // tokens are a cost of offloading, not a saving.
  if (rates !== null && toolTokens > 0)
    savedUsd -= usd(toolTokens, analysis.client_caches ? rates.cache_read : rates.input);
  const otherTokens = otherTokensOf(ctx, sites, media);
  savedUsd += media.saved_usd;
  return {
    results: sites.length,
    ...count,
    new_decisions: fresh,
    tokens_before: otherTokens + full + media.native,
    tokens_after: otherTokens + sent + media.sent + toolTokens,
    saved_usd: Math.round(savedUsd * 1e9) / 1e9,
  };
}

/** The line the store logs for this turn. */
export function turnLog(
  ctx: TurnContext,
  counts: TurnCounts,
  decisions: readonly TurnDecision[],
): TurnLog {
  return {
    turn: ctx.analysis.assistant_turns,
    ...counts,
    errors: ctx.problems.length,
    shadow: ctx.config.tool_result_offload_shadow,
    ...gateVerdicts(decisions),
  };
}

/**
 * The gate's verdicts on this turn: every decision taken now (not replayed) that consulted the
 * gate. A declined first delivery is not recorded, so it is consulted (and counted) again on each
 * turn until it settles.
 */
export function gateVerdicts(decisions: readonly TurnDecision[]): {
  gate_fired: number;
  gate_declined: number;
} {
  let fired = 0;
  let declined = 0;
  for (const d of decisions) {
    if (d.sticky || d.gate === undefined) continue;
    if (d.gate.fire) fired++;
    else declined++;
  }
  return { gate_fired: fired, gate_declined: declined };
}

/**
 * A shadow turn's report: the counts, tokens and saving stay what offload decided (what it would
 * have sent and saved), and what describes the returned request is made true of it: no recall tool
 * was added, no cache anchor was placed.
 */
export function shadowReport(report: CompactReport, clientHasRecallTool: boolean): CompactReport {
  return {
    ...report,
    shadow: true,
    recall_tool: clientHasRecallTool ? "present" : "none",
    anchor:
      report.anchor === null
        ? null
        : { placed: false, ttl: null, reason: "shadow mode: the request is returned unchanged" },
  };
}

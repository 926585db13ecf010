/**
 * Context-pressure mode: when a request reaches a configured share of the model's context window,
 * settled results are offloaded oldest-first in one batch, down to a target share, before the
 * agent's own lossy compaction or a context overflow. The batch is one cache rewrite (from its
 * oldest result on), and every result stays recallable.
 *
 * A result an earlier turn kept has a sticky "kept" record, and records are first writer wins: the
 * batch's decision is a record of its own, under `pressureId` of the result's id, which the turns
 * after it find first. It is sticky from then on, like any decision.
 */
import { calibratedTokens } from "../calibration.ts";
import type { ToolResultSite } from "../formats/types.ts";
import type { ModelPrice } from "../pricing.ts";
import type { ResultRecord } from "../types.ts";
import { isRecallResult, type Outcome, type TurnContext } from "./context.ts";
import { decide } from "./decide.ts";
import { Flight } from "./flight.ts";
import { neverOffloaded } from "./tool-rules.ts";

/** What a context-pressure batch did (the turn's report says it). */
export interface PressureReport {
  /** The window pressure measures against (contextWindow), and the request's share of it before and after the batch. */
  window: number;
  share_before: number;
  share_after: number;
  /** Results offloaded by the batch, and their estimated tokens taken out. */
  offloaded: number;
  tokens_removed: number;
}

/**
 * Results one batch offloads at most: each is a ledger write, and a request of very many results
 * must not turn one turn into thousands of writes (the next turn goes on if pressure remains).
 */
export const PRESSURE_BATCH_LIMIT = 128;
/** What a stub costs beyond its preview (header, outline, samples), in chars, for the floor below. */
const STUB_OVERHEAD_CHARS = 1_000;

/**
 * The window pressure measures against: the configured one, else the model's context window, or
 * its long-context threshold when lower (past it the whole request is billed at the higher rates:
 * GPT-5.4 and later double their input rates past 272K of a 1.05M window), so the request is kept
 * under it. Null for a model the price table does not know.
 */
export function pressureWindow(price: ModelPrice | null, configured: number | null): number | null {
  if (configured !== null) return configured;
  if (price === null) return null;
  return Math.min(price.context_window, price.long_context?.above_tokens ?? Infinity);
}

/** The turn's pressure window (pressureWindow), null when unknown or pressure is off. */
export function contextWindow(ctx: TurnContext): number | null {
  if (ctx.config.tool_result_context_pressure_share === null || !ctx.offload) return null;
  return pressureWindow(ctx.price, ctx.config.tool_result_context_window_tokens);
}

/**
 * Offloads settled results oldest-first until the request is back under the target share, when it
 * has reached the pressure share. `sent` is the request's estimated tokens as it would go out now
 * (calibrated). Adds the batch's outcomes and records; null when there was no pressure.
 */
export async function relievePressure(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  hot: (site: ToolResultSite) => boolean,
  outcomes: Map<ToolResultSite, Outcome>,
  fresh: { site: ToolResultSite; record: ResultRecord }[],
  sent: Record<string, number>,
): Promise<PressureReport | null> {
  const window = contextWindow(ctx);
  const share = ctx.config.tool_result_context_pressure_share;
  if (window === null || share === null) return null;
  const before = calibratedTokens(ctx.calibration, sent);
  if (before < share * window) return null;
  const goal = ctx.config.tool_result_context_pressure_target * window;
  // Only results several stubs long are worth a stub: below that the batch would take out little
  // (or add) and still write a body.
  const floor = Math.max(
    ctx.config.tool_result_compaction_size_chars,
    4 * (ctx.config.tool_result_stub_preview_chars + STUB_OVERHEAD_CHARS),
  );
  let now = before;
  let offloaded = 0;
  for (const site of sites) {
    if (now <= goal || offloaded >= PRESSURE_BATCH_LIMIT) break;
    const current = outcomes.get(site)!.decision;
    if (
      current.action !== "kept" ||
      !site.settled ||
      hot(site) ||
      neverOffloaded(ctx, site) ||
      site.content === undefined ||
      isRecallResult(site) ||
      current.chars < floor
    )
      continue;
    // One at a time: a batch is rare, and each write must land before its stub counts.
    const declaredBefore = ctx.toolDeclared;
    const started = await decide(ctx, site, false, new Flight(), "pressure");
    const decided = "later" in started ? await started.later : started;
    if (decided.record === undefined || decided.outcome.decision.action === "kept") {
      ctx.toolDeclared = declaredBefore;
      continue;
    }
    outcomes.set(site, decided.outcome);
    fresh.push({ site, record: decided.record });
    const d = decided.outcome.decision;
    const ratio =
      before /
      Math.max(
        1,
        Object.values(sent).reduce((n, t) => n + t, 0),
      );
    now -= Math.max(0, d.tokens - d.sent_tokens) * ratio;
    offloaded++;
  }
  if (offloaded === 0) return null;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    window,
    share_before: round(before / window),
    share_after: round(now / window),
    offloaded,
    tokens_removed: Math.round(before - now),
  };
}

/**
 * Preserved thinking: what a turn may not change. Anthropic's newer models check every thinking block
 * a request sends back against the prefix it was produced after (`system`, `tools` and the messages
 * before it, as they were sent then); a request whose history changed there is rejected with a 400 (the
 * default for accounts created from 2026-08-31) or has the block dropped, and the model loses that
 * reasoning. So on such a model, once the request holds a thinking block:
 * - nothing before the latest one may be changed for the first time: a result there that no earlier turn
 *   replaced stays as it is (replaying a standing decision is fine: the block was produced after it);
 * - `tools` may not change: the recall tool can no longer be declared there, so unless the model takes it
 *   mid-conversation (declare.ts) nothing new is offloaded until it is (a session that declared it before
 *   its first thinking block keeps it);
 * - the breakpoint move is off: its stub comes on the call after the model has read, and thought about,
 *   the result;
 * - where recalls are answered by hops whose exchange the app's history does not keep (the AI SDK
 *   middleware; the proxy splits such a turn back into its hops, proxy/anthropic-hops.ts), nothing new is
 *   offloaded at all: the model's answer after a hop is thought after the exchange.
 * Results that arrive after the latest thinking block (first delivery) are still decided as usual. Cache
 * breakpoints are not part of the check (clients move theirs every call), so the cache anchor stays.
 */

import { resolveModel } from "../pricing.ts";
import type { TurnContext } from "./context.ts";
import { inlineDeclaresFresh } from "./declare.ts";

/** The reason a result before the latest thinking block is kept as sent. */
export const FROZEN_REASON =
  "kept as sent: the model's preserved thinking follows it (a change would fail its prefix check)";

/** The reason nothing new is offloaded while the recall tool cannot be declared. */
export const UNDECLARABLE_REASON =
  "kept: declaring the recall tool now would change tools under the model's preserved thinking";

/** The reason nothing new is offloaded where recalls would be answered by hops. */
export const HOPS_REASON =
  "kept: a recall hop's exchange is not kept in the client's history, which the model's preserved thinking would reject";

/** A decision's reason is one of the three above. */
export function frozenReason(reason: string): boolean {
  return reason === FROZEN_REASON || reason === UNDECLARABLE_REASON || reason === HOPS_REASON;
}

/**
 * Why no new offload may be taken this turn (null: it may): recalls answered by hops the client's
 * history will not hold, or a recall tool that can no longer be declared. A client that declared the
 * tool itself answers its recalls itself, in its own history.
 */
export function offloadBlocked(ctx: TurnContext): string | null {
  if (!ctx.offload) return null;
  if (ctx.hops === true && !ctx.analysis.has_recall_tool && preservedThinking(ctx))
    return HOPS_REASON;
  if (!ctx.toolDeclared && frozenBefore(ctx) !== null && !inlineDeclaresFresh(ctx))
    return UNDECLARABLE_REASON;
  return null;
}

/**
 * The request's model checks thinking prefixes: a model the price table marks so, or a Claude model it
 * does not know (the newer ones do; keeping a request as sent is always safe).
 */
export function preservedThinking(ctx: TurnContext): boolean {
  return preservedThinkingModel(ctx.analysis.model);
}

/** The same, for a model id as a request names it. */
export function preservedThinkingModel(model: string | null | undefined): boolean {
  const known = resolveModel(model);
  if (known !== null) return known.preserved_thinking === true;
  return typeof model === "string" && /(^|[./])claude-/i.test(model);
}

/** Where the frozen prefix ends (the latest thinking block), or null when nothing is frozen. */
export function frozenBefore(ctx: TurnContext): number | null {
  const at = ctx.analysis.last_thinking_position;
  return at === undefined || !preservedThinking(ctx) ? null : at;
}

/** A place at `position` (prompt order) lies in the frozen prefix: no new change may touch it. */
export function isFrozen(ctx: TurnContext, position: number): boolean {
  const end = frozenBefore(ctx);
  return end !== null && position < end;
}

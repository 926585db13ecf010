/**
 * Preserved thinking: what a turn may not change. Anthropic's newer models check every thinking block
 * a request sends back against the prefix it was produced after (`system`, `tools` and the messages
 * before it, as they were sent then); a request whose history changed there is rejected with a 400 (the
 * default for accounts created from 2026-08-31) or has the block dropped, and the model loses that
 * reasoning. So on such a model, once the request holds a thinking block:
 * - nothing before the latest one may be changed for the first time: a result there that no earlier turn
 *   replaced stays as it is (replaying a standing decision is fine: the block was produced after it);
 * - `tools` may not change: the recall tool can no longer be declared there, so nothing new is offloaded
 *   until it is (a session that declared it before its first thinking block keeps it);
 * - the breakpoint move is off: its stub comes on the call after the model has read, and thought about,
 *   the result.
 * Results that arrive after the latest thinking block (first delivery) are still decided as usual. Cache
 * breakpoints are not part of the check (clients move theirs every call), so the cache anchor stays.
 */

import { resolveModel } from "../pricing.ts";
import type { TurnContext } from "./context.ts";

/** The reason a result before the latest thinking block is kept as sent. */
export const FROZEN_REASON =
  "kept as sent: the model's preserved thinking follows it (a change would fail its prefix check)";

/** The reason nothing new is offloaded while the recall tool cannot be declared. */
export const UNDECLARABLE_REASON =
  "kept: declaring the recall tool now would change tools under the model's preserved thinking";

/** A decision's reason is one of the two above. */
export function frozenReason(reason: string): boolean {
  return reason === FROZEN_REASON || reason === UNDECLARABLE_REASON;
}

/**
 * The request's model checks thinking prefixes: a model the price table marks so, or a Claude model it
 * does not know (the newer ones do; keeping a request as sent is always safe).
 */
export function preservedThinking(ctx: TurnContext): boolean {
  const model = ctx.analysis.model;
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

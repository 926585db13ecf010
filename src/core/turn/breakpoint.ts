/**
 * The breakpoint move in a turn (move.ts prices it): where a fresh result can be kept out of the cache
 * write, the decision "offload once settled" taken on its arrival, and the edits that move the client's
 * breakpoints from after the first such result to just before it. The decision is a record of its own
 * (`settleId`), so the move is sticky: the same request and session state give the same bytes, a retry or
 * our own output compacted again moves nothing further, and the next turns stub the result whatever the
 * gate would say then (the cache never kept it, so it must not be sent in full again).
 */
import { ratioOf } from "../calibration.ts";
import type { AnchorSlot, Breakpoint, Edit, ToolResultSite } from "../formats/types.ts";
import { hotProbability, type MoveResult, moveGate } from "../move.ts";
import { REQUEST_CHARS_PER_TOKEN } from "../tokens.ts";
import {
  isRecallResult,
  type Outcome,
  rawLength,
  sentOffset,
  type TurnContext,
} from "./context.ts";
import { preservedThinking } from "./frozen.ts";
import { priceOffload } from "./price.ts";
import { neverOffloaded, staysHot } from "./tool-rules.ts";

/** Where the move would go for a fresh result: the slot just before it and the markers after it. */
export interface MovePoint {
  slot: AnchorSlot;
  /** The client's breakpoints after the result (all of them removable), in prompt order. */
  after: Breakpoint[];
  /** A breakpoint of the client's already ends at or after the slot (before the result): nothing to add. */
  covered: boolean;
}

/**
 * Whether the request lets the move apply to `site` (it is not priced here): offload on and live, the
 * format can move its markers, the result is fresh and leaves the hot window once the model calls a tool
 * again, every client breakpoint after it can be taken out (no automatic caching, none inside a result's
 * content), a block before it can carry one, and its message holds no media the attachment policy edits.
 */
export function movePoint(ctx: TurnContext, site: ToolResultSite): MovePoint | null {
  const { analysis: a, config } = ctx;
  if (!ctx.offload || config.tool_result_offload_shadow || !config.tool_result_breakpoint_move)
    return null;
  if (ctx.adapter.anchorEdit === undefined || ctx.price === null || a.auto_cache) return null;
  if (site.settled || isRecallResult(site)) return null;
  // Its stub would come after the model has thought about the result: a preserved-thinking model would
  // reject the change (frozen.ts).
  if (preservedThinking(ctx)) return null;
  // One new result next call must push it out of the hot window; a rule's "never" is never moved for.
  if (staysHot(ctx, site) || neverOffloaded(ctx, site)) return null;
  const after = a.breakpoints.filter((b) => b.position > site.position);
  if (after.length === 0 || after.some((b) => b.removal === undefined)) return null;
  if (a.media?.some((m) => m.message_index === site.message_index)) return null;
  let slot: AnchorSlot | undefined;
  for (const s of a.anchor_slots) if (s.position <= site.position) slot = s;
  if (slot === undefined) return null;
  const covered = a.breakpoints.some(
    (b) => b.position >= slot.position && b.position <= site.position,
  );
  return { slot, after, covered };
}

/**
 * The move priced for `site`: the stub once settled, the move, the hot-window risk (move.ts). The move binds
 * the stub on the call the result arrives, before the model has used it, so the stub is priced with the
 * recall chance first delivery uses for a result not yet seen (the unseen prior plus the margin), not the
 * settled one: a source file the model goes on to edit is recalled many times, and nothing declines the
 * stub later.
 */
export function priceMove(
  ctx: TurnContext,
  site: ToolResultSite,
  point: MovePoint,
  resultTokens: number,
  stubTokens: number,
): MoveResult {
  const gate = priceOffload(ctx, site, resultTokens, stubTokens, true);
  const last = point.after[point.after.length - 1]!;
  const restChars = Math.max(
    0,
    sentOffset(ctx, last.position) - sentOffset(ctx, site.position + rawLength(site)),
  );
  const k = ratioOf(ctx.calibration, "request");
  return moveGate({
    gate: { ...gate, cache_ttl: point.after[0]!.ttl },
    rest_tokens: Math.round(restChars / REQUEST_CHARS_PER_TOKEN),
    hot_probability: hotProbability(ctx.analysis.tool_chain),
    prefix_tokens: Math.round((sentOffset(ctx, point.slot.position) / REQUEST_CHARS_PER_TOKEN) * k),
  });
}

/**
 * The edits of the move, for the fresh results whose "offload once settled" record stands: the client's
 * markers after the first of them go, and one with the TTL of the first removed marker goes on the block
 * just before it (longer TTLs before shorter ones stay in order: the client's order was valid). None when
 * no such result is in the request.
 */
export function moveEdits(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  settling: ReadonlySet<ToolResultSite>,
): Edit[] {
  const point = pointOf(ctx, sites, settling);
  if (point === null) return [];
  const edits: Edit[] = point.after.map((b) => ({ ...b.removal!, text: "" }));
  if (!point.covered) edits.push(ctx.adapter.anchorEdit!(ctx.raw, point.slot, point.after[0]!.ttl));
  return edits;
}

/** The move's point: at the first fresh result whose "offload once settled" record stands. */
function pointOf(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  settling: ReadonlySet<ToolResultSite>,
): MovePoint | null {
  const first = sites.find((s) => settling.has(s));
  return first === undefined ? null : movePoint(ctx, first);
}

/**
 * The request's breakpoints once `moveEdits` are applied, in prompt order: the client's, less the
 * ones after the first settling result, plus the one placed before it. What the billing
 * counterfactual models the request sent with (the client's own request keeps its markers).
 */
export function movedBreakpoints(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  settling: ReadonlySet<ToolResultSite>,
): Breakpoint[] {
  const all = ctx.analysis.breakpoints;
  const point = pointOf(ctx, sites, settling);
  if (point === null) return all;
  const kept = all.filter((b) => !point.after.includes(b));
  if (!point.covered) kept.push({ position: point.slot.position, ttl: point.after[0]!.ttl });
  return kept.sort((a, b) => a.position - b.position);
}

/** A fresh result kept in full on arrival because its breakpoint moved: its outcome, from its record. */
export function movedOutcome(outcome: Outcome, reason: string): Outcome {
  return { ...outcome, decision: { ...outcome.decision, reason: `kept on arrival: ${reason}` } };
}

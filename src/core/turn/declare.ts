/**
 * Where the recall tool is declared. In `tools` by default: that rewrites the cached prompt from the top
 * (the gate prices it) and changes what a preserved-thinking model's thinking followed. Where the model
 * takes a tool defined mid-conversation (`tool_result_recall_tool_inline`, beta
 * `inline-tools-2026-09-15`), it goes in a system message right after the run of user messages that holds
 * the earliest stub instead: nothing before it changes, so it costs its own tokens only. The place follows
 * from the sticky decisions, so every later turn puts it in the same place.
 */
import type { Edit, ToolResultSite } from "../formats/types.ts";
import { resolveModel } from "../pricing.ts";
import type { TurnContext } from "./context.ts";

/** The beta that lets a tool be defined in a system message. */
export const INLINE_TOOLS_BETA = "inline-tools-2026-09-15";

/**
 * This turn would declare the recall tool inline: lazily (with the first stub; "eager" and "free" put it in
 * `tools` before any stub, and a session keeps one way), where the model takes it and the caller sends the
 * beta (compact's `sendsBetas`).
 */
export function inlineDeclares(ctx: TurnContext): boolean {
  return (
    ctx.sendsBetas === true &&
    ctx.config.tool_result_recall_tool_inline &&
    ctx.config.tool_result_recall_tool_declaration === "lazy" &&
    ctx.adapter.declareRecallToolInline !== undefined &&
    resolveModel(ctx.analysis.model)?.inline_tools === true
  );
}

/** The inline declaration after the run of user messages holding message `index`, or null where none fits. */
function inlineAfter(ctx: TurnContext, index: number): Edit | null {
  return (
    ctx.adapter.declareRecallToolInline?.(
      ctx.raw,
      ctx.root,
      ctx.config.tool_result_recall_mode,
      index,
    ) ?? null
  );
}

/**
 * The inline declaration after the earliest offloaded result of the request (prompt order), or null where
 * there is none or its place is not valid.
 */
export function inlineDeclaration(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  offloaded: (site: ToolResultSite) => boolean,
): Edit | null {
  const first = sites.find(offloaded);
  return first === undefined ? null : inlineAfter(ctx, first.message_index);
}

/**
 * The tool can be declared inline after this turn's fresh results (where a first delivery's stub lands):
 * what a preserved-thinking model, whose `tools` may no longer change, needs before anything is stubbed.
 */
export function inlineDeclaresFresh(ctx: TurnContext): boolean {
  // Once per request (asked for every result it decides; a request may hold 100,000).
  const known = freshSlot.get(ctx.analysis);
  if (known !== undefined) return known;
  const fresh = ctx.analysis.sites.find((s) => !s.settled);
  const ok =
    fresh !== undefined && inlineDeclares(ctx) && inlineAfter(ctx, fresh.message_index) !== null;
  freshSlot.set(ctx.analysis, ok);
  return ok;
}

const freshSlot = new WeakMap<object, boolean>();

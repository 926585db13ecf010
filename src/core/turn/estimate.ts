/**
 * What a turn's log line keeps of its estimates, so the provider's usage can later be set against
 * them: the request as it went out and what was taken out of it, in estimated tokens per class of
 * content (the calibration's classes), and how much of the client's own request sat before its
 * last cache breakpoint (what the provider would have cached had nothing been changed).
 */
import type { AttachmentTally } from "../attachments/types.ts";
import type { TokenClasses } from "../calibration.ts";
import { calibrationReady, resultClasses } from "../calibration.ts";
import type { ToolResultSite } from "../formats/types.ts";
import type { TurnEstimate } from "../types.ts";
import { type Outcome, pressureId, type TurnContext, warmId } from "./context.ts";

function add(to: TokenClasses, cls: string, tokens: number): void {
  if (tokens === 0) return;
  to[cls] = Math.round(((to[cls] ?? 0) + tokens) * 100) / 100;
}

/** A result's estimated tokens as calibration classes (its kind and whitespace, as measured). */
function classesOf(ctx: TurnContext, site: ToolResultSite, tokens: number): [string, number][] {
  // A context-pressure decision, and a decline while warm, are records of their own.
  const record =
    ctx.loaded.records.get(pressureId(site.tool_use_id)) ??
    ctx.loaded.records.get(site.tool_use_id) ??
    ctx.loaded.records.get(warmId(site.tool_use_id));
  const kind = ctx.kinds?.get(site.tool_use_id) ?? record?.kind ?? "request";
  const ws = ctx.whitespace?.get(site.tool_use_id) ?? record?.ws;
  return resultClasses(kind, tokens, kind === "request" ? undefined : ws);
}

export function turnEstimate(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  outcomes: ReadonlyMap<ToolResultSite, Outcome>,
  otherTokens: number,
  toolTokens: number,
  media: AttachmentTally,
): TurnEstimate {
  const shadow = ctx.config.tool_result_offload_shadow;
  const sent: TokenClasses = {};
  const removed: TokenClasses = {};
  add(sent, "request", otherTokens + (shadow ? media.native : media.sent + toolTokens));
  for (const site of sites) {
    const d = outcomes.get(site)!.decision;
    const classes = classesOf(ctx, site, d.tokens);
    if (d.action === "kept" || shadow) {
      for (const [cls, t] of classes) add(sent, cls, t);
      continue;
    }
    add(sent, "request", d.sent_tokens);
    for (const [cls, t] of classes) add(removed, cls, t);
    add(removed, "request", -d.sent_tokens);
  }
  if (!shadow) add(removed, "request", media.native - media.sent - toolTokens);
  const { analysis } = ctx;
  const last = analysis.breakpoints[analysis.breakpoints.length - 1];
  const share =
    !analysis.client_caches || last === undefined || analysis.prompt_chars <= 0
      ? 0
      : Math.min(1, last.position / analysis.prompt_chars);
  return {
    sent,
    removed,
    cached_share: Math.round(share * 1000) / 1000,
    ttl: last?.ttl ?? "5m",
    calibrated: calibrationReady(ctx.calibration),
    model: ctx.price?.id ?? null,
  };
}

/**
 * What a turn's log line keeps of its estimates, so the provider's usage can later be set against
 * them: the request as it went out and what was taken out of it, in estimated tokens per class of
 * content (the calibration's classes), and how much of the client's own request sat before its
 * last cache breakpoint (what the provider would have cached had nothing been changed).
 */
import type { AttachmentTally } from "../attachments/types.ts";
import type { TokenClasses } from "../calibration.ts";
import { calibrationReady } from "../calibration.ts";
import type { ToolResultSite } from "../formats/types.ts";
import type { TurnEstimate } from "../types.ts";
import type { Outcome, TurnContext } from "./context.ts";

function add(to: TokenClasses, cls: string, tokens: number): void {
  if (tokens === 0) return;
  to[cls] = (to[cls] ?? 0) + tokens;
}

/** The content kind a result was measured as this turn, or recorded as earlier. */
function kindOf(ctx: TurnContext, site: ToolResultSite): string {
  return (
    ctx.kinds?.get(site.tool_use_id) ?? ctx.loaded.records.get(site.tool_use_id)?.kind ?? "request"
  );
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
    const kind = kindOf(ctx, site);
    if (d.action === "kept" || shadow) {
      add(sent, kind, d.tokens);
      continue;
    }
    add(sent, "request", d.sent_tokens);
    add(removed, kind, d.tokens);
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

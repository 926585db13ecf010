/**
 * What a turn's log line keeps of its estimates, so the provider's usage can later be set against
 * them: the request as it went out and what was taken out of it, in estimated tokens per class of
 * content (the calibration's classes), and how much of the client's own request sat before its
 * last cache breakpoint (what the provider would have cached had nothing been changed).
 */
import type { AttachmentTally } from "../attachments/types.ts";
import type { TokenClasses } from "../calibration.ts";
import { calibrationReady, resultClasses } from "../calibration.ts";
import type { Breakpoint, Edit, ToolResultSite } from "../formats/types.ts";
import { getMember } from "../json/scan.ts";
import { Hash, promptUnits } from "../prompt-units.ts";
import { encodeSketch, sketchTurn } from "../sketch.ts";
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
  const fresh: Record<string, number> = {};
  const cut: Record<string, number> = {};
  add(sent, "request", otherTokens + (shadow ? media.native : media.sent + toolTokens));
  for (const site of sites) {
    const d = outcomes.get(site)!.decision;
    const classes = classesOf(ctx, site, d.tokens);
    if (d.action === "kept" || shadow) {
      for (const [cls, t] of classes) add(sent, cls, t);
      if (!site.settled && d.action === "kept" && d.tokens > 0) fresh[idOf(site)] = d.tokens;
      continue;
    }
    add(sent, "request", d.sent_tokens);
    for (const [cls, t] of classes) add(removed, cls, t);
    add(removed, "request", -d.sent_tokens);
    cut[idOf(site)] = d.tokens;
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
    ...(Object.keys(fresh).length === 0 ? {} : { fresh: largest(fresh) }),
    ...(Object.keys(cut).length === 0 ? {} : { cut: largest(cut) }),
  };
}

/** A result's key on the log line: its call id, bounded. */
const idOf = (site: ToolResultSite) => site.tool_use_id.slice(0, 64);

/**
 * Results named on a log line, at most: the largest (where measuring them matters); the others'
 * tokens stay the calibrated estimate.
 */
export const RESULTS_NAMED = 64;

function largest(results: Record<string, number>): Record<string, number> {
  const all = Object.entries(results);
  if (all.length <= RESULTS_NAMED) return results;
  return Object.fromEntries(all.sort((a, b) => b[1] - a[1]).slice(0, RESULTS_NAMED));
}

/**
 * The turn's sketch (core/sketch.ts): the client's request and the one sent (`edits`, the recall
 * tool's declaration, the breakpoint move and the anchor applied; none of them in shadow mode,
 * where the request goes out as it came), and the request's cache routing key, hashed.
 */
export function turnSketch(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  outcomes: ReadonlyMap<ToolResultSite, Outcome>,
  sent: {
    edits: readonly Edit[];
    declaration: { text: string; tokens: number; at?: number } | null;
    anchor: { at: number; ttl: "5m" | "1h" } | null;
    /** The breakpoints sent, where the move changed the client's. */
    breakpoints?: readonly Breakpoint[];
  },
): Pick<TurnEstimate, "sketch" | "cache_scope"> {
  const shadow = ctx.config.tool_result_offload_shadow;
  const marks = sketchTurn({
    raw: ctx.raw,
    units: promptUnits(ctx.format, ctx.raw, ctx.root),
    breakpoints: ctx.analysis.breakpoints,
    sites: sites.flatMap((site) => {
      if (site.content === undefined) return [];
      const d = outcomes.get(site)!.decision;
      return [
        {
          start: site.content.start,
          end: site.content.end,
          tokens: d.tokens,
          sent_tokens: shadow ? d.tokens : d.sent_tokens,
        },
      ];
    }),
    ...(shadow || sent.breakpoints === undefined ? {} : { sent_breakpoints: sent.breakpoints }),
    edits: shadow ? [] : sent.edits,
    declaration: shadow ? null : sent.declaration,
    anchor: shadow ? null : sent.anchor,
  });
  const key = ctx.root.kind === "object" ? getMember(ctx.root, "prompt_cache_key") : undefined;
  let scope: string | undefined;
  if (key?.kind === "string") {
    const h = new Hash();
    h.feed(ctx.raw, key.start, key.end);
    scope = h.digest();
  }
  return {
    ...(marks.length === 0 ? {} : { sketch: encodeSketch(marks) }),
    ...(scope === undefined ? {} : { cache_scope: scope }),
  };
}

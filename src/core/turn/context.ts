/**
 * What every step of a turn shares: the request (its raw text, span tree and the format's
 * analysis), the resolved config, the session and its turn, the model's price, and what the steps
 * learn as they go (the state the turn started from, whether the recall tool is declared, the
 * turn's problems). One context for the results' steps and the attachments' steps alike. Also the
 * small measures every step takes of a result.
 */
import type { OffloadConfig } from "../../config.ts";
import type { Calibration } from "../calibration.ts";
import type { FormatAdapter, RequestAnalysis, ToolResultSite } from "../formats/types.ts";
import { decodeString, type JsonNode, stringLength } from "../json/scan.ts";
import type { AttachmentExtractor, Turn, TurnStart } from "../ports.ts";
import type { ModelPrice } from "../pricing.ts";
import type { Problem } from "../problems.ts";
import { RECALL_TOOL_NAME, recallToolDefinition } from "../recall-tool.ts";
import { type ContentKind, detectKind, estimateTokens, whitespaceShare } from "../tokens.ts";
import type { Format, ResultRecord, SessionRef, Tier, TurnDecision } from "../types.ts";
import { configOf, neverOffloaded, neverReason, ruledReason } from "./tool-rules.ts";

/**
 * One result's decision on this turn (the same shape the session report keeps for the last turn).
 */
export type Decision = TurnDecision;

export interface TurnContext {
  readonly raw: string;
  readonly root: JsonNode;
  readonly analysis: RequestAnalysis;
  readonly adapter: FormatAdapter;
  readonly format: Format;
  readonly config: OffloadConfig;
  readonly ref: SessionRef;
  /** The turn's hold on its session: its start, and where its bodies and decisions go. */
  readonly turn: Turn;
  /** Deployment secret that keys mem_ids and attachment ids. */
  readonly secret: string;
  /** Offload is on; off, settled results over the floor take the size-only path. */
  readonly offload: boolean;
  /** The model the turn is priced as (the config's pricing model, else the request's). */
  readonly model: string | null;
  /** The price-table entry of the request's model (or the configured one), null when unknown. */
  readonly price: ModelPrice | null;
  /** The attachment policy's extractor, when one is wired. */
  readonly extractor: AttachmentExtractor | undefined;
  /** What went wrong without failing the turn, in order. */
  readonly problems: Problem[];
  /** What the turn started from, with every record the request needs. */
  loaded: TurnStart;
  /** The recall tool is (or will be, this turn) in the request's tools. */
  toolDeclared: boolean;
  /** Recall calls are answered by hops the client's history does not keep (compact's `hops`). */
  readonly hops?: boolean;
  /** The caller sends the betas the report names (compact's `sendsBetas`). */
  readonly sendsBetas?: boolean;
  /**
   * Provider tokens per estimated token for this tenant and model, learned from measured usage
   * (calibration.ts); absent or not yet ready: the estimates as they are.
   */
  calibration?: Calibration | null;
  /** The content kind of each result measured this turn (for the log line's estimates). */
  kinds?: Map<string, ContentKind>;
  /** The whitespace share of each result measured this turn (calibration.ts). */
  whitespace?: Map<string, number>;
  /**
   * Raw chars earlier decisions take out of this request (full bodies less their stubs), in prompt order
   * with running totals, so prices read the prompt as it goes out: the same whether the client sent its
   * full history or our output.
   */
  replaced?: Replaced;
  /**
   * Raw chars this turn's stubs decided so far take out of the request (each result's body less its
   * stub), so a later result of the same turn is priced on the prompt with them in place: results are
   * decided in prompt order, and the last one to bring the prompt below the cache minimum is the one
   * priced for it (decide.ts).
   */
  takenThisTurn?: number;
}

/** Where earlier decisions replace text, in prompt order, and how many chars they took out up to each. */
export interface Replaced {
  positions: number[];
  /** `before[i]`: chars taken out by the replacements before `positions[i]` (one more entry: all). */
  before: number[];
}

/** Chars a result loses when `text` replaces its content (its full body less the stub), 0 when none. */
export function charsTakenOut(ctx: TurnContext, site: ToolResultSite, text: string): number {
  return Math.max(0, rawLength(site) - ctx.adapter.renderContent(ctx.raw, site, text).length);
}

/**
 * `Replaced` from what each place takes out (`[position, chars]`, any order; negative where it adds, as
 * a declared tool; places that change nothing are left out): positions sorted, with running totals.
 */
export function replacedFrom(out: [position: number, chars: number][]): Replaced {
  const taken = out.filter((e) => e[1] !== 0).sort((x, y) => x[0] - y[0]);
  const before = [0];
  for (const [, chars] of taken) before.push(before[before.length - 1]! + chars);
  return { positions: taken.map((e) => e[0]), before };
}

/** A prompt-order offset of the request as it goes out: less what earlier decisions replace before it. */
export function sentOffset(ctx: TurnContext, position: number): number {
  const r = ctx.replaced;
  if (r === undefined || r.positions.length === 0) return position;
  // the replacements strictly before `position` (binary search: a request may hold 100,000 results)
  let lo = 0;
  let hi = r.positions.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (r.positions[mid]! < position) lo = mid + 1;
    else hi = mid;
  }
  return position - r.before[lo]!;
}

/**
 * A result's decision this turn and, when it differs from what the request holds, its replacement
 * text.
 */
export interface Outcome {
  decision: Decision;
  replacement?: string;
}

/** The text of a result as measured and offloaded: its text pieces, joined by newlines. */
export function textOf(ctx: TurnContext, site: ToolResultSite): string {
  return siteText(ctx.raw, site);
}

/** The text of a result of the request `raw`, as measured and offloaded (`textOf` without a turn). */
export function siteText(raw: string, site: ToolResultSite): string {
  if (site.json_text !== undefined) return raw.slice(site.json_text.start, site.json_text.end);
  return site.texts.map((t) => decodeString(raw, t)).join("\n");
}

/** Decoded chars of a result without decoding it (escaped strings are counted once). */
export function charsOf(ctx: TurnContext, site: ToolResultSite): number {
  if (site.json_text !== undefined) return site.json_text.end - site.json_text.start;
  let n = Math.max(0, site.texts.length - 1);
  for (const t of site.texts) n += stringLength(ctx.raw, t);
  return n;
}

/** Raw JSON length of the result's content: what a replacement rewrites. */
export function rawLength(site: ToolResultSite): number {
  return site.content === undefined ? 0 : site.content.end - site.content.start;
}

export function measure(
  ctx: TurnContext,
  site: ToolResultSite,
): { text: string; chars: number; kind: ContentKind; tokens: number; ws: number } {
  const text = textOf(ctx, site);
  const kind = detectKind(text);
  const ws = whitespaceShare(text);
  (ctx.kinds ??= new Map()).set(site.tool_use_id, kind);
  (ctx.whitespace ??= new Map()).set(site.tool_use_id, ws);
  return { text, chars: text.length, kind, tokens: estimateTokens(text.length, kind), ws };
}

export function tierOf(config: OffloadConfig, chars: number): Tier {
  if (chars <= config.tool_result_compaction_size_chars) return "small";
  return chars >= config.tool_result_large_offload_threshold_chars ? "large" : "medium";
}

/**
 * A result's decision as its record says it, whether taken now or on an earlier turn (`sticky`).
 */
export function decisionOf(site: ToolResultSite, record: ResultRecord, sticky: boolean): Decision {
  return {
    tool_use_id: site.tool_use_id,
    tool_name: record.tool_name,
    path: site.path,
    tier: record.tier,
    action: record.action,
    mem_id: record.mem_id,
    chars: record.chars,
    tokens: record.tokens,
    sent_tokens: record.action === "kept" ? record.tokens : record.rendered_tokens,
    sticky,
    reason: record.reason,
    ...(record.gate === null ? {} : { gate: record.gate }),
  };
}

/**
 * Kept this turn and decided later (no record): hot, not yet settled, or a decision that could not
 * stand.
 */
export function pending(
  ctx: TurnContext,
  site: ToolResultSite,
  hot: boolean,
  why?: string,
): Outcome {
  const m = measure(ctx, site);
  return {
    decision: {
      tool_use_id: site.tool_use_id,
      tool_name: site.tool_name,
      path: site.path,
      tier: hot ? "hot" : tierOf(configOf(ctx, site), m.chars),
      action: "kept",
      mem_id: null,
      chars: m.chars,
      tokens: m.tokens,
      sent_tokens: m.tokens,
      sticky: false,
      reason:
        why === undefined && neverOffloaded(ctx, site)
          ? neverReason(ctx, site)
          : ruledReason(
              ctx,
              site,
              why ??
                (hot
                  ? "hot: among the most recent results"
                  : "not settled: the model has not answered after it yet"),
            ),
    },
  };
}

/** Tokens the recall tool's declaration adds to every request that carries it. */
export function recallToolTokens(
  format: Format,
  mode: OffloadConfig["tool_result_recall_mode"],
): number {
  return estimateTokens(JSON.stringify(recallToolDefinition(format, mode)).length, "json");
}

export function isRecallResult(site: ToolResultSite): boolean {
  return site.tool_name === RECALL_TOOL_NAME;
}

/**
 * The record id of a result's context-pressure decision (pressure.ts): a record of its own, since
 * the result's own id may already hold a sticky "kept".
 */
export function pressureId(toolUseId: string): string {
  return `${toolUseId}#pressure`;
}

/**
 * The record id of a result the gate declined only because the provider's cache is warm (cold.ts):
 * kept while the cache stays warm, weighed again on the first turn after a lapse, whose decision is
 * then the result's own record. Its own id, so that decision is a first write, not a replacement.
 */
export function warmId(toolUseId: string): string {
  return `${toolUseId}#warm`;
}

/**
 * The record id of a fresh result the breakpoint move decided to offload once settled (breakpoint.ts):
 * kept in full on its arrival, the client's breakpoint moved before it, and stubbed on the first turn it is
 * settled and out of the hot window. Its own id, so that stub is the result's own first record.
 */
export function settleId(toolUseId: string): string {
  return `${toolUseId}#settle`;
}

/**
 * The record id of a fresh result's declined first delivery: it stands for the result's arrival only (while
 * it is not settled), so the same request, or our own output, is declined the same way.
 */
export function arrivalId(toolUseId: string): string {
  return `${toolUseId}#arrival`;
}

/**
 * The advancing cache anchor (medium tier "cache_anchor"): one breakpoint at the end of the last
 * block whose bytes are final — the end of the prompt, or just before a fresh result that may still
 * be stubbed once settled — so everything the model has read is billed at cache-read price next
 * turn. The client's own breakpoints and TTLs are kept; nothing is added when the client already
 * advances a breakpoint or uses automatic caching, when 4 breakpoints are set, below the model's
 * minimum cacheable length, when no TTL is cheaper than not caching at the session's observed
 * gap between turns, or while its write could make the session dearer than the risk bound allows.
 *
 * The risk bound (`tool_result_anchor_risk_share`): an anchor pays from the next call on (it reads at a
 * tenth of input what it wrote at 1.25×), so what it can lose is its write's premium over input, when
 * the session ends or pauses past the TTL before another call. That premium, on what the anchor would
 * write beyond the client's own breakpoints, must be at most the share of what the session has spent so
 * far (the prompts of its calls, this one included, as they go out) plus what this call's stubs
 * take off its bill (billed now, whatever follows): a session the anchor makes dearer is dearer by at most
 * that share. It binds on the first calls of a session; once the session has spent enough, or on the call
 * that stubs a large result (whose recall hop would re-read this very prompt: from the cache, once written),
 * the anchor goes in, and each later call's premium is on the new tokens only.
 */

import type { AnchorSlot, Edit, ToolResultSite } from "../formats/types.ts";
import { unpricedModel } from "../gate.ts";
import { ratesFor, usd } from "../pricing.ts";
import { REQUEST_CHARS_PER_TOKEN } from "../tokens.ts";
import {
  charsTakenOut,
  isRecallResult,
  type Outcome,
  type Replaced,
  replacedFrom,
  sentOffset,
  type TurnContext,
} from "./context.ts";
import { configOf } from "./tool-rules.ts";

/** What the report says about the anchor: whether one was placed, with which TTL, and why. */
export interface AnchorReport {
  placed: boolean;
  ttl: "5m" | "1h" | null;
  reason: string;
}

export function placeAnchor(
  turn: TurnContext,
  sites: readonly ToolResultSite[],
  outcomes: ReadonlyMap<ToolResultSite, Outcome>,
  declaration: Edit | null = null,
): { edit: Edit | null; report: AnchorReport } {
  // Every size below is of the prompt as it goes out: this turn's stubs in place, the fresh ones too
  // (ctx.replaced holds the earlier decisions only), and the recall tool this turn declares, so a
  // retry or an echoed history decides the same.
  const ctx: TurnContext = { ...turn, replaced: goingOut(turn, sites, outcomes, declaration) };
  const a = ctx.analysis;
  const skip = (reason: string) => ({
    edit: null,
    report: { placed: false, ttl: null, reason },
  });
  if (ctx.adapter.anchorEdit === undefined || a.anchor_slots.length === 0)
    return skip("no block can carry a breakpoint");
  if (a.auto_cache) return skip("the client uses automatic caching");
  if (a.breakpoints.length >= 4) return skip("the request already has 4 breakpoints");
  const clientLast = a.breakpoints[a.breakpoints.length - 1];
  if (clientLast !== undefined && clientLast.position > a.last_message_position)
    return skip("the client already advances a breakpoint");
  if (ctx.price === null) return skip(`no minimum length known: ${unpricedModel(ctx.model)}`);
  // Fresh results that a later turn may still replace would make the cached bytes past them
  // short-lived.
  const unfinal = (i: number | undefined): boolean => {
    if (i === undefined) return false;
    const site = sites[i]!;
    const d = outcomes.get(site)!.decision;
    if (d.sticky || d.action !== "kept" || site.settled || isRecallResult(site)) return false;
    // over the size floor the gate (medium results included) or the size-only path may still replace it
    // once settled, and the breakpoint move would take a marker after it out
    return d.chars > configOf(ctx, site).tool_result_compaction_size_chars;
  };
  let slot: AnchorSlot | undefined;
  for (const s of a.anchor_slots) {
    if (unfinal(s.site)) break;
    slot = s;
  }
  if (slot === undefined) return skip("every recent block may still change");
  // Sizes as the prompt goes out (our stubs in place), as in every price of the turn.
  const prefix = Math.round(sentOffset(ctx, slot.position) / REQUEST_CHARS_PER_TOKEN);
  if (prefix < ctx.price.min_cacheable_tokens)
    return skip(
      `below the model's minimum cacheable length (${ctx.price.min_cacheable_tokens} tokens)`,
    );
  const ttl = chooseTtl(ctx, prefix);
  if (ttl === null)
    return skip("at this session's gap between turns no TTL is cheaper than not caching");
  const risk = riskOf(ctx, prefix, ttl, savedThisCall(ctx, sites, outcomes));
  if (risk !== null)
    return skip(
      `its cache write's premium ($${risk.premium.toFixed(4)}) is more than ${risk.share} of what the session has spent so far ($${risk.spent.toFixed(4)}) plus what this call's stubs save ($${risk.saved.toFixed(4)})`,
    );
  return {
    edit: ctx.adapter.anchorEdit(ctx.raw, slot, ttl),
    report: { placed: true, ttl, reason: `cache breakpoint at ${prefix} tokens` },
  };
}

/**
 * Steady per-turn cost of the prefix under each choice, at the session's observed gap: a breakpoint
 * whose TTL outlives the gap reads the prefix and writes the new turn; one that expires rewrites
 * everything; no breakpoint pays input for what the client's own breakpoints do not cover. The API
 * wants longer TTLs before shorter ones, so a 1-hour anchor is possible only after 1-hour client
 * breakpoints.
 */
function chooseTtl(ctx: TurnContext, prefixTokens: number): "5m" | "1h" | null {
  const a = ctx.analysis;
  const rates = ratesFor(ctx.price!, prefixTokens);
  const gap = ctx.loaded.gap_seconds ?? 0;
  const fresh = Math.max(
    1,
    Math.round(
      (sentOffset(ctx, a.prompt_chars) - sentOffset(ctx, a.last_message_position)) /
        REQUEST_CHARS_PER_TOKEN,
    ),
  );
  const covered = Math.round(clientCovered(ctx) / REQUEST_CHARS_PER_TOKEN);
  const cost = (write: number, ttlSeconds: number) =>
    // a margin of 10%: turns close to the TTL often miss it
    gap <= ttlSeconds * 0.9
      ? prefixTokens * rates.cache_read + fresh * write
      : (prefixTokens + fresh) * write;
  const options: ["5m" | "1h" | null, number][] = [
    [null, covered * rates.cache_read + Math.max(0, prefixTokens + fresh - covered) * rates.input],
    ["5m", cost(rates.cache_write_5m, 300)],
  ];
  if (a.breakpoints.every((b) => b.ttl === "1h"))
    options.push(["1h", cost(rates.cache_write_1h, 3600)]);
  return options.reduce((best, o) => (o[1] < best[1] ? o : best))[0];
}

/**
 * The risk bound (see the top of this file): null when the anchor's write may go, else what it would
 * risk against what the session has spent. The premium is on the tokens past the client's last
 * breakpoint (those the client caches are written whatever we do); the spend is the prompts of the
 * earlier calls and of this one (paid whatever the anchor does), as they go out: the part under the
 * client's breakpoint at the read rate, the rest at input.
 */
function riskOf(
  ctx: TurnContext,
  prefixTokens: number,
  ttl: "5m" | "1h",
  saved: number,
): { premium: number; spent: number; share: number; saved: number } | null {
  const share = ctx.config.tool_result_anchor_risk_share;
  if (share === null) return null;
  const a = ctx.analysis;
  const rates = ratesFor(ctx.price!, prefixTokens);
  const covered = Math.min(prefixTokens, Math.round(clientCovered(ctx) / REQUEST_CHARS_PER_TOKEN));
  const write = ttl === "1h" ? rates.cache_write_1h : rates.cache_write_5m;
  const premium = usd(prefixTokens - covered, write - rates.input);
  // The prompts as they go out (our stubs in place), so the same call decides the same whether the
  // client sends its full history or our output back.
  let spentChars = sentOffset(ctx, a.prompt_chars);
  for (const end of a.call_prompt_ends ?? []) spentChars += sentOffset(ctx, end);
  const spentTokens = spentChars / REQUEST_CHARS_PER_TOKEN;
  const read = Math.min(spentTokens, covered * (a.assistant_turns + 1));
  const spent = usd(spentTokens - read, rates.input) + usd(read, rates.cache_read);
  return premium <= share * spent + saved ? null : { premium, spent, share, saved };
}

/**
 * What this call's stubs take off its bill (USD): each result sent as a stub instead of in full, at the
 * rate the client's own request would have paid for it (cache read before its last breakpoint, input
 * after). It is billed on this very call, so a premium it covers cannot make the session dearer even if
 * the session ends here; and a recall of a result stubbed now re-reads this prompt, from the cache once
 * the anchor has written it.
 */
function savedThisCall(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  outcomes: ReadonlyMap<ToolResultSite, Outcome>,
): number {
  const a = ctx.analysis;
  const rates = ratesFor(
    ctx.price!,
    Math.round(sentOffset(ctx, a.prompt_chars) / REQUEST_CHARS_PER_TOKEN),
  );
  const covered = a.breakpoints[a.breakpoints.length - 1]?.position ?? 0;
  let saved = 0;
  for (const site of sites) {
    const d = outcomes.get(site)?.decision;
    if (d === undefined || d.action === "kept") continue;
    const tokens = Math.max(0, d.tokens - d.sent_tokens);
    saved += usd(tokens, site.position < covered ? rates.cache_read : rates.input);
  }
  return saved;
}

/** Where the client's own last breakpoint is, as the prompt goes out (0: none). */
function clientCovered(ctx: TurnContext): number {
  const bps = ctx.analysis.breakpoints;
  const last = bps[bps.length - 1];
  return last === undefined ? 0 : sentOffset(ctx, last.position);
}

/**
 * What this turn's edits take out of the request (sentOffset's input): each result's full body less its
 * stub, and, negative, the recall tool's declaration it adds.
 */
function goingOut(
  ctx: TurnContext,
  sites: readonly ToolResultSite[],
  outcomes: ReadonlyMap<ToolResultSite, Outcome>,
  declaration: Edit | null,
): Replaced {
  const out: [position: number, chars: number][] = [];
  if (declaration !== null)
    out.push([declaration.start, declaration.end - declaration.start - declaration.text.length]);
  for (const site of sites) {
    const text = outcomes.get(site)?.replacement;
    if (text !== undefined) out.push([site.position, charsTakenOut(ctx, site, text)]);
  }
  return replacedFrom(out);
}

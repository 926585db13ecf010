/**
 * First decisions: a settled, non-hot result seen for the first time (or, opt-in, a fresh large one
 * on first delivery) is tiered, priced by the net-saving gate, and, when it is replaced, its body
 * made durable in the ledger before the stub exists. A decision becomes a record the turn commits;
 * from then on it is replayed (replay.ts), never taken again.
 */

import { ratioOf } from "../calibration.ts";
import { waitsForColdCache } from "../cold.ts";
import type { ToolResultSite } from "../formats/types.ts";
import {
  CACHEABLE_STUB_MAX_SHARE,
  cacheableStubTokens,
  type GateInput,
  offloadGate,
} from "../gate.ts";
import { decodeString, getMember, type JsonNode, ownedString } from "../json/scan.ts";
import { bodyDigest, MEM_ID_PATTERN, memIdOf } from "../memid.ts";
import { describeCause } from "../problems.ts";
import { type StructureIndex, structureOf } from "../structure.ts";
import { type RecallArgs, renderCompacted, renderRecallMarker, renderStub } from "../stub.ts";
import { CHARS_PER_TOKEN, estimateTokens } from "../tokens.ts";
import type { GateResult, ResultRecord } from "../types.ts";
import { movedOutcome, movePoint, priceMove } from "./breakpoint.ts";
import {
  arrivalId,
  charsOf,
  charsTakenOut,
  decisionOf,
  isRecallResult,
  measure,
  type Outcome,
  pending,
  pressureId,
  rawLength,
  settleId,
  type TurnContext,
  tierOf,
  warmId,
} from "./context.ts";
import type { Flight } from "./flight.ts";
import { FROZEN_REASON, isFrozen, offloadBlocked } from "./frozen.ts";
import { priceOffload } from "./price.ts";
import { configOf, isHot, neverOffloaded, neverReason, ruledReason } from "./tool-rules.ts";

/**
 * What a first decision gives: the outcome, and the record to commit (none when nothing may stick
 * yet).
 */
export interface FirstDecision {
  outcome: Outcome;
  record?: ResultRecord;
}

/** A first decision whose body is being made durable (flight.ts): it stands once that is done. */
export interface LaterDecision {
  later: Promise<FirstDecision>;
}

const SMALL = "small: at most the size floor";

/**
 * First delivery (on by default): a medium or large fresh result may be offloaded before the model ever
 * reads it, where the gate's price says so.
 */
export function firstDeliveryCandidate(ctx: TurnContext, site: ToolResultSite): boolean {
  const config = configOf(ctx, site);
  return (
    ctx.offload &&
    config.tool_result_first_delivery === "gated" &&
    !site.settled &&
    !neverOffloaded(ctx, site) &&
    charsOf(ctx, site) >=
      (config.tool_result_first_delivery_min_chars ?? config.tool_result_compaction_size_chars + 1)
  );
}

/**
 * Why a result is offloaded without asking the gate: a context-pressure batch (pressure.ts), under a
 * record id of its own, or the breakpoint move's decision on its arrival (breakpoint.ts), now that it
 * is settled.
 */
export type Forced = "pressure" | "settle";

/**
 * `firstDelivery`: the result is fresh (not settled, or hot): it may be offloaded on arrival (a default), or
 * its breakpoint moved and its offload decided for once it is settled (breakpoint.ts); `forced`: offloaded
 * whatever its tier and the gate.
 */
export async function decide(
  ctx: TurnContext,
  site: ToolResultSite,
  firstDelivery: boolean,
  flight: Flight,
  forced: Forced | null = null,
): Promise<FirstDecision | LaterDecision> {
  const pressure = forced === "pressure";
  const m = measure(ctx, site);
  const config = configOf(ctx, site);
  const tier = tierOf(config, m.chars);
  const base = {
    tool_use_id: pressure ? pressureId(site.tool_use_id) : site.tool_use_id,
    tool_name: site.tool_name,
    tier,
    chars: m.chars,
    tokens: m.tokens,
    kind: m.kind,
    ws: m.ws,
    raw_chars: rawLength(site),
    turn: ctx.analysis.assistant_turns,
  };
  const settle = (
    fields: Pick<
      ResultRecord,
      "action" | "mem_id" | "fingerprint" | "rendered" | "rendered_tokens" | "reason" | "gate"
    >,
  ): FirstDecision => {
    const record: ResultRecord = {
      ...base,
      ...fields,
      reason: ruledReason(ctx, site, fields.reason),
    };
    const decision = decisionOf(site, record, false);
    return {
      outcome: fields.rendered === null ? { decision } : { decision, replacement: fields.rendered },
      record,
    };
  };
  const kept = (reason: string, gate: GateResult | null = null): FirstDecision =>
    settle({
      action: "kept",
      mem_id: null,
      fingerprint: "",
      rendered: null,
      rendered_tokens: m.tokens,
      reason,
      gate,
    });

  // A rule's "never", like small, is a pure function of the result and the config: derived again each
  // turn, never recorded, so a turn of many such results commits nothing for them (a commit stays
  // bounded whatever the request). A floor lowered later (or the rule dropped) lets the gate weigh
  // such a result then, priced like any other.
  if (neverOffloaded(ctx, site)) return { outcome: kept(neverReason(ctx, site)).outcome };
  // Before the latest thinking block of a preserved-thinking model: as sent, derived again each turn like
  // "never" (frozen.ts).
  if (isFrozen(ctx, site.position)) return { outcome: kept(FROZEN_REASON).outcome };
  if (tier === "small" && !pressure) return { outcome: kept(SMALL).outcome };
  // Nothing new is offloaded where its recall could not be declared or answered (frozen.ts).
  const blocked = isRecallResult(site) ? null : offloadBlocked(ctx);
  if (blocked !== null) return { outcome: kept(blocked).outcome };
  // Fresh and not offered on first delivery: only the breakpoint move can decide it now.
  const offered = !firstDelivery || firstDeliveryCandidate(ctx, site);
  const hot = isHot(ctx, site);
  const answer = isRecallResult(site) ? await recallAnswerOf(ctx, site) : null;
  if (answer === "unknown")
    return { outcome: pending(ctx, site, false, "kept full: could not tell a recall answer") };
  if (answer !== null) {
    // A recall answer is never offloaded to a new mem_id (that would chain recalls): unseen, it is
    // kept; once settled, a marker that the ledger's body re-derives.
    if (firstDelivery) return { outcome: pending(ctx, site, false) };
    const args = answer;
    const rendered = renderRecallMarker(m.chars, args);
    return settle({
      action: "compacted",
      mem_id: args.mem_id as string,
      fingerprint: await bodyDigest(ctx.secret, ctx.ref.tenant, ctx.ref.session, m.text),
      rendered,
      rendered_tokens: estimateTokens(rendered.length),
      reason: "recall answer: shortened to a marker once used",
      gate: null,
    });
  }

  // The structural index parses the body: only a result the gate weighs (or a stub) needs it.
  let structure: StructureIndex | null = null;
  const structured = (): StructureIndex => (structure ??= structureOf(m.text, m.kind));
  // The stub's preview: the configured one, or raised to keep a caching client's prompt cacheable
  // (cacheablePreview); the record's rendered text holds it, so later turns replay the same bytes.
  let preview = ctx.config.tool_result_stub_preview_chars;
  const stubOf = (memId: string, previewChars = preview): string =>
    renderStub({
      unseen: firstDelivery && offered,
      mem_id: memId,
      tool_name: site.tool_name,
      chars: m.chars,
      tokens: m.tokens,
      structure: structured(),
      body: m.text,
      preview_chars: previewChars,
      mode: ctx.config.tool_result_recall_mode,
    });
  let gate: GateResult | null = null;
  if (ctx.offload && forced === null) {
    // Only large results reach the fixed-prior gate. A learning gate sees the medium ones too: its
    // recall rate is measured, so a session whose model never recalls stops paying for caution.
    // (A medium result offered at first delivery, `tool_result_first_delivery_min_chars`, is gated.)
    const weighed = tier !== "medium" || config.tool_result_offload_adaptive;
    if (!weighed && !(firstDelivery && offered))
      return firstDelivery
        ? { outcome: pending(ctx, site, hot) }
        : kept("medium: below the offload threshold, kept full");
    const stubTokens = estimateTokens(stubOf(PLACEHOLDER).length);
    const gateInput = offered ? priceOffload(ctx, site, m.tokens, stubTokens, firstDelivery) : null;
    gate = gateInput === null ? null : offloadGate(gateInput);
    // The same stub with a larger preview, where the plain one would uncache the prompt: whichever
    // nets more (the gate's own algebra prices both).
    const padded =
      gateInput === null
        ? null
        : cacheablePreview(ctx, site, gateInput, m.tokens, firstDelivery, (chars) =>
            stubOf(PLACEHOLDER, chars),
          );
    if (padded?.gate.fire && (!gate!.fire || padded.gate.net_usd > gate!.net_usd)) {
      preview = padded.preview_chars;
      gate = {
        ...padded.gate,
        reason: `${padded.gate.reason}; preview raised to ${preview} chars to keep the prompt cacheable`,
      };
    }
    // Fresh: stubbed now (first delivery), or kept in full once with the breakpoint moved before it and
    // offloaded once settled, whichever the prices say saves more (move.ts).
    const point = firstDelivery ? movePoint(ctx, site) : null;
    const move = point === null ? null : priceMove(ctx, site, point, m.tokens, stubTokens);
    if (move?.fire && (gate === null || !gate.fire || move.net_usd > gate.net_usd)) {
      const decided = settle({
        action: "kept",
        mem_id: null,
        fingerprint: "",
        rendered: null,
        rendered_tokens: m.tokens,
        reason: move.reason,
        gate: move.gate,
      });
      return {
        outcome: movedOutcome(pending(ctx, site, hot), move.reason),
        record: { ...decided.record!, tool_use_id: settleId(site.tool_use_id) },
      };
    }
    if (gate === null || gateInput === null) return { outcome: pending(ctx, site, hot) };
    if (!gate.fire) {
      // Declined at first delivery: recorded for the result's arrival only (`arrivalId`), so compacting
      // this turn's output again, or a retry, declines it again whatever else this turn changed (the
      // recall tool declared by a later result); the usual decision follows once it is settled.
      if (firstDelivery) {
        const reason = `first delivery declined: ${gate.reason}`;
        const declined = pending(ctx, site, hot, reason);
        const record = kept(reason, gate).record!;
        return {
          outcome: { decision: { ...declined.decision, gate } },
          record: { ...record, tool_use_id: arrivalId(site.tool_use_id) },
        };
      }
      // Declined only because the cache is warm: kept under a record of its own, which stands while
      // the cache stays warm (so compacting this turn's output again decides nothing new), and the
      // first turn after a lapse weighs the result again.
      if (waitsForColdCache(gateInput)) {
        const warm = kept(`kept while the cache is warm: ${gate.reason}`, gate);
        return { ...warm, record: { ...warm.record!, tool_use_id: warmId(site.tool_use_id) } };
      }
      return kept(`${tier}: ${gate.reason}`, gate);
    }
  }

  // From here the body is hashed and written, overlapped with the next decisions. Priced as
  // declared from now on (the tool comes with the first stub; the turn undoes it if none lands).
  if (ctx.offload) ctx.toolDeclared = true;
  // The later results of this turn are priced on the prompt with this stub in place (price.ts).
  if (ctx.offload)
    ctx.takenThisTurn = (ctx.takenThisTurn ?? 0) + charsTakenOut(ctx, site, stubOf(PLACEHOLDER));
  const store = async (): Promise<FirstDecision> => {
    const digest = await bodyDigest(ctx.secret, ctx.ref.tenant, ctx.ref.session, m.text);
    const memId = memIdOf(digest);
    const rendered = ctx.offload
      ? stubOf(memId)
      : renderCompacted({
          mem_id: memId,
          body: m.text,
          chars: m.chars,
          tokens: m.tokens,
          preview_chars: config.tool_result_compaction_preview_chars,
          recall_available: false,
        });
    try {
      // The ledger keeps it: a slice of the request would keep the request.
      await ctx.turn.putBody(ownedString(m.text), {
        mem_id: memId,
        tool_use_id: site.tool_use_id,
        tool_name: site.tool_name,
        chars: m.chars,
        tokens: m.tokens,
        kind: ctx.offload ? structured().kind : m.kind,
        outline: ctx.offload ? structured().outline : "",
        turn: ctx.analysis.assistant_turns,
      });
    } catch (cause) {
      // No stub without a durable body. Not recorded, so a later turn tries again.
      ctx.problems.push({
        code: "storage_error",
        tool_use_id: site.tool_use_id,
        message: `body not stored, kept full (${describeCause(cause)})`,
      });
      return { outcome: pending(ctx, site, false, "kept full: the ledger write failed") };
    }
    return settle({
      action: ctx.offload ? "offloaded" : "compacted",
      mem_id: memId,
      fingerprint: digest,
      rendered,
      rendered_tokens: estimateTokens(rendered.length),
      reason: pressure
        ? `${tier}: context pressure, offloaded oldest-first in one batch`
        : forced === "settle"
          ? `${tier}: offloaded once settled, as decided on its arrival (the cache breakpoint was moved before it)`
          : ctx.offload
            ? `${tier}${firstDelivery ? ", first delivery" : ""}: ${gate!.reason}`
            : "size-only path: shortened to a head preview",
      gate,
    });
  };
  const { done } = await flight.start(m.chars, store);
  return { later: done };
}

/** A mem_id of the right length: the stub's size before its body is hashed. */
const PLACEHOLDER = memIdOf("0".repeat(24));

/**
 * Where the stub would bring a caching client's prompt below the model's minimum cacheable length (and the
 * result keeps it above), the same stub with its preview raised until the prompt as sent reaches the
 * minimum (gate.ts `cacheableStubTokens`, with its margin and cap), priced by the gate: its extra tokens
 * are read from the cache on each later call instead of the whole prompt billed at input. null when that
 * does not apply or no preview within the cap reaches it. The preview grows by the shortfall at the stub's
 * chars per token; a head cut at a line break can fall short, so it is measured again (at most 3 times).
 */
function cacheablePreview(
  ctx: TurnContext,
  site: ToolResultSite,
  input: GateInput,
  resultTokens: number,
  firstDelivery: boolean,
  render: (previewChars: number) => string,
): { preview_chars: number; gate: GateResult } | null {
  const target = cacheableStubTokens(input);
  if (target === null) return null;
  // the gate's tokens per estimated token (calibration), as priceOffload scales the stub
  const k = Math.max(0.1, ratioOf(ctx.calibration, "request"));
  let previewChars = ctx.config.tool_result_stub_preview_chars;
  let priced = input;
  for (let i = 0; i < 3 && priced.stub_tokens < target; i++) {
    previewChars += Math.ceil(((target - priced.stub_tokens) / k) * CHARS_PER_TOKEN.text);
    const stub = estimateTokens(render(previewChars).length);
    priced = priceOffload(ctx, site, resultTokens, stub, firstDelivery);
  }
  if (
    priced.stub_tokens < target ||
    priced.stub_tokens > priced.result_tokens * CACHEABLE_STUB_MAX_SHARE
  )
    return null;
  return { preview_chars: previewChars, gate: offloadGate(priced) };
}

/**
 * A result of a tool named recall_tool_result is a recall answer only when its arguments name a
 * mem_id this session issued: then the ledger holds what the marker points at. Clients may declare
 * a tool of that name themselves; its results are ordinary (a marker would lose their text).
 * "unknown": the ledger could not be asked, so the result stays full and undecided this turn.
 */
async function recallAnswerOf(
  ctx: TurnContext,
  site: ToolResultSite,
): Promise<RecallArgs | "unknown" | null> {
  const args = parseArgs(site.tool_input_source ?? ctx.raw, site.tool_input);
  const memId = args.mem_id;
  if (typeof memId !== "string" || !MEM_ID_PATTERN.test(memId)) return null;
  // The stub is usually still in the request: its record names the mem_id.
  for (const r of ctx.loaded.records.values())
    if (r.mem_id === memId && r.action !== "kept") return args;
  try {
    return (await ctx.turn.hasBody(memId)) ? args : null;
  } catch (cause) {
    ctx.problems.push({
      code: "storage_error",
      tool_use_id: site.tool_use_id,
      message: `could not tell whether this recall_tool_result answer is ours; kept full (${describeCause(cause)})`,
    });
    return "unknown";
  }
}

/** The recall call's arguments, to name the slice in a settled answer's marker. */
function parseArgs(raw: string, input: JsonNode | undefined): RecallArgs {
  if (input?.kind !== "object") return {};
  const out: Record<string, unknown> = {};
  for (const key of ["mem_id", "query", "json_path", "offset", "max_chars", "window"]) {
    const node = getMember(input, key);
    if (node?.kind === "string") out[key] = decodeString(raw, node);
    else if (node?.kind === "number") out[key] = Number(raw.slice(node.start, node.end));
  }
  return out as RecallArgs;
}

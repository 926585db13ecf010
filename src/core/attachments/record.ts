/**
 * An attachment block's decision and its sticky record: building the report's decision, the record
 * a turn commits, replacing a block (a long text goes to the ledger first), leaving it native, and
 * replaying an earlier turn's record.
 */

import { base64DecodedLength } from "../bytes/base64.ts";
import type { MediaSite } from "../formats/types.ts";
import { decodeString } from "../json/scan.ts";
import { bodyDigest, memIdOf } from "../memid.ts";
import { ratesFor, usd } from "../pricing.ts";
import { describeCause, type ExtractionProblem, extractionProblem } from "../problems.ts";
import { REQUEST_CHARS_PER_TOKEN } from "../tokens.ts";
import type { TurnContext } from "../turn/context.ts";
import type { AttachmentInfo, ResultRecord } from "../types.ts";
import {
  type AttachmentDecision,
  INLINE_REPLACEMENT_CHARS,
  type MediaEntry,
  type MediaOutcome,
} from "./types.ts";

interface DecisionFields {
  info: AttachmentInfo;
  id: string;
  sticky: boolean;
  reason: string;
  /** Tokens as sent when replaced (null: unknown). */
  sent: number | null;
  /** False: the block stays native (a sticky "kept" record). */
  replaced?: boolean;
  cached?: boolean | undefined;
}

/** Dollars per token where the block sits: cache read before the last breakpoint, input after. */
export function rateAt(ctx: TurnContext, position: number): number {
  const { price, analysis } = ctx;
  if (price === null) return 0;
  const rates = ratesFor(price, analysis.prompt_chars / REQUEST_CHARS_PER_TOKEN);
  const last = analysis.breakpoints[analysis.breakpoints.length - 1];
  return last !== undefined && position < last.position ? rates.cache_read : rates.input;
}

/** The report's decision for a block with a record (or about to have one). */
export function decisionFrom(
  ctx: TurnContext,
  at: { path: string; position: number },
  f: DecisionFields,
): AttachmentDecision {
  const { info } = f;
  const replaced = f.replaced ?? true;
  const native = info.native_tokens;
  const sent = replaced ? f.sent : native;
  const saved = replaced && native !== null && sent !== null ? native - sent : 0;
  return {
    id: f.id,
    path: at.path,
    kind: info.kind,
    action: replaced ? (info.kind === "image" ? "placeholder" : "text") : "native",
    sticky: f.sticky,
    turn: info.arrived,
    format: info.format,
    bytes: info.bytes,
    native_tokens: native,
    sent_tokens: sent,
    saved_tokens: saved,
    saved_usd: saved === 0 ? 0 : usd(saved, rateAt(ctx, at.position)),
    ...(f.cached === undefined ? {} : { cached: f.cached }),
    reason: f.reason,
    ...(info.failed === undefined ? {} : { error: extractionProblem(info.failed) }),
  };
}

/** Native this turn, nothing recorded: a later turn decides again. */
export function nativeOutcome(
  ctx: TurnContext,
  site: MediaSite,
  id: string | null,
  reason: string,
  nativeTokens: number | null,
  error?: ExtractionProblem,
): MediaOutcome {
  return {
    decision: {
      id,
      path: site.path,
      kind: site.kind,
      action: "native",
      sticky: false,
      turn: site.turn,
      format: site.media_type ?? null,
      bytes: site.data === undefined ? null : bytesOf(ctx, site),
      native_tokens: nativeTokens,
      sent_tokens: nativeTokens,
      saved_tokens: 0,
      saved_usd: 0,
      reason,
      ...(error === undefined ? {} : { error }),
    },
  };
}

function bytesOf(ctx: TurnContext, site: MediaSite): number {
  const data = site.data!;
  if (site.source_type === "text") return data.end - data.start - 2; // close enough for a report
  return data.escaped
    ? base64DecodedLength(decodeString(ctx.raw, data))
    : base64DecodedLength(ctx.raw.slice(data.start + 1, data.end - 1));
}

/** A sticky decision to leave the block native. */
export function keep(
  ctx: TurnContext,
  e: MediaEntry,
  info: AttachmentInfo,
  reason: string,
  cached?: boolean,
): MediaOutcome {
  e.fresh = recordOf(ctx, e, info, "kept", reason, null, null, info.native_tokens ?? 0);
  return {
    decision: decisionFrom(ctx, e.site, {
      info,
      id: e.id!,
      sticky: false,
      reason,
      sent: null,
      replaced: false,
      cached,
    }),
  };
}

function recordOf(
  ctx: TurnContext,
  e: MediaEntry,
  info: AttachmentInfo,
  action: "kept" | "compacted",
  reason: string,
  rendered: string | null,
  memId: string | null,
  sentTokens: number,
): ResultRecord {
  return {
    tool_use_id: e.id!,
    tool_name: `attachment:${e.site.kind}`,
    tier: "attachment",
    action,
    mem_id: memId,
    chars: rendered?.length ?? 0,
    tokens: info.native_tokens ?? 0,
    kind: "text",
    raw_chars: e.site.end - e.site.start,
    fingerprint: "",
    rendered,
    rendered_tokens: sentTokens,
    turn: ctx.analysis.assistant_turns,
    reason,
    gate: null,
    attachment: info,
  };
}

/**
 * Replace the block: a long text goes to the ledger first (no replacement without its text stored).
 */
export async function replace(
  ctx: TurnContext,
  e: MediaEntry,
  info: AttachmentInfo,
  rendered: string,
  sent: number,
  reason: string,
  cached?: boolean,
): Promise<MediaOutcome> {
  const { turn, ref, secret, analysis } = ctx;
  let memId: string | null = null;
  if (rendered.length > INLINE_REPLACEMENT_CHARS) {
    memId = memIdOf(await bodyDigest(secret, ref.tenant, ref.session, rendered));
    try {
      await turn.putBody(rendered, {
        mem_id: memId,
        tool_use_id: e.id!,
        tool_name: `attachment:${e.site.kind}`,
        chars: rendered.length,
        tokens: sent,
        kind: "text",
        outline: "",
        turn: analysis.assistant_turns,
      });
    } catch (cause) {
      ctx.problems.push({
        code: "storage_error",
        tool_use_id: e.id!,
        message: `attachment text not stored, sent natively (${describeCause(cause)})`,
      });
      return nativeOutcome(
        ctx,
        e.site,
        e.id,
        "sent natively: its text could not be stored (tried again next turn)",
        info.native_tokens,
      );
    }
  }
  e.fresh = recordOf(
    ctx,
    e,
    info,
    "compacted",
    reason,
    memId === null ? rendered : null,
    memId,
    sent,
  );
  return {
    decision: decisionFrom(ctx, e.site, { info, id: e.id!, sticky: false, reason, sent, cached }),
    rendered,
  };
}

/**
 * Render a block from its sticky record; a replacement whose text is in the ledger is read back.
 */
export async function replayMedia(
  ctx: TurnContext,
  site: MediaSite,
  record: ResultRecord,
): Promise<MediaOutcome> {
  const info = record.attachment;
  const id = record.tool_use_id;
  if (info === undefined)
    return nativeOutcome(
      ctx,
      site,
      id,
      "sent natively: its record is not an attachment decision",
      null,
    );
  const sticky = { info, id, sticky: true, reason: record.reason };
  if (record.action !== "compacted")
    return { decision: decisionFrom(ctx, site, { ...sticky, sent: null, replaced: false }) };
  let rendered = record.rendered;
  if (rendered === null && record.mem_id !== null) {
    try {
      rendered = (await ctx.turn.getBody(record.mem_id))?.body ?? null;
    } catch (cause) {
      ctx.problems.push({
        code: "storage_error",
        tool_use_id: id,
        message: `attachment text unreadable, sent natively this turn (${describeCause(cause)})`,
      });
      return nativeOutcome(
        ctx,
        site,
        id,
        "sent natively this turn: its text could not be read from the ledger",
        info.native_tokens,
      );
    }
  }
  if (rendered === null)
    return nativeOutcome(
      ctx,
      site,
      id,
      "sent natively: its text is missing from the ledger",
      info.native_tokens,
    );
  return {
    decision: decisionFrom(ctx, site, { ...sticky, sent: record.rendered_tokens }),
    rendered,
  };
}

/**
 * First decisions about attachment blocks: a document is extracted (through the tenant's cache) and
 * replaced by its text when that saves tokens and drops nothing; an image is replaced by a
 * placeholder once it is no longer hot (with its OCR text when the extractor does OCR). A failure
 * that may pass (a missing dependency) records nothing, so a later turn tries again; any other
 * failure leaves the block native for good.
 */
import { decodeBase64 } from "../bytes/base64.ts";
import { imageInfo } from "../bytes/image.ts";
import type { MediaSite } from "../formats/types.ts";
import { decodeString } from "../json/scan.ts";
import type { Extraction, ExtractionRequest } from "../ports.ts";
import { usd } from "../pricing.ts";
import { extractionProblem } from "../problems.ts";
import { plural } from "../text.ts";
import { detectKind, estimateTokens } from "../tokens.ts";
import type { TurnContext } from "../turn/context.ts";
import { FROZEN_REASON, isFrozen } from "../turn/frozen.ts";
import { turnHorizon } from "../turn/price.ts";
import type { AttachmentInfo } from "../types.ts";
import { keep, nativeOutcome, rateAt, replace } from "./record.ts";
import {
  documentTokens,
  type ImagePlaceholderInput,
  imageTokens,
  renderDocumentText,
  renderImagePlaceholder,
} from "./text.ts";
import type { MediaEntry, MediaOutcome, OcrStatus } from "./types.ts";

/** How many files this turn parsed (not served from the cache). */
export interface ExtractionCount {
  parsed: number;
}

export async function firstDecision(
  ctx: TurnContext,
  e: MediaEntry,
  count: ExtractionCount,
): Promise<MediaOutcome> {
  const { site } = e;
  const native = (reason: string, tokens: number | null) =>
    nativeOutcome(ctx, site, e.id, reason, tokens);
  // An image with no bytes here is never read by OCR: say so when OCR was asked for.
  const unread = (outcome: MediaOutcome) =>
    withOcr(ctx, outcome, { outcome: "skipped", reason: outcome.decision.reason });
  if (e.id === null)
    return site.kind === "image"
      ? unread(
          native(
            `a ${site.source_type} source carries no bytes here: sent as it is`,
            imageTokens(undefined, undefined),
          ),
        )
      : native(`a ${site.source_type} source carries no bytes here: sent as it is`, null);
  // Before the latest thinking block of a preserved-thinking model: as sent (turn/frozen.ts).
  if (isFrozen(ctx, site.position)) {
    if (site.kind !== "image") return native(FROZEN_REASON, null);
    const head = site.source_type === "base64" ? imageHead(ctx, site) : null;
    return native(FROZEN_REASON, imageTokens(head?.width, head?.height));
  }
  if (site.kind === "document") {
    if (site.citations)
      return native("citations are enabled: it stays a document so the model can cite it", null);
    if (ctx.config.attachment_policy === "extract_after_first" && !site.settled)
      return native(
        "extract_after_first: sent natively on the turn it arrives, as its text from the next",
        null,
      );
    return documentDecision(ctx, e, count);
  }
  if (site.source_type !== "base64")
    return unread(
      native(
        `an image with a ${site.source_type} source: sent as it is`,
        imageTokens(undefined, undefined),
      ),
    );
  const hot = ctx.config.attachment_image_hot_turns;
  if (ctx.analysis.assistant_turns - site.turn < hot) {
    const head = imageHead(ctx, site);
    return withOcr(
      ctx,
      native(
        `hot: an image stays native for ${plural(hot, "turn")} from the one it arrives on`,
        imageTokens(head?.width, head?.height),
      ),
      {
        outcome: "hot",
        reason: `hot: read by OCR when it leaves its hot turns, on turn ${site.turn + hot}`,
      },
    );
  }
  return imageDecision(ctx, e, count);
}

/** The decision with what OCR did for the image, when the config asks for OCR. */
function withOcr(ctx: TurnContext, outcome: MediaOutcome, ocr: OcrStatus): MediaOutcome {
  if (!ctx.config.attachment_ocr) return outcome;
  return { ...outcome, decision: { ...outcome.decision, ocr } };
}

async function extract(
  ctx: TurnContext,
  count: ExtractionCount,
  request: Omit<ExtractionRequest, "tenant" | "cache">,
): Promise<Extraction> {
  if (ctx.extractor === undefined)
    return {
      outcome: {
        ok: false,
        error: {
          type: "extraction_dependency_missing",
          message: "no attachment extractor is plugged in",
          format: "unknown",
        },
      },
      cached: false,
      format: "unknown",
      bytes: 0,
    };
  const out = await ctx.extractor.extract({
    ...request,
    tenant: ctx.ref.tenant,
    cache: ctx.turn.extractions,
  });
  if (!out.cached) count.parsed++;
  return out;
}

/** "corrupt", "encrypted: …": a failure's type and reason, for a decision's reason. */
function failureName(problem: { code: string; reason?: string }): string {
  return `${problem.code}${problem.reason === undefined ? "" : `: ${problem.reason}`}`;
}

async function documentDecision(
  ctx: TurnContext,
  e: MediaEntry,
  count: ExtractionCount,
): Promise<MediaOutcome> {
  const { site } = e;
  const { config, raw } = ctx;
  const data = decodeString(raw, site.data!);
  const out = await extract(ctx, count, {
    attachment:
      site.source_type === "text"
        ? { type: "text", media_type: site.media_type, data, filename: site.title }
        : { type: "base64", media_type: site.media_type ?? "", data, filename: site.title },
    kind: "document",
    max_pages: config.attachment_max_pages,
    max_chars: config.attachment_max_chars,
  });
  const base = {
    kind: "document" as const,
    format: out.format === "unknown" ? (site.media_type ?? "unknown") : out.format,
    bytes: out.bytes,
    arrived: site.turn,
  };
  if (!out.outcome.ok) {
    const failed = extractionProblem(out.outcome.error);
    const why = `extraction failed (${failureName(failed)}): ${failed.message}; sent natively`;
    // A missing part may be configured later: no sticky decision, a later turn tries again.
    if (failed.code === "extraction_dependency_missing")
      return nativeOutcome(ctx, site, e.id, `${why}, tried again next turn`, null, failed);
    return keep(ctx, e, { ...base, native_tokens: null, failed }, why, out.cached);
  }
  const r = out.outcome.result;
  const kind = detectKind(r.text);
  const textTokens = estimateTokens(r.text.length, kind);
  const info: AttachmentInfo = {
    ...base,
    format: r.format,
    ...(r.pages === undefined ? {} : { pages: r.pages }),
    native_tokens: documentTokens(r.format, r.pages, r.pages_extracted, textTokens),
  };
  if (r.truncated) {
    const limit =
      r.truncated_by === "max_pages"
        ? `attachment_max_pages (${config.attachment_max_pages} of ${r.pages} pages)`
        : `${r.truncated_by ?? "a limit"}`;
    return keep(
      ctx,
      e,
      info,
      `longer than ${limit}: sent natively so nothing is dropped`,
      out.cached,
    );
  }
  const rendered = renderDocumentText({
    id: e.id!,
    title: site.title,
    format: r.format,
    pages: r.pages,
    bytes: out.bytes,
    turn: site.turn,
    text: r.text,
  });
  const sent = estimateTokens(rendered.length, kind);
  // The provider reads PDFs and plain text natively; any other document it cannot read, so its text
  // is always better.
  const readable =
    r.format === "pdf" || site.source_type === "text" || site.media_type === "text/plain";
  if (readable && sent >= info.native_tokens!)
    return keep(
      ctx,
      e,
      info,
      `no saving: its text (~${sent} tokens) costs as much as the document (~${info.native_tokens})`,
      out.cached,
    );
  return replace(
    ctx,
    e,
    info,
    rendered,
    sent,
    `${config.attachment_policy}: replaced by its extracted text`,
    out.cached,
  );
}

/** The image's header (format, size) from the first bytes only: what a hot image's report needs. */
function imageHead(ctx: TurnContext, site: MediaSite): { width?: number; height?: number } | null {
  const data = site.data!;
  const prefix = data.escaped
    ? decodeString(ctx.raw, data).slice(0, 65536)
    : ctx.raw.slice(data.start + 1, Math.min(data.end - 1, data.start + 1 + 65536));
  try {
    return imageInfo(decodeBase64(prefix.slice(0, prefix.length - (prefix.length % 4))));
  } catch {
    return null;
  }
}

/**
 * Whether an image's OCR text pays for itself: over the horizon (expected remaining turns) the
 * placeholder with the text must cost less than the image re-sent each turn, at the rate where the
 * block sits. Asked before OCR with no text yet (can any text pay? never for an unknown model,
 * whose tokens cannot be priced), and after it with the text read. OCR itself runs lazily: only on
 * the turn the image leaves its hot turns (a screenshot used once is never read), and once per file
 * and tenant (the extraction cache).
 */
function ocrGate(
  ctx: TurnContext,
  position: number,
  nativeTokens: number,
  placeholder: ImagePlaceholderInput,
): { fire: boolean; why: string } {
  if (ctx.price === null) return { fire: false, why: "the model's prices are unknown" };
  const horizon = turnHorizon(ctx);
  const text = estimateTokens(renderImagePlaceholder(placeholder).length);
  const rate = rateAt(ctx, position);
  const saving = usd(horizon * (nativeTokens - text), rate);
  const withText = placeholder.ocr_text === undefined ? "" : " with the text";
  const why = `over ${Math.round(horizon * 10) / 10} turns the image costs ~$${usd(horizon * nativeTokens, rate)}, its placeholder${withText} ~$${usd(horizon * text, rate)}`;
  return { fire: saving > 0, why };
}

async function imageDecision(
  ctx: TurnContext,
  e: MediaEntry,
  count: ExtractionCount,
): Promise<MediaOutcome> {
  const { site } = e;
  let bytes: Uint8Array;
  try {
    bytes = decodeBase64(decodeString(ctx.raw, site.data!));
  } catch {
    const failed = {
      code: "extraction_failed" as const,
      reason: "corrupt",
      message: "image data is not valid base64",
    };
    return withOcr(
      ctx,
      keep(
        ctx,
        e,
        {
          kind: "image",
          format: site.media_type ?? "image",
          bytes: 0,
          arrived: site.turn,
          native_tokens: imageTokens(undefined, undefined),
          failed,
        },
        "not valid base64: sent as it is",
      ),
      { outcome: "failed", reason: "not valid base64" },
    );
  }
  const head = imageInfo(bytes);
  const info: AttachmentInfo = {
    kind: "image",
    format: head?.format ?? site.media_type ?? "image",
    bytes: bytes.length,
    arrived: site.turn,
    ...(head?.width === undefined || head.height === undefined
      ? {}
      : { width: head.width, height: head.height }),
    native_tokens: imageTokens(head?.width, head?.height),
  };
  let ocrText: string | undefined;
  let note = "";
  let cached: boolean | undefined;
  let ocr: OcrStatus | undefined;
  const placeholder: ImagePlaceholderInput = {
    id: e.id!,
    format: info.format,
    width: info.width,
    height: info.height,
    bytes: info.bytes,
    turn: site.turn,
  };
  if (ctx.config.attachment_ocr && !ctx.extractor?.ocr)
    ocr = {
      outcome: "unavailable",
      reason:
        ctx.extractor === undefined
          ? "no attachment extractor is plugged in"
          : "the extractor has no OCR engine plugged in",
    };
  else if (ctx.config.attachment_ocr) {
    const gate = ocrGate(ctx, site.position, info.native_tokens!, placeholder);
    if (!gate.fire) {
      note = `; not read by OCR: ${gate.why}`;
      ocr = { outcome: "skipped", reason: `not worth reading: ${gate.why}` };
    } else {
      const out = await extract(ctx, count, {
        attachment: { data: bytes, media_type: site.media_type },
        kind: "image",
      });
      cached = out.cached;
      if (out.outcome.ok) {
        const text = out.outcome.result.text;
        const paid = ocrGate(ctx, site.position, info.native_tokens!, {
          ...placeholder,
          ocr_text: text,
        });
        if (paid.fire) {
          ocrText = text;
          const how = out.outcome.result.ocr_note;
          ocr = {
            outcome: "read",
            cached,
            reason: `read: ${text.length} characters${how === undefined ? "" : `, ${how}`}`,
          };
        } else {
          note = `; its OCR text is left out: ${paid.why}`;
          ocr = { outcome: "dropped", cached, reason: `its text is left out: ${paid.why}` };
        }
      } else {
        const failed = extractionProblem(out.outcome.error);
        if (failed.code === "extraction_dependency_missing")
          return withOcr(
            ctx,
            nativeOutcome(
              ctx,
              site,
              e.id,
              `OCR unavailable (${failed.message}): sent natively, tried again next turn`,
              info.native_tokens,
              failed,
            ),
            { outcome: "unavailable", reason: `${failed.message}: tried again next turn` },
          );
        note = `; OCR failed (${failureName(failed)})`;
        ocr = {
          outcome: "failed",
          cached,
          reason: `${failureName(failed)}: ${failed.message}`,
        };
      }
    }
  }
  const decided = await placeholderDecision(ctx, e, info, placeholder, ocrText, note, cached);
  return ocr === undefined ? decided : withOcr(ctx, decided, ocr);
}

/** The image replaced by its placeholder (with its OCR text, when read and paid for), or kept. */
function placeholderDecision(
  ctx: TurnContext,
  e: MediaEntry,
  info: AttachmentInfo,
  placeholder: ImagePlaceholderInput,
  ocrText: string | undefined,
  note: string,
  cached: boolean | undefined,
): Promise<MediaOutcome> | MediaOutcome {
  const rendered = renderImagePlaceholder({ ...placeholder, ocr_text: ocrText });
  const sent = estimateTokens(rendered.length);
  if (sent >= info.native_tokens!)
    return keep(
      ctx,
      e,
      info,
      `no saving: the image (~${info.native_tokens} tokens) costs less than its placeholder (~${sent})`,
      cached,
    );
  const hot = ctx.config.attachment_image_hot_turns;
  return replace(
    ctx,
    e,
    info,
    rendered,
    sent,
    `no longer hot (${plural(hot, "turn")}): replaced by a placeholder${ocrText === undefined ? "" : " with its OCR text"}${note}`,
    cached,
  );
}

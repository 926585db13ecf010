/**
 * The extraction entry points: isExtractable / probeAttachment (cheap, synchronous, never throw),
 * extractText (one attachment, typed errors) and extractTexts (many; "warn" reports each failure and
 * extracts the rest, "raise" stops at the first).
 */

import { imageInfo } from "../core/bytes/image.ts";
import { safeCut } from "../core/text.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import { decodeText } from "./decode.ts";
import { extractDocx } from "./docx.ts";
import {
  AttachmentError,
  type AttachmentErrorBody,
  ExtractionDependencyMissingError,
  ExtractionFailedError,
  UnsupportedAttachmentError,
} from "./errors.ts";
import { htmlToText } from "./html.ts";
import { type NormalizedAttachment, normalizeAttachment } from "./input.ts";
import { type OcrOptions, ocrRunLimits, ocrScale, overPixelsMessage } from "./ocr.ts";
import { loadOcrModel, recognized } from "./ocr-run.ts";
import { OoxmlPackage } from "./ooxml.ts";
import {
  type ExtractOptions,
  type ResolvedExtractOptions,
  resolveExtractOptions,
} from "./options.ts";
import { extractPdf } from "./pdf.ts";
import { isImageFormat, isTextFormat, judge, kindOf, sniff } from "./sniff.ts";
import type {
  Attachment,
  AttachmentProbe,
  DetectedFormat,
  ExtractResult,
  ImageFormat,
  TextFormat,
} from "./types.ts";
import { extractXlsx } from "./xlsx.ts";
import type { ZipEntry } from "./zip.ts";

/** The cheap probe: format from magic bytes and declared type, and whether extractText would handle it. */
export function probeAttachment(
  attachment: Attachment,
  options: { ocr?: OcrOptions | undefined } = {},
): AttachmentProbe {
  let a: NormalizedAttachment;
  try {
    a = normalizeAttachment(attachment);
  } catch (error) {
    const format: DetectedFormat = error instanceof AttachmentError ? error.format : "unknown";
    return {
      format,
      kind: "other",
      extractable: false,
      reason: error instanceof Error ? error.message : String(error),
      bytes: 0,
    };
  }
  const { format } = sniff(a);
  const verdict = judge(format, options.ocr);
  const info = isImageFormat(format) ? imageInfo(a.bytes) : null;
  return {
    format,
    kind: kindOf(format),
    extractable: verdict.extractable,
    ...(verdict.reason === undefined ? {} : { reason: verdict.reason }),
    bytes: a.bytes.length,
    ...(info?.width === undefined || info.height === undefined
      ? {}
      : { width: info.width, height: info.height }),
  };
}

/** True when extractText is expected to succeed on a well-formed file of this kind (see probeAttachment). */
export function isExtractable(
  attachment: Attachment,
  options: { ocr?: OcrOptions | undefined } = {},
): boolean {
  return probeAttachment(attachment, options).extractable;
}

function finish(result: ExtractResult, format: DetectedFormat, maxChars: number): ExtractResult {
  let out = result;
  if (out.text.length > maxChars) {
    out = {
      ...out,
      text: out.text.slice(0, safeCut(out.text, maxChars)),
      truncated: true,
      truncated_by: out.truncated_by ?? "max_chars",
    };
  }
  if (out.text.trim() === "")
    throw new ExtractionFailedError(format, "empty", "the attachment contains no text");
  return out;
}

function extractPlain(a: NormalizedAttachment, format: TextFormat): ExtractResult {
  const raw = a.text ?? decodeText(a.bytes, a.charset);
  return { text: format === "html" ? htmlToText(raw) : raw, format, truncated: false };
}

async function extractImage(
  a: NormalizedAttachment,
  format: ImageFormat,
  ocr: OcrOptions,
): Promise<ExtractResult> {
  // judge() has already checked that OCR is on and that an engine and a model source are configured.
  const engine = ocr.engine!;
  const info = imageInfo(a.bytes);
  const size =
    info?.width !== undefined && info.height !== undefined
      ? { width: info.width, height: info.height }
      : {};
  const maxPixels = ocrRunLimits(ocr).max_pixels;
  // Over the limit but within it at half resolution, the engine's decoders halve it (it says so).
  if (size.width !== undefined && ocrScale(size.width, size.height, maxPixels) === null) {
    throw new ExtractionFailedError(
      format,
      "too_large",
      overPixelsMessage("the image", size.width, size.height, maxPixels),
    );
  }
  const { model, limits } = await loadOcrModel(ocr, format);
  const read = await recognized(ocr, format, "the image", () =>
    engine.recognize({ bytes: a.bytes, format, ...size }, model, limits),
  );
  return {
    text: read.text,
    format,
    truncated: false,
    ...size,
    ...(read.confidence === undefined ? {} : { confidence: read.confidence }),
    ...(read.note === undefined ? {} : { ocr_note: read.note }),
  };
}

async function extractSniffed(
  a: NormalizedAttachment,
  format: DetectedFormat,
  zip: ZipEntry[] | undefined,
  options: ResolvedExtractOptions,
): Promise<ExtractResult> {
  if (format === "pdf") return extractPdf(a.bytes, options);
  if (format === "docx")
    return extractDocx(new OoxmlPackage("docx", a.bytes, options, zip), options.max_chars);
  if (format === "xlsx")
    return extractXlsx(new OoxmlPackage("xlsx", a.bytes, options, zip), options);
  if (isTextFormat(format)) return extractPlain(a, format);
  if (isImageFormat(format) && options.ocr) return extractImage(a, format, options.ocr);
  throw new UnsupportedAttachmentError(format, `${format} files are not extracted`);
}

/**
 * Extract the text of one attachment. Throws UnsupportedAttachmentError, ExtractionDependencyMissingError or
 * ExtractionFailedError (all with `fallback: "native"`), or an `invalid_argument` OffloadError for a
 * malformed attachment object or invalid options.
 */
export async function extractText(
  attachment: Attachment,
  options: ExtractOptions = {},
): Promise<ExtractResult> {
  const opts = resolveExtractOptions(options);
  const a = normalizeAttachment(attachment, opts.max_bytes);
  const { format, zip } = sniff(a);
  const verdict = judge(format, opts.ocr);
  if (!verdict.extractable) {
    const reason = verdict.reason ?? `${format} files are not extracted`;
    if (verdict.error === "extraction_dependency_missing")
      throw new ExtractionDependencyMissingError(
        format,
        verdict.dependency ?? "ocr_engine",
        reason,
      );
    throw new UnsupportedAttachmentError(format, reason);
  }
  if (a.bytes.length > opts.max_bytes) {
    throw new ExtractionFailedError(
      format,
      "too_large",
      `the attachment has ${a.bytes.length} bytes, more than the ${opts.max_bytes} allowed`,
    );
  }
  let result: ExtractResult;
  try {
    result = await extractSniffed(a, format, zip, opts);
  } catch (error) {
    if (isOffloadError(error)) throw error;
    // Parsers see untrusted bytes: whatever else they throw means this file could not be read.
    throw new ExtractionFailedError(
      format,
      "corrupt",
      `the ${format} file could not be read`,
      error,
    );
  }
  return finish(result, format, opts.max_chars);
}

export type ExtractTextsItem =
  | ({ index: number; filename?: string; ok: true } & ExtractResult)
  | {
      index: number;
      filename?: string;
      ok: false;
      /** `fallback: "native"`: send the attachment natively instead. */
      error: (AttachmentErrorBody | { type: string; message: string }) & { fallback: "native" };
    };

export interface ExtractTextsOptions extends ExtractOptions {
  /** "warn" (default): every attachment gets a result, failures included. "raise": throw the first failure. */
  on_error?: "warn" | "raise";
}

function filenameOf(attachment: Attachment): string | undefined {
  try {
    return normalizeAttachment(attachment).filename;
  } catch {
    return undefined;
  }
}

/**
 * Extract many attachments, one after the other (extraction is CPU-bound, and one at a time keeps at most
 * one file's parse in memory). In "raise" mode the first failure is thrown with `index` set.
 */
export async function extractTexts(
  attachments: readonly Attachment[],
  options: ExtractTextsOptions = {},
): Promise<ExtractTextsItem[]> {
  const { on_error = "warn", ...extractOptions } = options;
  if (on_error !== "warn" && on_error !== "raise") {
    throw new OffloadError("invalid_argument", 'on_error must be "warn" or "raise"', {
      path: "on_error",
    });
  }
  resolveExtractOptions(extractOptions); // invalid options fail once, up front, in both modes
  const results: ExtractTextsItem[] = [];
  for (let index = 0; index < attachments.length; index++) {
    const attachment = attachments[index]!;
    const filename = filenameOf(attachment);
    const named = filename === undefined ? {} : { filename };
    try {
      const result = await extractText(attachment, extractOptions);
      results.push({ index, ...named, ok: true, ...result });
    } catch (error) {
      if (on_error === "raise") {
        if (error instanceof AttachmentError) error.index = index;
        throw error;
      }
      const body =
        error instanceof AttachmentError
          ? error.body()
          : isOffloadError(error)
            ? { type: error.type, message: error.message }
            : { type: "internal", message: "extraction failed unexpectedly" };
      results.push({ index, ...named, ok: false, error: { ...body, fallback: "native" } });
    }
  }
  return results;
}

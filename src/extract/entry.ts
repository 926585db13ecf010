/**
 * `edge-offload/extract`: attachments turned into text once. `extractText` / `extractTexts` read PDF,
 * DOCX, XLSX, HTML, text, CSV and JSON (and images and scanned pages by OCR, with an engine); every
 * failure is a typed `AttachmentError` that says "send it natively" (`fallback: "native"`).
 * `attachmentExtractor` plugs extraction (and OCR) into `compact`'s attachment policy; the OCR engine
 * (`tesseractEngine`, over the optional `tesseract-wasm` peer) and its model sources are here too.
 *
 * @example
 * import { extractText, isAttachmentError } from "edge-offload/extract";
 * const out = await extractText({ data: bytes, media_type: "application/pdf" });
 */
export { documentTokens, imageTokens, NATIVE_ESTIMATE } from "../core/attachments/text.ts";
export { decodeBase64 } from "../core/bytes/base64.ts";
export type { ImageInfo } from "../core/bytes/image.ts";
export { imageInfo } from "../core/bytes/image.ts";
export type {
  AttachmentExtractor,
  CachedExtraction,
  ExtractedText,
  Extraction,
  ExtractionCache,
  ExtractionFailure,
  ExtractionInput,
  ExtractionRequest,
} from "../core/ports.ts";
export type { AttachmentOptions } from "./attachment-extractor.ts";
export { attachmentExtractor } from "./attachment-extractor.ts";
export type {
  CachedExtractInput,
  CachedExtractOutput,
  ExtractionOutcome,
  Extractor,
} from "./cache.ts";
export { extractCached, extractionCacheKey, isCacheableFailure } from "./cache.ts";
export type {
  AttachmentErrorBody,
  AttachmentErrorType,
  AttachmentErrorWire,
  ExtractionFailureReason,
  MissingDependency,
} from "./errors.ts";
export {
  AttachmentError,
  ExtractionDependencyMissingError,
  ExtractionFailedError,
  isAttachmentError,
  UnsupportedAttachmentError,
} from "./errors.ts";
export type { ExtractTextsItem, ExtractTextsOptions } from "./extract.ts";
export { extractText, extractTexts, isExtractable, probeAttachment } from "./extract.ts";
export { htmlToText } from "./html.ts";
export type { NormalizedAttachment } from "./input.ts";
export { attachmentDigest, normalizeAttachment } from "./input.ts";
export type {
  ModelBucket,
  OcrEngine,
  OcrImage,
  OcrModelSource,
  OcrOptions,
  OcrPixels,
  OcrRaster,
  OcrRunLimits,
  OcrText,
} from "./ocr.ts";
export {
  bucketModelSource,
  bytesModelSource,
  DEFAULT_OCR_MAX_PIXELS,
  OCR_PEAK_BUDGET_BYTES,
  OCR_PEAK_BYTES_PER_PIXEL,
} from "./ocr.ts";
export type { TesseractEngineOptions } from "./ocr-tesseract.ts";
export { tesseractEngine } from "./ocr-tesseract.ts";
export type {
  ExtractLimits,
  ExtractLimitsInput,
  ExtractOptions,
  ResolvedExtractOptions,
} from "./options.ts";
export {
  DEFAULT_EXTRACT_LIMITS,
  ExtractLimitsSchema,
  extractionVariant,
  extractOptionsFromQuery,
  resolveExtractOptions,
} from "./options.ts";
export type * from "./types.ts";

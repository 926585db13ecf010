/**
 * Typed extraction errors. Each says "send this attachment natively instead" (`fallback:
 * "native"`): none of them is a fault of the service, so they are OffloadErrors (one typed error
 * path, status 422) and a route's onError can answer them without knowing about extraction.
 *
 * Which one is thrown follows one rule: UnsupportedAttachmentError ⟺ the probe (isExtractable)
 * already says no from magic bytes, declared type and options; ExtractionDependencyMissingError ⟺
 * the format is handled but a configured part is absent; ExtractionFailedError ⟺ this particular
 * file could not be read.
 */
import { OffloadError } from "../errors.ts";
import type { DetectedFormat } from "./types.ts";

export type ExtractionFailureReason =
  | "corrupt"
  | "encrypted"
  | "empty"
  | "too_large"
  | "low_confidence";
export type MissingDependency = "ocr_engine" | "ocr_model" | "pdf_engine";

export type AttachmentErrorType =
  | "unsupported_attachment"
  | "extraction_dependency_missing"
  | "extraction_failed";

/** What an extraction failure says (cached as it is, with the file's outcome). */
export interface AttachmentErrorBody {
  type: AttachmentErrorType;
  message: string;
  format: DetectedFormat;
  reason?: ExtractionFailureReason;
  dependency?: MissingDependency;
  index?: number;
}

/**
 * Any extraction failure: an OffloadError (status 422) that says to send the attachment natively.
 */
export abstract class AttachmentError extends OffloadError {
  override readonly type: AttachmentErrorType;
  readonly fallback = "native" as const;
  /** What the bytes were detected as. */
  readonly format: DetectedFormat;
  /** Position in the list, when thrown by extractTexts in "raise" mode. */
  index: number | undefined = undefined;

  protected constructor(
    type: AttachmentErrorType,
    format: DetectedFormat,
    message: string,
    cause?: unknown,
  ) {
    super(type, message, cause === undefined ? {} : { cause });
    this.type = type;
    this.format = format;
  }

  body(): AttachmentErrorBody {
    return {
      type: this.type,
      message: this.message,
      format: this.format,
      ...(this.index === undefined ? {} : { index: this.index }),
    };
  }

  /** The one error shape, `{"error":{type, message, format, reason?, …, fallback:"native"}}`. */
  override toJSON(): { error: AttachmentErrorWire } {
    return { error: attachmentErrorWire(this.body()) };
  }
}

/**
 * A format we do not handle (legacy .doc/.xls, WebP, encrypted OOXML, images while OCR is off, a
 * URL source…).
 */
export class UnsupportedAttachmentError extends AttachmentError {
  constructor(format: DetectedFormat, message: string) {
    super("unsupported_attachment", format, message);
    this.name = "UnsupportedAttachmentError";
  }
}

/**
 * The format is handled, but a part it needs is not configured (OCR on but its engine or model
 * absent).
 */
export class ExtractionDependencyMissingError extends AttachmentError {
  readonly dependency: MissingDependency;

  constructor(
    format: DetectedFormat,
    dependency: MissingDependency,
    message: string,
    cause?: unknown,
  ) {
    super("extraction_dependency_missing", format, message, cause);
    this.name = "ExtractionDependencyMissingError";
    this.dependency = dependency;
  }

  override body(): AttachmentErrorBody {
    return { ...super.body(), dependency: this.dependency };
  }
}

/**
 * This file could not be read: `corrupt`, `encrypted`, `empty` (no text, e.g. a scanned PDF),
 * `too_large`, or `low_confidence` (OCR read it, but not well enough to replace the image).
 */
export class ExtractionFailedError extends AttachmentError {
  readonly reason: ExtractionFailureReason;

  constructor(
    format: DetectedFormat,
    reason: ExtractionFailureReason,
    message: string,
    cause?: unknown,
  ) {
    super("extraction_failed", format, message, cause);
    this.name = "ExtractionFailedError";
    this.reason = reason;
  }

  override body(): AttachmentErrorBody {
    return { ...super.body(), reason: this.reason };
  }
}

/**
 * An extraction failure as clients get it: the body with what to do instead (`fallback: "native"`).
 */
export type AttachmentErrorWire = AttachmentErrorBody & { fallback: "native" };

export function attachmentErrorWire(body: AttachmentErrorBody): AttachmentErrorWire {
  return { ...body, fallback: "native" };
}

/** True for the three typed extraction failures (catch one, send the file natively). */
export function isAttachmentError(value: unknown): value is AttachmentError {
  return value instanceof AttachmentError;
}

/**
 * Normalises every accepted attachment shape (raw bytes, Anthropic base64/text sources, whole
 * document/image blocks) into bytes + declared type + file name, without copying the caller's bytes
 * and without mutating them.
 */
import { base64DecodedLength, decodeBase64 } from "../core/bytes/base64.ts";
import { OffloadError } from "../errors.ts";
import { ExtractionFailedError, UnsupportedAttachmentError } from "./errors.ts";
import type { Attachment } from "./types.ts";

export interface NormalizedAttachment {
  bytes: Uint8Array;
  /**
   * Declared media type, lower-cased, parameters dropped ("text/csv; charset=utf-8" → "text/csv").
   */
  media_type: string | undefined;
  /** Declared charset parameter, if any. */
  charset: string | undefined;
  filename: string | undefined;
  /** Set for Anthropic text sources: the text itself, so it is not re-decoded. */
  text: string | undefined;
}

function splitMediaType(value: unknown): {
  media_type: string | undefined;
  charset: string | undefined;
} {
  if (typeof value !== "string" || value.trim() === "")
    return { media_type: undefined, charset: undefined };
  const [head, ...params] = value.split(";");
  let charset: string | undefined;
  for (const p of params) {
    const [k, v] = p.split("=");
    if (k?.trim().toLowerCase() === "charset" && v)
      charset = v.trim().replace(/^"|"$/g, "").toLowerCase();
  }
  return { media_type: head!.trim().toLowerCase(), charset };
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string")
    throw new OffloadError("invalid_argument", `attachment.${field} must be a string`, {
      path: field,
    });
  return value;
}

const encoder = new TextEncoder();

/**
 * Normalise an attachment. Shape errors (not an object, no data) are `invalid_argument`
 * OffloadErrors: the caller's bug, not the file's. Bad base64 is a corrupt file; a URL/file source
 * is unsupported (nothing to read here). `maxBytes` refuses a base64 payload before decoding it.
 */
export function normalizeAttachment(input: Attachment, maxBytes = Infinity): NormalizedAttachment {
  if (typeof input !== "object" || input === null)
    throw new OffloadError("invalid_argument", "attachment must be an object");
  const record = input as unknown as Record<string, unknown>;
  if (record.type === "document" || record.type === "image") {
    const source = record.source;
    if (typeof source !== "object" || source === null)
      throw new OffloadError("invalid_argument", `${record.type} block has no source`, {
        path: "source",
      });
    const title = optionalString(record.title, "title");
    const inner = source as Record<string, unknown>;
    return normalizeAttachment(
      {
        ...(inner as unknown as Attachment),
        ...(title !== undefined && inner.filename === undefined ? { filename: title } : {}),
      } as Attachment,
      maxBytes,
    );
  }
  const filename = optionalString(record.filename, "filename");
  const { media_type, charset } = splitMediaType(optionalString(record.media_type, "media_type"));
  if (record.type === "url" || record.type === "file" || record.type === "content") {
    throw new UnsupportedAttachmentError(
      "remote",
      `a ${String(record.type)} source carries no bytes to extract; send it natively`,
    );
  }
  const data = record.data;
  if (record.type === "text") {
    if (typeof data !== "string")
      throw new OffloadError("invalid_argument", "text source data must be a string", {
        path: "data",
      });
    return {
      bytes: encoder.encode(data),
      media_type: media_type ?? "text/plain",
      charset: undefined,
      filename,
      text: data,
    };
  }
  if (record.type === "base64") {
    if (typeof data !== "string")
      throw new OffloadError("invalid_argument", "base64 source data must be a string", {
        path: "data",
      });
    if (base64DecodedLength(data) > maxBytes) {
      throw new ExtractionFailedError(
        "unknown",
        "too_large",
        `attachment is larger than the ${maxBytes}-byte limit`,
      );
    }
    let bytes: Uint8Array;
    try {
      bytes = decodeBase64(data);
    } catch (cause) {
      throw new ExtractionFailedError(
        "unknown",
        "corrupt",
        "attachment data is not valid base64",
        cause,
      );
    }
    return { bytes, media_type, charset, filename, text: undefined };
  }
  if (record.type !== undefined)
    throw new OffloadError(
      "invalid_argument",
      `unknown attachment source type ${JSON.stringify(record.type)}`,
      { path: "type" },
    );
  let bytes: Uint8Array;
  if (data instanceof Uint8Array) bytes = data;
  else if (data instanceof ArrayBuffer) bytes = new Uint8Array(data);
  else if (ArrayBuffer.isView(data))
    bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  else
    throw new OffloadError(
      "invalid_argument",
      'attachment.data must be a Uint8Array or ArrayBuffer (or use {type:"base64", data})',
      { path: "data" },
    );
  return { bytes, media_type, charset, filename, text: undefined };
}

/** The file's extension, lower-cased, without the dot ("Report.PDF" → "pdf"). */
export function extensionOf(filename: string | undefined): string | undefined {
  if (!filename) return undefined;
  const base = filename.slice(filename.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : undefined;
}

/**
 * SHA-256 of the bytes as lower-case hex: the key under which an extraction is stored once per
 * tenant.
 */
export async function attachmentDigest(input: Attachment): Promise<string> {
  const { bytes } = normalizeAttachment(input);
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return hex;
}

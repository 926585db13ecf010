/**
 * Extract once per tenant. An extraction is cached under `<sha256 of the bytes>/<format read
 * as>/<variant of the options that change the text>`: the same bytes read as the same format with
 * the same limits always give the same text, so a file sent again — to the extraction route, or in
 * a later turn or another session — is read from the cache instead of being parsed again. The cache
 * is a port (the service keeps it in the R2 ledger); this module only decides what is cached and
 * how a result is looked up.
 *
 * Failures that belong to the bytes (corrupt, encrypted, empty, and low_confidence, whose
 * threshold is in the variant) are cached too: a scanned PDF sent every turn is parsed once.
 * Failures that depend on something else are not: `too_large` (the size limit is not part of the
 * key), a missing dependency (an OCR model may be uploaded later), an unsupported format (the probe
 * says so without parsing anything).
 */
import type { ExtractionCache } from "../core/ports.ts";
import { AttachmentError, type AttachmentErrorBody } from "./errors.ts";
import { extractText } from "./extract.ts";
import { type NormalizedAttachment, normalizeAttachment } from "./input.ts";
import {
  type ExtractCeilings,
  type ExtractOptions,
  extractionVariant,
  resolveExtractOptions,
  underCeilings,
} from "./options.ts";
import { sniff } from "./sniff.ts";
import type { Attachment, DetectedFormat, ExtractResult } from "./types.ts";

/**
 * An extraction's outcome as this engine gives it: the core's CachedExtraction with its full
 * result.
 */
export type ExtractionOutcome =
  | { ok: true; result: ExtractResult }
  | { ok: false; error: AttachmentErrorBody };

/**
 * An extractor; with `ceilings`, a deployment's: every extraction through it runs under those
 * ceilings, and its cache key names the limits it really ran with.
 */
export type Extractor = ((
  attachment: Attachment,
  options: ExtractOptions,
) => Promise<ExtractResult>) & {
  ceilings?: ExtractCeilings;
};

/**
 * `extract` under a deployment's ceilings (whatever options its callers pass, e.g. a session's
 * config).
 */
export function withCeilings(extract: Extractor, ceilings: ExtractCeilings): Extractor {
  const run: Extractor = (attachment, options) =>
    extract(attachment, underCeilings(options, ceilings));
  run.ceilings = ceilings;
  return run;
}

export interface CachedExtractInput {
  attachment: Attachment;
  options?: ExtractOptions;
  tenant: string;
  /** No cache: every call extracts (the library without a store). */
  cache?: ExtractionCache | undefined;
  /** The extractor (extractText unless a test or an embedder plugs in another). */
  extract?: Extractor | undefined;
}

export interface CachedExtractOutput {
  outcome: ExtractionOutcome;
  /** The outcome came from the cache: nothing was parsed. */
  cached: boolean;
  /** The cache key, or null when the attachment could not even be decoded. */
  key: string | null;
  /** SHA-256 of the bytes (hex), or null when they could not be decoded. */
  digest: string | null;
  format: DetectedFormat;
  /** Bytes of the decoded attachment (0 when it could not be decoded). */
  bytes: number;
  /** A cache read or write failed (the outcome is still right: the file was extracted). */
  cache_error?: "read" | "write";
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/**
 * The cache key of an already normalised attachment: digest, detected format (+ charset), options
 * variant.
 */
export function extractionCacheKey(
  digest: string,
  format: DetectedFormat,
  charset: string | undefined,
  variant: string,
): string {
  return `${digest}/${format}${charset === undefined ? "" : `;${charset.replace(/[^a-z0-9._-]/g, "")}`}/${variant}`;
}

/** Failures that follow from the bytes alone, so caching them can never hide a later success. */
export function isCacheableFailure(error: AttachmentErrorBody): boolean {
  return (
    error.type === "extraction_failed" &&
    (error.reason === "corrupt" ||
      error.reason === "encrypted" ||
      error.reason === "empty" ||
      error.reason === "low_confidence")
  );
}

/**
 * A cached value of the right shape (a cache is storage: what comes back is checked, not trusted).
 */
function isCachedExtraction(value: unknown): value is ExtractionOutcome {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  if (v.ok === true)
    return (
      typeof v.result === "object" &&
      v.result !== null &&
      typeof (v.result as Record<string, unknown>).text === "string"
    );
  return (
    v.ok === false &&
    typeof v.error === "object" &&
    v.error !== null &&
    typeof (v.error as Record<string, unknown>).type === "string"
  );
}

/** The bytes handed to the extractor: already decoded, so base64 is not decoded twice. */
function decodedAttachment(original: Attachment, a: NormalizedAttachment): Attachment {
  if (a.text !== undefined) return original; // a text source: keep its text exactly (no UTF-8 round trip)
  const mediaType =
    a.media_type === undefined
      ? undefined
      : a.charset === undefined
        ? a.media_type
        : `${a.media_type}; charset=${a.charset}`;
  return { data: a.bytes, media_type: mediaType, filename: a.filename };
}

/**
 * Extract an attachment through the tenant's cache. Attachment errors become `{ok:false}` outcomes
 * (never thrown); invalid options or a malformed attachment object are the caller's bug and are
 * thrown.
 */
export async function extractCached(input: CachedExtractInput): Promise<CachedExtractOutput> {
  const ceilings = input.extract?.ceilings;
  const options =
    ceilings === undefined ? (input.options ?? {}) : underCeilings(input.options ?? {}, ceilings);
  const resolved = resolveExtractOptions(options); // invalid options throw before any work
  const extract = input.extract ?? extractText;
  let a: NormalizedAttachment;
  try {
    a = normalizeAttachment(input.attachment, resolved.max_bytes);
  } catch (error) {
    if (error instanceof AttachmentError)
      return {
        outcome: { ok: false, error: error.body() },
        cached: false,
        key: null,
        digest: null,
        format: error.format,
        bytes: 0,
      };
    throw error;
  }
  const { format } = sniff(a);
  const digest = await sha256Hex(a.bytes);
  const key = extractionCacheKey(
    digest,
    format,
    a.text === undefined ? a.charset : undefined,
    extractionVariant(options),
  );
  const base = { key, digest, format, bytes: a.bytes.length };
  let cacheError: CachedExtractOutput["cache_error"];
  if (input.cache !== undefined) {
    try {
      const hit = await input.cache.getExtraction(input.tenant, key);
      if (isCachedExtraction(hit)) return { outcome: hit, cached: true, ...base };
    } catch {
      cacheError = "read"; // a cache that cannot be read is a miss: extract, and try to write the result
    }
  }
  let outcome: ExtractionOutcome;
  try {
    outcome = { ok: true, result: await extract(decodedAttachment(input.attachment, a), options) };
  } catch (error) {
    if (!(error instanceof AttachmentError)) throw error;
    outcome = { ok: false, error: error.body() };
  }
  if (input.cache !== undefined && (outcome.ok || isCacheableFailure(outcome.error))) {
    try {
      await input.cache.putExtraction(input.tenant, key, outcome);
    } catch {
      cacheError = "write";
    }
  }
  return {
    outcome,
    cached: false,
    ...base,
    ...(cacheError === undefined ? {} : { cache_error: cacheError }),
  };
}

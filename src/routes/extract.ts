/**
 * POST /v1/extract — the text of an attachment, extracted at most once per tenant.
 *
 * - Raw body: the file itself, `Content-Type` as declared (magic bytes win), optional `x-filename` →
 *   200 `{ok:true, format, text, pages?, truncated, …, digest, cached}` or 422
 *   `{error:{type, message, format, reason?, fallback:"native"}, digest?, cached}`.
 * - `multipart/form-data`: every file part, in order → 200 `{results:[…]}` (`on_error=warn`, the default) or
 *   the first failure as 422 (`on_error=raise`).
 * - Query: the extraction limits (`max_pages`, `max_chars`, … of ExtractLimitsSchema), `on_error`, and OCR:
 *   `ocr=true` with the deployment's OCR on (OFFLOAD_OCR) reads images and scanned PDF pages, within limits
 *   the request may lower (`ocr_lang`, `ocr_max_pixels`, `ocr_max_pages`, `ocr_cpu_ms`, `ocr_min_confidence`).
 *   A limit may only be lowered: one above the deployment's ceiling (OFFLOAD_EXTRACT_LIMITS,
 *   OFFLOAD_OCR_LIMITS) is a 400 naming it.
 *
 * Outcomes are cached in the ledger (R2) under the file's SHA-256, the format it was read as and the limits
 * that change the text (src/extract/cache.ts): the same file is not parsed twice in a tenant, whether it came
 * here or in a turn. `x-extract-cache: hit|miss` and the `cached` field say which it was.
 *
 * CPU: extraction is the heaviest thing the service does (a PDF page ≈ 3–6 ms, pdf.js's first load in an
 * isolate more), and it runs inside the request's CPU limit: `max_pages` (and `max_rows` for sheets) bound it.
 */
import { Hono } from "hono";
import { OffloadError } from "../errors.ts";
import { type CachedExtractOutput, extractCached } from "../extract/cache.ts";
import { attachmentErrorWire } from "../extract/errors.ts";
import { OCR_QUERY_KEYS, ocrFromQuery } from "../extract/ocr-service.ts";
import { ExtractLimitsSchema, extractOptionsFromQuery } from "../extract/options.ts";
import type { Attachment } from "../extract/types.ts";
import { limitedBody, readBytes } from "../http/body.ts";
import type { AppEnv } from "../http/context.ts";

/** Files one multipart request may carry: each is parsed in turn inside one request's CPU limit. */
export const MAX_EXTRACT_FILES = 32;

const QUERY_KEYS = new Set([
  ...Object.keys(ExtractLimitsSchema.shape),
  "on_error",
  ...OCR_QUERY_KEYS,
]);

function onErrorOf(value: string | undefined): "warn" | "raise" {
  if (value === undefined || value === "" || value === "warn") return "warn";
  if (value === "raise") return "raise";
  throw new OffloadError("invalid_argument", 'on_error must be "warn" or "raise"', {
    path: "on_error",
  });
}

/** A file name sent in a header: percent-encoded when it is not ASCII (header values are bytes). */
function headerFilename(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function body(out: CachedExtractOutput): Record<string, unknown> {
  const cache = {
    cached: out.cached,
    ...(out.cache_error === undefined ? {} : { cache_error: out.cache_error }),
  };
  if (out.outcome.ok) return { ok: true, ...out.outcome.result, digest: out.digest, ...cache };
  return {
    error: attachmentErrorWire(out.outcome.error),
    ...(out.digest === null ? {} : { digest: out.digest }),
    ...cache,
  };
}

const json = (value: unknown, status: number, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(value), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });

async function filesOf(
  request: Request,
  contentType: string,
  limit: number,
): Promise<{ field: string; file: File }[]> {
  const { stream, error } = limitedBody(request, limit);
  let form: FormData;
  try {
    form = await new Response(stream, { headers: { "content-type": contentType } }).formData();
  } catch (cause) {
    const tooLarge = error();
    if (tooLarge !== undefined) throw tooLarge;
    throw new OffloadError(
      "invalid_request",
      "the multipart/form-data body could not be parsed (check the boundary)",
      { cause },
    );
  }
  const files: { field: string; file: File }[] = [];
  for (const [field, value] of form.entries()) {
    if (typeof value === "string")
      throw new OffloadError(
        "invalid_request",
        `multipart field ${JSON.stringify(field)} is not a file; send options in the query string`,
        { path: field },
      );
    files.push({ field, file: value });
  }
  if (files.length === 0)
    throw new OffloadError("invalid_request", "the multipart body has no file parts");
  if (files.length > MAX_EXTRACT_FILES)
    throw new OffloadError(
      "invalid_request",
      `at most ${MAX_EXTRACT_FILES} files per request (got ${files.length})`,
    );
  return files;
}

export const extractRoutes = new Hono<AppEnv>().post("/", async (c) => {
  const url = new URL(c.req.url);
  for (const key of url.searchParams.keys()) {
    if (!QUERY_KEYS.has(key))
      throw new OffloadError("invalid_argument", `unknown query parameter ${JSON.stringify(key)}`, {
        path: key,
      });
  }
  const { store, settings, tenant, extract, ocr } = c.var;
  const options = {
    ...extractOptionsFromQuery(url.searchParams, settings.extractCeilings),
    ocr: ocrFromQuery(url.searchParams, c.env, ocr),
  };
  const onError = onErrorOf(c.req.query("on_error"));
  const contentType = c.req.header("content-type") ?? "";
  const run = (attachment: Attachment) =>
    extractCached({ attachment, options, tenant, cache: store, extract });

  if (/^multipart\/form-data\s*;/i.test(contentType)) {
    const files = await filesOf(c.req.raw, contentType, settings.maxBodyBytes);
    const results: Record<string, unknown>[] = [];
    // One at a time: extraction is CPU-bound, and one parse at a time keeps one file's work in memory.
    for (const [index, { field, file }] of files.entries()) {
      const filename = file.name === "" ? undefined : file.name;
      const out = await run({
        data: new Uint8Array(await file.arrayBuffer()),
        media_type: file.type === "" ? undefined : file.type,
        filename,
      });
      const named = { index, field, ...(filename === undefined ? {} : { filename }) };
      if (!out.outcome.ok && onError === "raise")
        return json(
          { ...body(out), error: attachmentErrorWire({ ...out.outcome.error, index }) },
          422,
        );
      // In a list of results, `ok` tells a success from a failure.
      const item = { ...named, ok: out.outcome.ok, ...body(out) };
      results.push(item);
    }
    return json({ results }, 200, {
      "x-extract-cache": results.every((r) => r.cached === true) ? "hit" : "miss",
    });
  }

  const data = await readBytes(c.req.raw, settings.maxBodyBytes);
  if (data.byteLength === 0)
    throw new OffloadError(
      "invalid_request",
      "the request body is empty; send the file as the body, or multipart/form-data",
    );
  const out = await run({
    data,
    media_type: contentType === "" ? undefined : contentType,
    filename: headerFilename(c.req.header("x-filename")),
  });
  return json(body(out), out.outcome.ok ? 200 : 422, {
    "x-extract-cache": out.cached ? "hit" : "miss",
  });
});

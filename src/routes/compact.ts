/**
 * POST /v1/sessions/:id/compact?format=anthropic — body: the provider request exactly as the client
 * would send it; answer: the request to send instead (everything off: the very same bytes, not even
 * decoded), with the turn's summary in `x-offload-summary`.
 */
import { Hono } from "hono";
import { adapterFor, compact } from "../core/compact.ts";
import { type PreparedRequest, prepareRequest, turnKeys } from "../core/prepare.ts";
import type { Format } from "../core/types.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import { readBytes, readText } from "../http/body.ts";
import { guessOf, hintedLayer, rememberLayer } from "../http/config-hint.ts";
import { type AppEnv, effectiveConfig, headerConfig } from "../http/context.ts";
import { passThroughSummary, type Summary, summaryHeader, summaryOf } from "../http/summary.ts";
import { refOf } from "./session-param.ts";

export const SUPPORTED_FORMATS: readonly Format[] = [
  "anthropic",
  "openai-chat",
  "openai-responses",
];

export function formatOf(value: string | undefined): Format {
  const format = value === undefined || value === "" ? "anthropic" : value;
  if ((SUPPORTED_FORMATS as readonly string[]).includes(format)) return format as Format;
  throw new OffloadError(
    "invalid_argument",
    `unknown format ${JSON.stringify(format)}; use ${SUPPORTED_FORMATS.join(", ")}`,
    { path: "format" },
  );
}

/**
 * Deployments must key mem_ids with their own secret; a shared default would make them guessable
 * across deployments.
 */
export function secretOf(secret: string | undefined): string {
  if (secret === undefined || secret.length < 16)
    throw new OffloadError(
      "internal",
      "service misconfigured: OFFLOAD_SECRET is missing or shorter than 16 characters",
    );
  return secret;
}

export const compactRoutes = new Hono<AppEnv>().post("/:id/compact", async (c) => {
  const ref = refOf(c);
  const format = formatOf(c.req.query("format"));
  const requestLayer = headerConfig(c.req.header("x-offload-config"));
  const { store, settings } = c.var;
  const headers = { "content-type": "application/json; charset=utf-8" };
  // The text, once read, is sent as it is: valid UTF-8 (readText refuses anything else) encodes
  // back to the very bytes that came in.
  let text: string | null = null;
  const passThrough = async (summary: Summary) =>
    new Response(text ?? (await readBytes(c.req.raw, settings.maxBodyBytes)), {
      headers: { ...headers, "x-offload-summary": summaryHeader(summary) },
    });

  // One round trip to the session: when compaction will likely be on, the request is read first,
  // so the session answers its config and the records the turn needs at once.
  const guess = guessOf(settings.defaultConfig, hintedLayer(ref), requestLayer);
  let prepared: PreparedRequest | null = null;
  let unreadable: unknown = null;
  if (guess.enabled) {
    text = await readText(c.req.raw, settings.maxBodyBytes);
    try {
      prepared = prepareRequest(format, adapterFor(format), text);
    } catch (e) {
      // Invalid JSON is a 400 only when compaction is on: with it off, the bytes pass through.
      if (!isOffloadError(e) || e.type !== "invalid_json") throw e;
      unreadable = e;
    }
  }
  const keys = prepared === null ? null : turnKeys(prepared);
  let sessionLayer;
  try {
    ({ config: sessionLayer } = await store.begin(ref, {
      ids: keys?.ids ?? null,
      names: guess.adaptive ? (keys?.names ?? []) : [],
    }));
  } catch (e) {
    if (!isOffloadError(e) || e.type !== "storage_error") throw e;
    // Like the core when it cannot load the session: fail open, the request goes out exactly as
    // sent.
    return passThrough({
      ...passThroughSummary(format),
      errors: [
        { code: "storage_error", message: `${e.message}; request passed through unchanged` },
      ],
      errors_total: 1,
    });
  }
  rememberLayer(ref, sessionLayer);
  const config = effectiveConfig(settings, sessionLayer, requestLayer);
  if (!config.tool_result_compaction_enabled) return passThrough(passThroughSummary(format));
  if (unreadable !== null) throw unreadable;

  const secret = secretOf(settings.secret);
  text ??= await readText(c.req.raw, settings.maxBodyBytes);
  const out = await compact({
    format,
    request: text,
    prepared: prepared ?? undefined,
    session: ref,
    config,
    store,
    secret,
    extractor: c.var.extractor(c.env, config, settings.extractCeilings),
  });
  return new Response(out.request, {
    headers: {
      ...headers,
      "x-offload-summary": summaryHeader({
        ...summaryOf(out.report, out.changed, store.notes),
        // The turn line to post the provider's usage against (POST …/usage).
        ...(store.lastTurnSeq === null ? {} : { seq: store.lastTurnSeq }),
      }),
    },
  });
});

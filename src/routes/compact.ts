/**
 * POST /v1/sessions/:id/compact?format=anthropic — body: the provider request exactly as the client
 * would send it; answer: the request to send instead (everything off: the very same bytes, not even
 * decoded), with the turn's summary in `x-offload-summary`.
 */
import { Hono } from "hono";
import type { OffloadConfig } from "../config.ts";
import { compactionEnabledIn } from "../config.ts";
import { adapterFor, compact } from "../core/compact.ts";
import type { Turn } from "../core/ports.ts";
import type { PreparedRequest } from "../core/prepare.ts";
import { prepareRequest, turnKeys } from "../core/prepare.ts";
import type { Problem } from "../core/problems.ts";
import type { Format } from "../core/types.ts";
import type { Env } from "../env.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import { readBytes, readText } from "../http/body.ts";
import { type AppEnv, effectiveConfig, headerConfig } from "../http/context.ts";
import { passThroughSummary, type Summary, summaryHeader, summaryOf } from "../http/summary.ts";
import { countUnsent, deploymentCounter } from "../proxy/token-count.ts";
import { proxySettingsOf } from "../proxy/upstream.ts";
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

/**
 * `x-offload-sends-betas: true`: the caller sends upstream the `anthropic-beta` values the summary names
 * (`anthropic_beta`), so the turn may need one (the recall tool declared in a system message). Absent or
 * false: nothing the caller did not ask for is ever needed (compact's `sendsBetas`).
 */
export function sendsBetasOf(value: string | undefined): boolean {
  const v = value?.trim().toLowerCase();
  if (v === undefined || v === "" || v === "false" || v === "0") return false;
  if (v === "true" || v === "1") return true;
  throw new OffloadError(
    "invalid_argument",
    `x-offload-sends-betas is true or false, not ${JSON.stringify(value!.slice(0, 40))}`,
    { path: "x-offload-sends-betas" },
  );
}

export const compactRoutes = new Hono<AppEnv>().post("/:id/compact", async (c) => {
  const ref = refOf(c);
  const format = formatOf(c.req.query("format"));
  const requestLayer = headerConfig(c.req.header("x-offload-config"));
  const sendsBetas = sendsBetasOf(c.req.header("x-offload-sends-betas"));
  const { store, settings } = c.var;
  const headers = { "content-type": "application/json; charset=utf-8" };
  // The text, once read, is sent as it is: valid UTF-8 (readText refuses anything else) encodes
  // back to the very bytes that came in.
  let text: string | null = null;
  const passThrough = async (summary: Summary) =>
    new Response(text ?? (await readBytes(c.req.raw, settings.maxBodyBytes)), {
      headers: { ...headers, "x-offload-summary": summaryHeader(summary) },
    });

  // One round trip to the session: when the layers known before it (the deployment's, the
  // request's) turn compaction on, the request is read first, so the session answers its config
  // and the records the turn needs at once. A session that turns compaction on by its own layer
  // alone is asked again once the request is read (its first begin answered only the config).
  const read = () => {
    const prepared = prepareRequest(format, adapterFor(format), text!);
    return { prepared, keys: turnKeys(prepared) };
  };
  const begin = async (keys: { ids: string[]; names: string[] }): Promise<Turn | Response> => {
    try {
      return await store.beginTurn(ref, keys);
    } catch (e) {
      if (!isOffloadError(e) || e.type !== "storage_error") throw e;
      // Like the core when it cannot read the session: fail open, the request goes out exactly as
      // sent.
      return passThrough({
        ...passThroughSummary(format),
        errors: [
          { code: "storage_error", message: `${e.message}; request passed through unchanged` },
        ],
        errors_total: 1,
      });
    }
  };
  let prepared: ReturnType<typeof read> | null = null;
  let unreadable: unknown = null;
  if (compactionEnabledIn(settings.defaultConfig, requestLayer)) {
    text = await readText(c.req.raw, settings.maxBodyBytes);
    try {
      prepared = read();
    } catch (e) {
      // Invalid JSON is a 400 only when compaction is on: with it off, the bytes pass through.
      if (!isOffloadError(e) || e.type !== "invalid_json") throw e;
      unreadable = e;
    }
  }
  let turn = await begin(prepared?.keys ?? { ids: [], names: [] });
  if (turn instanceof Response) return turn;
  const config = effectiveConfig(settings, turn.config, requestLayer);
  if (!config.tool_result_compaction_enabled) return passThrough(passThroughSummary(format));
  if (unreadable !== null) throw unreadable;
  if (text === null) {
    text = await readText(c.req.raw, settings.maxBodyBytes);
    prepared = read();
    turn = await begin(prepared.keys);
    if (turn instanceof Response) return turn;
  }

  const secret = secretOf(settings.secret);
  const out = await compact({
    format,
    request: text,
    prepared: prepared?.prepared,
    session: ref,
    config,
    turn,
    secret,
    sendsBetas,
    extractor: c.var.extractor(c.env, config, settings.extractCeilings),
  });
  // A steady turn's line is written only now: after the answer where the runtime keeps work alive
  // (a failure is then only logged), else before it (a failure then goes in the summary).
  const problems: Problem[] = [];
  const counted = await deploymentCounts(
    c.env,
    format,
    config,
    prepared?.prepared ?? null,
    out.report.estimate?.cut,
  );
  try {
    await turn.finish(counted === null ? undefined : { counted });
  } catch (e) {
    problems.push({
      code: "storage_error",
      message: `the turn's log line could not be written (${isOffloadError(e) ? e.message : "storage failure"})`,
    });
  }
  return new Response(out.request, {
    headers: {
      ...headers,
      "x-offload-summary": summaryHeader({
        ...summaryOf(out.report, out.changed, [...turn.notes, ...problems]),
        // The turn line to post the provider's usage against (POST …/usage).
        ...(turn.seq === null ? {} : { seq: turn.seq }),
      }),
    },
  });
});

/** The compact route waits this long at most for the provider's counts (only on a turn that has some). */
const COMPACT_COUNT_DEADLINE_MS = 2_000;

/**
 * The provider's counts of the results this turn stubbed on arrival, asked with the deployment's own key
 * (`OFFLOAD_COUNT_ANTHROPIC_KEY`, `OFFLOAD_COUNT_OPENAI_KEY`): the compact route's client calls the
 * provider itself, so without a key of the deployment's those results stay estimated. Null when there is
 * nothing to count or no key.
 */
async function deploymentCounts(
  env: Env,
  format: Format,
  config: OffloadConfig,
  prepared: PreparedRequest | null,
  cut: Readonly<Record<string, number>> | undefined,
): Promise<Record<string, number> | null> {
  if (!config.tool_result_count_unsent || prepared === null || cut === undefined) return null;
  const provider =
    format === "anthropic"
      ? "anthropic"
      : format === "openai-chat" || format === "openai-responses"
        ? "openai"
        : null;
  if (provider === null) return null;
  let base: string;
  try {
    base = proxySettingsOf(env).baseUrls[provider];
  } catch {
    return null; // a misconfigured upstream is the proxy routes' error to report, not this one's
  }
  const counter = deploymentCounter(env, provider, base);
  if (counter === null) return null;
  const counts = await countUnsent({
    provider,
    fetcher: (input, init) => globalThis.fetch(input, init),
    url: counter.url,
    headers: counter.headers,
    prepared,
    cut,
    deadlineMs: COMPACT_COUNT_DEADLINE_MS,
  });
  if (counts === undefined) return null;
  const out = await counts;
  return Object.keys(out).length === 0 ? null : out;
}

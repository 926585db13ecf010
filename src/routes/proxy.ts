/**
 * The drop-in proxy for the official clients (docs/proxy.md):
 *   POST /anthropic/v1/messages        → ${ANTHROPIC_BASE_URL}/v1/messages
 *   POST /openai/v1/chat/completions   → ${OPENAI_BASE_URL}/chat/completions
 *   POST /openai/v1/responses          → ${OPENAI_BASE_URL}/responses
 * The client authenticates to us with `x-offload-key` and names its conversation with `x-offload-session`;
 * its provider credentials travel on untouched. Each call: splice back what the session remembers (recall
 * answers of mixed turns), compact with the session's config, forward, and answer recalls here (loop.ts).
 * Every error, ours or the provider's, reaches the client in the provider's error shape; ours say
 * `edge-offload:` and carry an `x-offload-error` header with our error type.
 */
import { type Context, Hono } from "hono";
import { compact, splice } from "../core/compact.ts";
import { sessionRef } from "../core/session.ts";
import type { SessionRef } from "../core/types.ts";
import type { Env } from "../env.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import { withCeilings } from "../extract/cache.ts";
import { extractText } from "../extract/extract.ts";
import { parseApiKeys, presentedKey, tenantOf } from "../http/auth.ts";
import { readBytes, readText } from "../http/body.ts";
import {
  type AppEnv,
  effectiveConfig,
  headerConfig,
  type Settings,
  settingsOf,
} from "../http/context.ts";
import { toOffloadError } from "../http/errors.ts";
import { passThroughSummary, type Summary, summaryHeader, summaryOf } from "../http/summary.ts";
import { anthropicDialect } from "../proxy/anthropic.ts";
import type { Dialect } from "../proxy/dialect.ts";
import { clientHeaders, upstreamHeaders } from "../proxy/headers.ts";
import { droppedResponse, proxyCall } from "../proxy/loop.ts";
import { openaiChatDialect } from "../proxy/openai-chat.ts";
import { openaiResponsesDialect } from "../proxy/openai-responses.ts";
import { type RecallResult, runRecalls } from "../proxy/recalls.ts";
import { proxySettingsOf, send, upstreamUrl } from "../proxy/upstream.ts";
import type { EdgeStore } from "../store/edge.ts";
import type { ProxyMemo } from "../store/parts.ts";
import { secretOf } from "./compact.ts";

export interface ProxyDeps {
  store: (env: Env, settings: Settings, log: (line: string) => void) => EdgeStore;
  log: (line: string) => void;
  maxBodyBytes?: number;
  /** The provider calls (tests inject one); by default the runtime's fetch, looked up at call time. */
  fetch?: typeof fetch;
}

const SESSION_HEADER = "x-offload-session";

function proxyError(dialect: Dialect, err: OffloadError): Response {
  const headers = new Headers({ "content-type": "application/json", "x-offload-error": err.type });
  if (err.status === 503) headers.set("retry-after", "1");
  return new Response(
    dialect.errorBody(err.status, `edge-offload: ${err.message}`, err.type, err.path),
    { status: err.status, headers },
  );
}

async function tenantFor(
  env: Env,
  presented: string | undefined,
  log: (line: string) => void,
): Promise<string> {
  const keys = await parseApiKeys(env.OFFLOAD_API_KEYS, log);
  if (keys.length === 0)
    throw new OffloadError(
      "unauthorized",
      "this deployment has no API keys configured (OFFLOAD_API_KEYS)",
    );
  const key = presentedKey(presented);
  if (key === "") {
    throw new OffloadError(
      "unauthorized",
      "missing x-offload-key header: send your edge-offload key in x-offload-key (the provider's key stays in its usual header)",
      { path: "x-offload-key" },
    );
  }
  const tenant = await tenantOf(keys, key);
  if (tenant === null)
    throw new OffloadError("unauthorized", "unknown x-offload-key", { path: "x-offload-key" });
  return tenant;
}

function sessionOf(tenant: string, id: string | undefined): SessionRef {
  const help = "1-128 chars of letters, digits and . _ : -, one per conversation";
  if (id === undefined || id.trim() === "")
    throw new OffloadError(
      "invalid_argument",
      `missing ${SESSION_HEADER} header: name the conversation (${help})`,
      { path: SESSION_HEADER },
    );
  try {
    return sessionRef({ tenant, id: id.trim() });
  } catch {
    throw new OffloadError("invalid_argument", `${SESSION_HEADER} must be ${help}`, {
      path: SESSION_HEADER,
    });
  }
}

/** Replays the recall answers the session remembers for anchors this request carries, and splices them in. */
async function spliceMemos(
  dialect: Dialect,
  text: string,
  memos: readonly ProxyMemo[],
  store: EdgeStore,
  ref: SessionRef,
  log: (line: string) => void,
): Promise<{ text: string; spliced: number }> {
  const mine = memos.filter((m) => m.format === dialect.format);
  if (mine.length === 0) return { text, spliced: 0 };
  // One regex pass collects the ids the request names, whatever the number of memos; only a request that
  // carries an anchor is scanned and spliced.
  const ids = new Set<string>();
  for (const m of text.matchAll(
    /"(?:id|tool_use_id|tool_call_id|call_id|previous_response_id)"\s*:\s*"([^"\\]{1,256})"/g,
  ))
    ids.add(m[1]!);
  const candidates = mine.filter((m) =>
    (m.kind === "recall" ? m.anchors : [m.from]).some((id) => ids.has(id)),
  );
  if (candidates.length === 0) return { text, spliced: 0 };
  const answers = new Map<string, RecallResult>();
  for (const memo of candidates) {
    try {
      for (const r of await runRecalls(memo.calls, {
        store,
        ref,
        params: memo.params,
        count: false,
      }))
        answers.set(r.id, r);
    } catch (e) {
      // Left out, the turn is still valid as the client holds it; only the model's recall answer is missing.
      // Whatever the failure: a remembered call must never fail every later turn of its conversation.
      log(
        `[edge-offload] a remembered recall could not be replayed (${isOffloadError(e) ? e.type : e instanceof Error ? e.name : "error"}); the request goes without it`,
      );
    }
  }
  try {
    const { edits, spliced } = dialect.splice(text, candidates, answers);
    return edits.length === 0 ? { text, spliced: 0 } : { text: splice(text, edits), spliced };
  } catch (e) {
    // Malformed JSON: compaction reports it with its path. Anything else is ours: the request goes as the
    // client holds it rather than failing this and every later turn of the conversation.
    if (!isOffloadError(e) || (e.type !== "invalid_json" && e.type !== "invalid_request"))
      log(
        `[edge-offload] remembered recalls could not be spliced (${e instanceof Error ? e.name : "error"}); the request goes without them`,
      );
    return { text, spliced: 0 };
  }
}

async function handle(c: Context<AppEnv>, dialect: Dialect, deps: ProxyDeps): Promise<Response> {
  const { log } = deps;
  const fetcher: typeof fetch = deps.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const tenant = await tenantFor(c.env, c.req.header("x-offload-key"), log);
  const ref = sessionOf(tenant, c.req.header(SESSION_HEADER));
  const settings = settingsOf(
    c.env,
    deps.maxBodyBytes === undefined ? {} : { maxBodyBytes: deps.maxBodyBytes },
  );
  const upstream = proxySettingsOf(c.env);
  const requestLayer = headerConfig(c.req.header("x-offload-config"));
  const store = deps.store(c.env, settings, log);
  const url = upstreamUrl(
    upstream.baseUrls[dialect.provider],
    dialect.path,
    new URL(c.req.url).search,
  );
  const headers = upstreamHeaders(c.req.raw.headers);

  // Compaction off (or the session unreadable): the request goes out byte for byte, the answer comes back as sent.
  const asIs = async (summary: Summary): Promise<Response> => {
    const sent = await send(
      fetcher,
      url,
      headers,
      await readBytes(c.req.raw, settings.maxBodyBytes),
    );
    if (!sent.ok) return droppedResponse(dialect, sent.reason, summary);
    const res = sent.response;
    const out = clientHeaders(res.headers);
    out.set(
      "x-offload-summary",
      summaryHeader({
        ...summary,
        proxy: {
          stream: (res.headers.get("content-type") ?? "").includes("text/event-stream"),
          spliced: 0,
        },
      }),
    );
    return new Response(res.body, { status: res.status, headers: out });
  };

  let state;
  try {
    state = await store.proxyState(ref);
  } catch (e) {
    if (!isOffloadError(e) || e.type !== "storage_error") throw e;
    return asIs({
      ...passThroughSummary(dialect.format),
      errors: [
        { type: "storage_error", message: `${e.message}; request passed through unchanged` },
      ],
      errors_total: 1,
    });
  }
  const config = effectiveConfig(settings, state.config, requestLayer);
  if (!config.tool_result_compaction_enabled) return asIs(passThroughSummary(dialect.format));

  const secret = secretOf(settings.secret);
  const spliced = await spliceMemos(
    dialect,
    await readText(c.req.raw, settings.maxBodyBytes),
    state.memos,
    store,
    ref,
    log,
  );
  const out = await compact({
    format: dialect.format,
    request: spliced.text,
    session: ref,
    config,
    store,
    secret,
    // The attachment policy extracts under the deployment's ceilings here too.
    attachments: { extract: withCeilings(extractText, settings.extractCeilings) },
  });
  return proxyCall({
    dialect,
    fetcher,
    url,
    headers,
    request: out.request,
    // Only a tool we declared is ours to answer: a client that declares recall_tool_result itself handles it.
    intercept: out.report.recall_tool === "added",
    maxHops: upstream.maxHops,
    store,
    ref,
    params: {
      mode: config.tool_result_recall_mode,
      max_chars: config.tool_result_recall_max_chars,
      window: config.tool_result_recall_window_chars,
    },
    summary: {
      ...summaryOf(out.report, out.changed, store.notes),
      proxy: { stream: false, spliced: spliced.spliced },
    },
  });
}

export function proxyRoutes(deps: ProxyDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const route = (dialect: Dialect) => async (c: Context<AppEnv>) => {
    try {
      return await handle(c, dialect, deps);
    } catch (e) {
      return proxyError(dialect, toOffloadError(e, deps.log));
    }
  };
  app.post("/anthropic/v1/messages", route(anthropicDialect));
  app.post("/openai/v1/chat/completions", route(openaiChatDialect));
  app.post("/openai/v1/responses", route(openaiResponsesDialect));
  return app;
}

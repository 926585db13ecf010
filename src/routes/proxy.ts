/**
 * The drop-in proxy for the official clients (docs/proxy.md):
 *   POST /anthropic/v1/messages        → ${ANTHROPIC_BASE_URL}/v1/messages
 *   POST /openai/v1/chat/completions   → ${OPENAI_BASE_URL}/chat/completions
 *   POST /openai/v1/responses          → ${OPENAI_BASE_URL}/responses
 * and the token counts, compacted as the next call would be but never recorded:
 *   POST /anthropic/v1/messages/count_tokens → ${ANTHROPIC_BASE_URL}/v1/messages/count_tokens
 *   POST /openai/v1/responses/input_tokens   → ${OPENAI_BASE_URL}/responses/input_tokens
 * (every other path under /anthropic and /openai/v1 goes through untouched: proxy-passthrough.ts).
 * The client authenticates to us with `x-offload-key` and names its conversation with
 * `x-offload-session`; its provider credentials travel on untouched. These routes authenticate,
 * read the settings and hand the call to the proxy loop (src/proxy/turn.ts), which runs the same
 * outside the Worker. Every error, ours or the provider's, reaches the client in the provider's
 * error shape; ours say `edge-offload:` and carry an `x-offload-error` header with our error type.
 */

import { type Context, Hono } from "hono";
import { compactionEnabledIn } from "../config.ts";
import { sessionRef } from "../core/session.ts";
import type { SessionRef } from "../core/types.ts";
import type { Env } from "../env.ts";
import { OffloadError } from "../errors.ts";
import { parseApiKeys, presentedKey, tenantOf } from "../http/auth.ts";
import { readBytes, readText } from "../http/body.ts";
import {
  type AppEnv,
  type ExtractorFor,
  effectiveConfig,
  headerConfig,
  type Settings,
  settingsOf,
} from "../http/context.ts";
import { type Defer, deferOf } from "../http/defer.ts";
import { toOffloadError } from "../http/errors.ts";
import { anthropicDialect } from "../proxy/anthropic.ts";
import type { Dialect } from "../proxy/dialect.ts";
import { upstreamHeaders } from "../proxy/headers.ts";
import { openaiChatDialect } from "../proxy/openai-chat.ts";
import { openaiResponsesDialect } from "../proxy/openai-responses.ts";
import type { ProxyStore } from "../proxy/port.ts";
import { COUNT_PATH } from "../proxy/token-count.ts";
import { proxyTurn } from "../proxy/turn.ts";
import { proxySettingsOf, upstreamUrl } from "../proxy/upstream.ts";
import { secretOf } from "./compact.ts";

export interface ProxyDeps {
  store: (env: Env, settings: Settings, log: (line: string) => void, defer?: Defer) => ProxyStore;
  log: (line: string) => void;
  maxBodyBytes?: number;
  /**
   * The provider calls (tests inject one); by default the runtime's fetch, looked up at call time.
   */
  fetch?: typeof fetch;
  /** The attachment policy's extractor for a request's config. */
  extractor: ExtractorFor;
}

const SESSION_HEADER = "x-offload-session";

export function proxyError(dialect: Dialect, err: OffloadError): Response {
  const headers = new Headers({ "content-type": "application/json", "x-offload-error": err.type });
  if (err.status === 503) headers.set("retry-after", "1");
  return new Response(
    dialect.errorBody(err.status, `edge-offload: ${err.message}`, err.type, err.path),
    { status: err.status, headers },
  );
}

export async function tenantFor(
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
    return sessionRef({ tenant, session: id.trim() });
  } catch {
    throw new OffloadError("invalid_argument", `${SESSION_HEADER} must be ${help}`, {
      path: SESSION_HEADER,
    });
  }
}

/** A token-count route: compacted as the next real call would be, then sent once to `path`. */
interface CountRoute {
  path: string;
}

async function handle(
  c: Context<AppEnv>,
  dialect: Dialect,
  deps: ProxyDeps,
  count?: CountRoute,
): Promise<Response> {
  const { log } = deps;
  const tenant = await tenantFor(c.env, c.req.header("x-offload-key"), log);
  const ref = sessionOf(tenant, c.req.header(SESSION_HEADER));
  const settings = settingsOf(
    c.env,
    deps.maxBodyBytes === undefined ? {} : { maxBodyBytes: deps.maxBodyBytes },
  );
  const upstream = proxySettingsOf(c.env);
  const requestLayer = headerConfig(c.req.header("x-offload-config"));
  return proxyTurn({
    dialect,
    fetch: deps.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    url: upstreamUrl(
      upstream.baseUrls[dialect.provider],
      count?.path ?? dialect.path,
      new URL(c.req.url).search,
    ),
    headers: upstreamHeaders(c.req.raw.headers),
    body: {
      bytes: () => readBytes(c.req.raw, settings.maxBodyBytes),
      text: () => readText(c.req.raw, settings.maxBodyBytes),
    },
    ref,
    store: deps.store(c.env, settings, log, deferOf(c)),
    config: (sessionLayer) => effectiveConfig(settings, sessionLayer, requestLayer),
    secret: () => secretOf(settings.secret),
    // The attachment policy extracts under the deployment's ceilings here too.
    extractor: (config) => deps.extractor(c.env, config, settings.extractCeilings),
    maxHops: upstream.maxHops,
    log,
    dryRun: count !== undefined,
    readFirst: compactionEnabledIn(settings.defaultConfig, requestLayer),
  });
}

export function proxyRoutes(deps: ProxyDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const route = (dialect: Dialect, count?: CountRoute) => async (c: Context<AppEnv>) => {
    try {
      return await handle(c, dialect, deps, count);
    } catch (e) {
      return proxyError(dialect, toOffloadError(e, deps.log));
    }
  };
  app.post("/anthropic/v1/messages", route(anthropicDialect));
  app.post("/openai/v1/chat/completions", route(openaiChatDialect));
  app.post("/openai/v1/responses", route(openaiResponsesDialect));
  app.post(
    "/anthropic/v1/messages/count_tokens",
    route(anthropicDialect, { path: COUNT_PATH.anthropic }),
  );
  app.post(
    "/openai/v1/responses/input_tokens",
    route(openaiResponsesDialect, { path: COUNT_PATH.openai }),
  );
  return app;
}

/**
 * Every other path under a provider prefix, passed through untouched: the models list, batches, files, a
 * GET on a stored response, and whatever endpoint the provider adds next. An agent pointed at the proxy as its
 * base URL reaches all of its provider's API, not only the three compacted routes.
 *
 *   ANY /anthropic/<path>     → ${ANTHROPIC_BASE_URL}/<path>
 *   ANY /openai/v1/<path>     → ${OPENAI_BASE_URL}/<path>   (OPENAI_BASE_URL ends in /v1, as for the SDKs)
 *
 * The method, query string and body go out as they came (the body streamed, not read), with the same header
 * rules as the compacted routes; the provider's status, headers and body come back as sent. `x-offload-key`
 * is required (the Worker is not an open relay); `x-offload-session` is not, nothing here touches a session.
 * Our own errors (key, a path outside /openai/v1, an unreachable provider) are in the provider's error shape.
 */
import { type Context, Hono } from "hono";
import { OffloadError } from "../errors.ts";
import type { AppEnv } from "../http/context.ts";
import { toOffloadError } from "../http/errors.ts";
import { anthropicDialect } from "../proxy/anthropic.ts";
import type { Dialect } from "../proxy/dialect.ts";
import { clientHeaders, upstreamHeaders } from "../proxy/headers.ts";
import { droppedResponse } from "../proxy/loop.ts";
import { openaiChatDialect } from "../proxy/openai-chat.ts";
import { proxySettingsOf } from "../proxy/upstream.ts";
import { proxyError, tenantFor } from "./proxy.ts";

export interface PassThroughDeps {
  log: (line: string) => void;
  /** The provider calls (tests inject one); by default the runtime's fetch, looked up at call time. */
  fetch?: typeof fetch;
}

/** Both OpenAI APIs share one error shape; the Chat dialect speaks it. */
const OPENAI_ERRORS = openaiChatDialect;

async function passThrough(
  c: Context<AppEnv>,
  dialect: Dialect,
  rest: string,
  deps: PassThroughDeps,
): Promise<Response> {
  await tenantFor(c.env, c.req.header("x-offload-key"), deps.log);
  const base = proxySettingsOf(c.env).baseUrls[dialect.provider];
  const url = `${base}${rest}${new URL(c.req.url).search}`;
  const method = c.req.method;
  const fetcher: typeof fetch = deps.fetch ?? ((input, init) => globalThis.fetch(input, init));
  let res: Response;
  try {
    res = await fetcher(url, {
      method,
      headers: upstreamHeaders(c.req.raw.headers),
      ...(method === "GET" || method === "HEAD" ? {} : { body: c.req.raw.body }),
      redirect: "manual",
    });
  } catch (e) {
    return droppedResponse(
      dialect,
      e instanceof Error ? e.message.slice(0, 200) : "connection failed",
      null,
    );
  }
  return new Response(res.body, { status: res.status, headers: clientHeaders(res.headers) });
}

export function proxyPassThroughRoutes(deps: PassThroughDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const route =
    (dialect: Dialect, prefix: string) =>
    async (c: Context<AppEnv>): Promise<Response> => {
      try {
        const path = new URL(c.req.url).pathname;
        if (path !== prefix && !path.startsWith(`${prefix}/`))
          throw new OffloadError(
            "not_found",
            `no route for ${c.req.method} ${path}: OpenAI paths are under /openai/v1 (OPENAI_BASE_URL ends in /v1)`,
          );
        return await passThrough(c, dialect, path.slice(prefix.length), deps);
      } catch (e) {
        return proxyError(dialect, toOffloadError(e, deps.log));
      }
    };
  app.all("/anthropic/*", route(anthropicDialect, "/anthropic"));
  app.all("/openai/*", route(OPENAI_ERRORS, "/openai/v1"));
  return app;
}

/**
 * `offloadFetch`: the proxy's behaviour inside the app's process, as a `fetch` the official clients
 * and the AI SDK's and LangChain's provider packages accept. A POST to an Anthropic Messages, OpenAI
 * Chat Completions or Responses endpoint (recognised by its path, whatever the base URL) runs the
 * whole proxied call (src/proxy/turn.ts); anything else goes to the app's fetch untouched.
 *
 * What the app's call sees is what it would see without us, less what we would add: a request we
 * cannot take part in (a non-JSON body, a shape the adapter does not read, a session that cannot be
 * named) goes out as sent; a store that fails sends the request full (the proxy's rule); a provider
 * that cannot be reached throws the same error the app's fetch threw; our summary header is taken
 * off the answer and handed to `onReport` instead.
 */
import type { SessionRef } from "../core/types.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import type { Summary } from "../http/summary.ts";
import { anthropicDialect } from "../proxy/anthropic.ts";
import type { Dialect } from "../proxy/dialect.ts";
import { upstreamHeaders } from "../proxy/headers.ts";
import { openaiChatDialect } from "../proxy/openai-chat.ts";
import { openaiResponsesDialect } from "../proxy/openai-responses.ts";
import { proxyTurn } from "../proxy/turn.ts";
import {
  type InProcessOptions,
  passedThrough,
  resolveSession,
  type Settings,
  settingsOf,
} from "./options.ts";

export interface OffloadFetchOptions extends InProcessOptions<Request> {
  /**
   * The fetch that reaches the provider (default: the global fetch, looked up at call time). The
   * session function gets the call as a `Request` (URL, method, headers, body).
   */
  fetch?: typeof fetch;
}

/** The endpoint a provider call goes to, by the end of its path. */
export function dialectOf(pathname: string): Dialect | null {
  const path = pathname.replace(/\/+$/, "");
  if (path.endsWith("/v1/messages")) return anthropicDialect;
  if (path.endsWith("/chat/completions")) return openaiChatDialect;
  if (path.endsWith("/responses")) return openaiResponsesDialect;
  return null;
}

interface Call {
  url: URL;
  method: string;
  headers: Headers;
  /** The body as text, when it is one we can read without consuming what goes out. */
  text: string | null;
  signal: AbortSignal | undefined;
}

const decoder = new TextDecoder();

/** Reads the call without consuming it: `input` and `init` still go out as they came. */
async function callOf(input: RequestInfo | URL, init: RequestInit | undefined): Promise<Call> {
  if (input instanceof Request) {
    const req = init === undefined ? input : new Request(input, init);
    const text = req.body === null ? null : await req.clone().text();
    return {
      url: new URL(req.url),
      method: req.method,
      headers: req.headers,
      text,
      signal: req.signal,
    };
  }
  const body = init?.body;
  let text: string | null = null;
  if (typeof body === "string") text = body;
  else if (body instanceof Uint8Array) text = decoder.decode(body);
  else if (body instanceof ArrayBuffer) text = decoder.decode(new Uint8Array(body));
  return {
    url: new URL(String(input)),
    method: (init?.method ?? "GET").toUpperCase(),
    headers: new Headers(init?.headers),
    text,
    signal: init?.signal ?? undefined,
  };
}

/** A JSON object's text (a cheap first look: the adapter parses it properly). */
function looksLikeJson(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    return c === 0x7b;
  }
  return false;
}

/**
 * A `fetch` that runs edge-offload's proxy for provider calls, in this process.
 *
 * @example
 * const store = new MemoryStore();
 * const fetch = offloadFetch({
 *   store, session: "chat-42", secret: process.env.OFFLOAD_SECRET!,
 *   config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
 * });
 * const anthropic = new Anthropic({ fetch });
 */
export function offloadFetch(options: OffloadFetchOptions): typeof fetch {
  const settings = settingsOf(options);
  const base: typeof fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const wrapped = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const dialect = dialectOf(
      input instanceof Request ? new URL(input.url).pathname : pathOf(input),
    );
    if (dialect === null) return base(input, init);
    const call = await callOf(input, init);
    if (call.method !== "POST" || call.text === null || !looksLikeJson(call.text))
      return base(input, init);
    return offloaded(settings, base, dialect, call, () => base(input, init));
  };
  return wrapped as typeof fetch;
}

function pathOf(input: string | URL): string {
  if (input instanceof URL) return input.pathname;
  try {
    return new URL(input).pathname;
  } catch {
    return "";
  }
}

async function offloaded(
  settings: Settings<Request>,
  base: typeof fetch,
  dialect: Dialect,
  call: Call,
  asSent: () => Promise<Response>,
): Promise<Response> {
  const text = call.text!;
  const session = await resolveSession(
    settings.session,
    () => new Request(call.url, { method: call.method, headers: call.headers, body: text }),
  );
  if (session instanceof OffloadError) {
    settings.problem(passedThrough(session, "no session"), null);
    return asSent();
  }
  // Every provider call of the turn goes through here: the app's abort signal travels with each,
  // and a connection that fails is remembered so the app's call fails with that very error.
  let calls = 0;
  let failure: { error: unknown } | null = null;
  const provider: typeof fetch = async (url, init) => {
    calls++;
    try {
      return await base(url, {
        ...init,
        ...(call.signal === undefined ? {} : { signal: call.signal }),
      });
    } catch (error) {
      failure = { error };
      throw error;
    }
  };
  let res: Response;
  try {
    res = await proxyTurn({
      dialect,
      fetch: provider,
      url: call.url.href,
      headers: upstreamHeaders(call.headers),
      body: { bytes: async () => text, text: async () => text },
      ref: session,
      store: settings.store,
      config: settings.config,
      secret: () => settings.secret,
      extractor: settings.extractor,
      maxHops: settings.maxHops,
      log: settings.log,
    });
  } catch (e) {
    // Nothing went out yet: the request goes as the app sent it (the provider says what is wrong
    // with it, as it would without us).
    const err = isOffloadError(e) ? e : new OffloadError("internal", "the proxied call failed");
    if (!isOffloadError(e)) settings.log(`[edge-offload] offloadFetch: ${String(e).slice(0, 200)}`);
    if (calls > 0) throw e;
    settings.problem(passedThrough(err, "request sent as it was"), session);
    return asSent();
  }
  if (failure !== null && res.headers.get("x-offload-error") === "upstream_error")
    throw (failure as { error: unknown }).error;
  return answer(settings, dialect, session, res);
}

/**
 * The answer as the app reads it: our summary header goes to onReport instead. A stream's hops are
 * known only at its end (the loop's closing `: edge-offload {…}` comment), so its report waits for
 * the end of the stream, or for the app to stop reading it.
 */
function answer(
  settings: Settings<Request>,
  dialect: Dialect,
  session: SessionRef,
  res: Response,
): Response {
  const header = res.headers.get("x-offload-summary");
  if (header === null) return res;
  res.headers.delete("x-offload-summary");
  let summary: Summary;
  try {
    summary = JSON.parse(header) as Summary;
  } catch {
    return res;
  }
  const report = (tail: Record<string, unknown> | null) =>
    settings.report({
      session,
      format: dialect.format,
      summary: tail === null ? summary : { ...summary, proxy: { ...summary.proxy!, ...tail } },
    });
  if (summary.proxy?.stream !== true || res.body === null) {
    report(null);
    return res;
  }
  return new Response(watchTail(res.body, report), {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}

const COMMENT = ": edge-offload ";

/** The stream as it is, and what its closing comment says once it ends (null if it had none). */
function watchTail(
  body: ReadableStream<Uint8Array>,
  done: (tail: Record<string, unknown> | null) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let tail: Record<string, unknown> | null = null;
  let reported = false;
  const end = () => {
    if (!reported) done(tail);
    reported = true;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: finished, value } = await reader.read();
        if (finished) {
          end();
          return controller.close();
        }
        // The loop writes its comment as a piece of its own: only such a piece is decoded.
        if (value[0] === 0x3a) {
          const text = decoder.decode(value);
          if (text.startsWith(COMMENT)) tail = parseTail(text.slice(COMMENT.length));
        }
        controller.enqueue(value);
      } catch (e) {
        end();
        controller.error(e);
      }
    },
    async cancel(reason) {
      end();
      await reader.cancel(reason);
    },
  });
}

function parseTail(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text.trim());
    return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

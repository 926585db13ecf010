/**
 * Talking to the user's provider: where each API lives, how the key is sent, and the one fetch
 * every eval call goes through, which retries what the official SDKs retry (408, 409, 429, 5xx,
 * Anthropic's 529 "overloaded", a connection that fails) with exponential backoff and jitter,
 * honouring the provider's `retry-after-ms` / `retry-after` (and `x-should-retry`).
 */
import { anthropicDialect } from "../proxy/anthropic.ts";
import { openaiChatDialect } from "../proxy/openai-chat.ts";
import { openaiResponsesDialect } from "../proxy/openai-responses.ts";
import { DEFAULT_BASE_URLS } from "../proxy/upstream.ts";
import type { EvalProvider } from "./types.ts";

export const DIALECTS = {
  anthropic: anthropicDialect,
  "openai-chat": openaiChatDialect,
  "openai-responses": openaiResponsesDialect,
} as const;

/** The environment variables the official SDKs read the key and base URL from. */
export const KEY_VARS: Record<EvalProvider, string> = {
  anthropic: "ANTHROPIC_API_KEY",
  "openai-chat": "OPENAI_API_KEY",
  "openai-responses": "OPENAI_API_KEY",
};
export const BASE_URL_VARS: Record<EvalProvider, string> = {
  anthropic: "ANTHROPIC_BASE_URL",
  "openai-chat": "OPENAI_BASE_URL",
  "openai-responses": "OPENAI_BASE_URL",
};

/** The API's endpoint under a base URL given as the SDKs take it (OpenAI's ends in /v1). */
export function endpointOf(provider: EvalProvider, baseUrl: string | undefined): string {
  const dialect = DIALECTS[provider];
  const base = (baseUrl ?? DEFAULT_BASE_URLS[dialect.provider]).replace(/\/+$/, "");
  return `${base}${dialect.path}`;
}

/** The headers of every call: the key where the API reads it, and the API version. */
export function providerHeaders(provider: EvalProvider, apiKey: string): Headers {
  const headers = new Headers({ "content-type": "application/json" });
  if (provider === "anthropic") {
    headers.set("x-api-key", apiKey);
    headers.set("anthropic-version", "2023-06-01");
  } else headers.set("authorization", `Bearer ${apiKey}`);
  return headers;
}

const RETRIED = new Set([408, 409, 429, 500, 502, 503, 504, 529]);
export const MAX_ATTEMPTS = 6;
/** The longest wait honoured; a provider asking for more gets retried after this. */
const MAX_WAIT_MS = 60_000;
/** One attempt's time limit (the official SDKs' default). */
const ATTEMPT_TIMEOUT_MS = 600_000;

export interface RetryOptions {
  fetch: typeof fetch;
  sleep: (ms: number) => Promise<void>;
  signal: AbortSignal;
  /** Told of every retry (a count for the report). */
  onRetry?: (status: number | null, waitMs: number) => void;
  random?: () => number;
}

/** The wait the provider asks for, in ms (null: it asks for none). */
export function retryAfterMs(headers: Headers, now = Date.now()): number | null {
  const ms = Number(headers.get("retry-after-ms"));
  if (headers.has("retry-after-ms") && Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers.get("retry-after");
  if (raw === null || raw.trim() === "") return null;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function backoffMs(attempt: number, rand: () => number): number {
  return Math.min(500 * 2 ** attempt, 30_000) * (0.75 + 0.25 * rand());
}

/** A fetch that retries what can succeed on a later try; the last answer or error stands. */
export function retryingFetch(options: RetryOptions): typeof fetch {
  const rand = options.random ?? Math.random;
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    for (let attempt = 0; ; attempt++) {
      const last = attempt === MAX_ATTEMPTS - 1;
      let res: Response;
      try {
        const signal = AbortSignal.any([options.signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]);
        res = await options.fetch(input, { ...init, signal });
      } catch (e) {
        if (last || options.signal.aborted) throw e;
        const wait = backoffMs(attempt, rand);
        options.onRetry?.(null, wait);
        await options.sleep(wait);
        continue;
      }
      const should = res.headers.get("x-should-retry");
      const retry = should === "true" || (should !== "false" && RETRIED.has(res.status));
      if (!retry || last) return res;
      await res.body?.cancel();
      const wait = Math.min(retryAfterMs(res.headers) ?? backoffMs(attempt, rand), MAX_WAIT_MS);
      options.onRetry?.(res.status, wait);
      await options.sleep(wait);
    }
  }) as typeof fetch;
}

/** A provider call that failed: its status (null: no answer at all) and one line saying why. */
export interface ProviderFailure {
  status: number | null;
  message: string;
  /** The request field the provider names, when it names one. */
  param: string | null;
  /** Never sent: it could have passed the --max-usd ceiling. */
  ceiling?: true;
}

/**
 * A provider's error answer in one line: `429 rate_limit_error: Number of requests…`. Both APIs
 * put `{error: {type|code, message, param?}}` in the body.
 */
export async function providerFailure(res: Response): Promise<ProviderFailure> {
  const text = await res.text().catch(() => "");
  let kind = "";
  let message = text.replace(/\s+/g, " ").trim().slice(0, 300);
  let param: string | null = null;
  try {
    const body = JSON.parse(text) as { error?: Record<string, unknown> };
    const e = body.error ?? {};
    kind = String(e.type ?? e.code ?? "");
    if (typeof e.message === "string") message = e.message.replace(/\s+/g, " ").slice(0, 300);
    if (typeof e.param === "string") param = e.param;
  } catch {
    // not JSON: its text is the message
  }
  const head = kind === "" ? `${res.status}` : `${res.status} ${kind}`;
  return { status: res.status, message: `${head}: ${message}`, param };
}

/** The key, its permissions, the model or the URL: every later call would fail the same way. */
export function isFatal(f: ProviderFailure): boolean {
  return f.status === 401 || f.status === 403 || f.status === 404;
}

/** The model refuses the temperature we set (reasoning models take only their default). */
export function refusesTemperature(f: ProviderFailure): boolean {
  return f.status === 400 && (f.param === "temperature" || /temperature/i.test(f.message));
}

/**
 * The provider's own count of results stubbed on the call they arrive. Such a result is never sent, so
 * no usage ever measures it, and the billed saving would rest on a character estimate that is off by
 * tens of percent on dense or indented text (issue 26: −28% on Anthropic). Both providers count tokens
 * for free (Anthropic's `POST /v1/messages/count_tokens`, OpenAI's `POST /responses/input_tokens`), so
 * the proxy asks, beside the call itself (never before it: the answer does not wait), with the client's
 * own credentials, and the turn's line keeps the counts (`estimate.counted`) for the report.
 *
 * A result's tokens are the count of a one-message request holding its text, less the count of the same
 * request holding one character (the framing): within a token or two of the result's share of a prompt.
 * Bounded: the largest COUNT_LIMIT results of a call, each once per call, under one deadline; an upstream
 * that has no such endpoint (a 404, 405 or 501) is not asked again for an hour by this isolate.
 */
import type { PreparedRequest } from "../core/prepare.ts";
import { siteText } from "../core/turn/context.ts";
import type { Provider } from "./upstream.ts";
import { send } from "./upstream.ts";

/** Results counted per call, at most (the largest): a call rarely stubs more on arrival. */
export const COUNT_LIMIT = 4;
/** Results smaller than this (estimated tokens) are not worth a count. */
export const COUNT_MIN_TOKENS = 1_000;
/** The counts' deadline from the call's start: the turn's usage does not wait longer for them. */
export const COUNT_DEADLINE_MS = 10_000;
const UNSUPPORTED_FOR_MS = 3_600_000;
/** Upstreams remembered as lacking the endpoint, at most (a deployment talks to a handful). */
const UNSUPPORTED_LIMIT = 64;

/** The counting endpoint under each provider's base (the proxy's count routes forward to it too). */
export const COUNT_PATH: Record<Provider, string> = {
  anthropic: "/v1/messages/count_tokens",
  openai: "/responses/input_tokens",
};

/** Upstreams (origin and count path) that answered that they have no counting endpoint, until when. */
const unsupported = new Map<string, number>();

/**
 * The counting endpoint for a call sent to `url` along `path` (the dialect's), or null when the URL does
 * not end with that path (a gateway of another shape) or the upstream said it has none.
 */
export function countUrlOf(
  url: string,
  path: string,
  provider: Provider,
  now: number,
): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (!u.pathname.endsWith(path)) return null;
  u.pathname = u.pathname.slice(0, u.pathname.length - path.length) + COUNT_PATH[provider];
  const until = unsupported.get(`${u.origin}${u.pathname}`);
  if (until !== undefined && until > now) return null;
  return u.toString();
}

/**
 * The results of the client's request that this call's turn took out on arrival (not settled: the
 * model has not answered after them, so no earlier request carried them in full), by call id as the
 * turn's `estimate.cut` names them: the largest COUNT_LIMIT of at least COUNT_MIN_TOKENS.
 */
export function unsentTexts(
  prepared: PreparedRequest,
  cut: Readonly<Record<string, number>> | undefined,
): Map<string, string> {
  const out = new Map<string, string>();
  if (cut === undefined || "invalid" in prepared.analysis) return out;
  const picked = prepared.analysis.sites
    .map((site) => ({ site, id: site.tool_use_id.slice(0, 64) }))
    .filter(({ site, id }) => !site.settled && (cut[id] ?? 0) >= COUNT_MIN_TOKENS)
    .sort((a, b) => cut[b.id]! - cut[a.id]!)
    .slice(0, COUNT_LIMIT);
  for (const { site, id } of picked) out.set(id, siteText(prepared.raw, site));
  return out;
}

/** The one-message request a text is counted in. */
function countBody(provider: Provider, model: string, text: string): string {
  return JSON.stringify(
    provider === "anthropic"
      ? { model, messages: [{ role: "user", content: [{ type: "text", text }] }] }
      : { model, input: [{ role: "user", content: [{ type: "input_text", text }] }] },
  );
}

/** The client's headers for a count: its credentials and versions, nothing about the body or a retry. */
function countHeaders(headers: Headers): Headers {
  const out = new Headers(headers);
  for (const h of ["content-length", "idempotency-key", "accept-encoding", "accept"]) out.delete(h);
  out.set("content-type", "application/json");
  return out;
}

export interface CountInput {
  provider: Provider;
  fetcher: typeof fetch;
  /** `countUrlOf`'s answer. */
  url: string;
  headers: Headers;
  /** The model as the client named it. */
  model: string;
  /** The results to count: call id → text. */
  texts: ReadonlyMap<string, string>;
  /** Now, and the deadline's length (tests shorten it). */
  now?: number;
  deadlineMs?: number;
}

/**
 * The provider-counted tokens of each text (by call id); a text whose count failed is absent, and any
 * failure leaves the rest standing. Never throws.
 */
export async function countResults(input: CountInput): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  if (input.texts.size === 0) return out;
  const signal = AbortSignal.timeout(input.deadlineMs ?? COUNT_DEADLINE_MS);
  const headers = countHeaders(input.headers);
  const one = async (text: string): Promise<number | null> => {
    const sent = await send(
      input.fetcher,
      input.url,
      headers,
      countBody(input.provider, input.model, text),
      signal,
    );
    if (!sent.ok) return null;
    const res = sent.response;
    if (res.status === 404 || res.status === 405 || res.status === 501) {
      const u = new URL(input.url);
      if (unsupported.size >= UNSUPPORTED_LIMIT) unsupported.clear();
      unsupported.set(`${u.origin}${u.pathname}`, (input.now ?? Date.now()) + UNSUPPORTED_FOR_MS);
    }
    try {
      if (!res.ok) {
        await res.body?.cancel();
        return null;
      }
      const body = (await res.json()) as { input_tokens?: unknown };
      const n = body.input_tokens;
      return typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : null;
    } catch {
      return null;
    }
  };
  try {
    // The framing first: without it no count can be read, and an upstream without the endpoint is
    // asked once, not once per result.
    const framing = await one(".");
    if (framing === null) return out;
    const counts = await Promise.all(
      [...input.texts].map(async ([id, t]) => [id, await one(t)] as const),
    );
    // "." is one token in every tokenizer: what the framing count holds beside the framing.
    for (const [id, n] of counts) if (n !== null) out[id] = Math.max(0, n - framing + 1);
  } catch {
    // A deadline or a broken answer: the counts made so far are not kept either (rare; estimated).
  }
  return out;
}

/**
 * The counts of the results a turn stubbed on arrival in the client's request `prepared` (`cut`: the
 * turn's `estimate.cut`), asked now, or undefined when there is nothing to count or nowhere to ask.
 */
export function countUnsent(o: {
  provider: Provider;
  fetcher: typeof fetch;
  /** The counting endpoint (`countUrlOf`, `deploymentCounter`). */
  url: string | null;
  headers: Headers;
  prepared: PreparedRequest;
  cut: Readonly<Record<string, number>> | undefined;
  deadlineMs?: number;
}): Promise<Record<string, number>> | undefined {
  const texts = unsentTexts(o.prepared, o.cut);
  // The model as the request names it (texts are only found in a request the adapter read).
  const model =
    texts.size === 0 || "invalid" in o.prepared.analysis ? null : o.prepared.analysis.model;
  if (model === null || o.url === null) return undefined;
  return countResults({
    provider: o.provider,
    fetcher: o.fetcher,
    url: o.url,
    headers: o.headers,
    model,
    texts,
    ...(o.deadlineMs === undefined ? {} : { deadlineMs: o.deadlineMs }),
  });
}

/** The deployment's counting keys and upstreams (src/env.ts). */
export interface CountVars {
  ANTHROPIC_BASE_URL?: string | undefined;
  OPENAI_BASE_URL?: string | undefined;
  OFFLOAD_COUNT_ANTHROPIC_KEY?: string | undefined;
  OFFLOAD_COUNT_OPENAI_KEY?: string | undefined;
}

/**
 * Where and how a route that holds no client credentials (the compact route: its client calls the
 * provider itself) counts, with the deployment's own key for the provider, or null when the deployment
 * set none. `base` is the provider's base URL as the proxy reads it.
 */
export function deploymentCounter(
  vars: CountVars,
  provider: Provider,
  base: string,
): { url: string; headers: Headers } | null {
  const key = (
    provider === "anthropic" ? vars.OFFLOAD_COUNT_ANTHROPIC_KEY : vars.OFFLOAD_COUNT_OPENAI_KEY
  )?.trim();
  if (key === undefined || key === "") return null;
  const headers = new Headers({ "content-type": "application/json" });
  if (provider === "anthropic") {
    headers.set("x-api-key", key);
    headers.set("anthropic-version", "2023-06-01");
  } else headers.set("authorization", `Bearer ${key}`);
  return { url: `${base}${COUNT_PATH[provider]}`, headers };
}

/** Forgets which upstreams lacked an endpoint (tests). */
export function resetCountSupport(): void {
  unsupported.clear();
}

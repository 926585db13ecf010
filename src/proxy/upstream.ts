/**
 * Where the proxy sends a call, read from the vars: `ANTHROPIC_BASE_URL` (default
 * https://api.anthropic.com) and `OPENAI_BASE_URL` (default https://api.openai.com/v1), meaning
 * what they mean to the official SDKs, and `OFFLOAD_PROXY_MAX_HOPS` (default 3), the extra provider
 * calls one client call may make to answer recalls.
 */
import { OffloadError } from "../errors.ts";

/** The vars read here (a subset of the Worker's Env, so this file also runs outside workerd). */
export interface ProxyVars {
  ANTHROPIC_BASE_URL?: string | undefined;
  OPENAI_BASE_URL?: string | undefined;
  OFFLOAD_PROXY_MAX_HOPS?: string | undefined;
}

export type Provider = "anthropic" | "openai";

export const DEFAULT_BASE_URLS: Record<Provider, string> = {
  anthropic: "https://api.anthropic.com",
  openai: "https://api.openai.com/v1",
};

/** The variable that sets each provider's upstream: named in every error about reaching it. */
export const BASE_URL_VARS: Record<Provider, string> = {
  anthropic: "ANTHROPIC_BASE_URL",
  openai: "OPENAI_BASE_URL",
};

/**
 * The message for a provider that could not be reached, `reason` being `send`'s: the variable that sets the
 * upstream and the host called (so a local override shows), then the runtime's own words, e.g. "edge-offload
 * could not reach the anthropic upstream (ANTHROPIC_BASE_URL) at api.anthropic.com: Network connection lost.".
 */
export function unreachableMessage(provider: Provider, reason: string): string {
  return `edge-offload could not reach the ${provider} upstream (${BASE_URL_VARS[provider]}) ${reason}`;
}

export const DEFAULT_MAX_HOPS = 3;
const MAX_HOPS_LIMIT = 16;

export interface ProxySettings {
  baseUrls: Record<Provider, string>;
  maxHops: number;
}

function baseUrl(raw: string | undefined, fallback: string, name: string): string {
  const value = raw === undefined || raw.trim() === "" ? fallback : raw.trim();
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new OffloadError("internal", `service misconfigured: ${name} is not a URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new OffloadError("internal", `service misconfigured: ${name} must be an http(s) URL`);
  return value.replace(/\/+$/, "");
}

export function proxySettingsOf(env: ProxyVars): ProxySettings {
  const hops = env.OFFLOAD_PROXY_MAX_HOPS;
  let maxHops = DEFAULT_MAX_HOPS;
  if (hops !== undefined && hops.trim() !== "") {
    maxHops = Number(hops);
    if (!Number.isInteger(maxHops) || maxHops < 0 || maxHops > MAX_HOPS_LIMIT) {
      throw new OffloadError(
        "internal",
        `service misconfigured: OFFLOAD_PROXY_MAX_HOPS must be a whole number from 0 to ${MAX_HOPS_LIMIT}`,
      );
    }
  }
  return {
    baseUrls: {
      anthropic: baseUrl(env.ANTHROPIC_BASE_URL, DEFAULT_BASE_URLS.anthropic, "ANTHROPIC_BASE_URL"),
      openai: baseUrl(env.OPENAI_BASE_URL, DEFAULT_BASE_URLS.openai, "OPENAI_BASE_URL"),
    },
    maxHops,
  };
}

/**
 * `${base}${path}` plus the client's query string (the Anthropic SDK adds `?beta=true` to beta
 * calls).
 */
export function upstreamUrl(base: string, path: string, search: string): string {
  return `${base}${path}${search}`;
}

export type Sent = { ok: true; response: Response } | { ok: false; reason: string };

/** `url`'s host, or the text itself when it is not a URL. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/**
 * One provider call. A connection that cannot be made (refused, reset, DNS) is a value, not a throw; its
 * reason starts with the host called: "at api.anthropic.com: Network connection lost.".
 */
export async function send(
  fetcher: typeof fetch,
  url: string,
  headers: Headers,
  body: BodyInit,
  signal?: AbortSignal,
): Promise<Sent> {
  try {
    const response = await fetcher(url, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
      ...(signal === undefined ? {} : { signal }),
    });
    return { ok: true, response };
  } catch (e) {
    return {
      ok: false,
      reason: `at ${hostOf(url)}: ${e instanceof Error ? e.message.slice(0, 200) : "connection failed"}`,
    };
  }
}

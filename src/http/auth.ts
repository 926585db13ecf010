/**
 * Bearer-key auth. `OFFLOAD_API_KEYS` is `tenant:key,tenant:key` (commas or newlines); the key a request
 * presents names its tenant. One rule says what a key is (KEY_RULE), checked where the keys are read, and
 * the API, the proxy and the dashboard all compare a presented key the same way. Keys are compared as
 * SHA-256 digests in constant time, against every configured key whatever matched, so timing tells
 * nothing about a key's prefix. Keys are never logged.
 */
import { OffloadError } from "../errors.ts";

export interface ApiKey {
  tenant: string;
  digest: Uint8Array;
}

/** Like a session id but without ":", which separates tenant from key. */
const TENANT = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * What a key is, everywhere (OFFLOAD_API_KEYS, `Authorization: Bearer`, `x-offload-key`, the dashboard's
 * form): 16–256 printable ASCII characters, no space (a Bearer token cannot hold one) and no comma (it
 * separates entries). A presented value is read without surrounding blanks.
 */
export const KEY_RULE = /^[\x21-\x2b\x2d-\x7e]{16,256}$/;
export const KEY_RULE_TEXT = "a key is 16–256 printable ASCII characters without spaces or commas";

const encoder = new TextEncoder();
let cached: { raw: string; keys: Promise<ApiKey[]> } | undefined;

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/**
 * Malformed entries and keys given to two tenants are dropped (with a warning that names the entry's
 * position, not its content): a deployment with a typo fails closed for that key, not open.
 */
export function parseApiKeys(
  raw: string | undefined,
  warn: (line: string) => void = (l) => console.warn(l),
): Promise<ApiKey[]> {
  const text = raw ?? "";
  if (cached?.raw === text) return cached.keys;
  const keys = (async () => {
    const entries: { tenant: string; key: string }[] = [];
    text
      .split(/[,\n]/)
      .map((e) => e.trim())
      .forEach((entry, i) => {
        if (entry === "") return;
        const at = entry.indexOf(":");
        const tenant = entry.slice(0, at);
        const key = entry.slice(at + 1);
        if (at <= 0 || !TENANT.test(tenant) || key.length === 0)
          warn(`[edge-offload] OFFLOAD_API_KEYS entry #${i + 1} ignored: expected tenant:key`);
        else if (!KEY_RULE.test(key))
          warn(`[edge-offload] OFFLOAD_API_KEYS entry #${i + 1} ignored: ${KEY_RULE_TEXT}`);
        else entries.push({ tenant, key });
      });
    const owners = new Map<string, Set<string>>();
    for (const e of entries) owners.set(e.key, (owners.get(e.key) ?? new Set()).add(e.tenant));
    const usable = entries.filter((e, i) => {
      if (owners.get(e.key)!.size === 1) return true;
      warn(
        `[edge-offload] OFFLOAD_API_KEYS entry #${i + 1} ignored: the same key is given to several tenants`,
      );
      return false;
    });
    return Promise.all(
      usable.map(async (e) => ({ tenant: e.tenant, digest: await sha256(e.key) })),
    );
  })();
  cached = { raw: text, keys };
  return keys;
}

function equalDigests(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ (b[i] ?? 0);
  return diff === 0;
}

/** A presented key as it is compared: without surrounding blanks (an empty string when there is none). */
export function presentedKey(value: string | undefined | null): string {
  return (value ?? "").trim();
}

/** The tenant a presented key belongs to, or null (also for a value that breaks the key rule). */
export async function tenantOf(keys: readonly ApiKey[], presented: string): Promise<string | null> {
  if (!KEY_RULE.test(presented)) return null;
  const digest = await sha256(presented);
  let tenant: string | null = null;
  for (const k of keys) {
    const match = equalDigests(digest, k.digest);
    if (match && tenant === null) tenant = k.tenant;
  }
  return tenant;
}

/** The key from `Authorization: Bearer <key>`, or a 401 saying what is wrong with the header. */
export function bearerKey(header: string | undefined): string {
  if (header === undefined || header.trim() === "")
    throw new OffloadError(
      "unauthorized",
      "missing Authorization header: send Authorization: Bearer <key>",
    );
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (m === null)
    throw new OffloadError("unauthorized", "the Authorization header must be: Bearer <key>");
  return presentedKey(m[1]);
}

/**
 * The tenant of a presented key under `OFFLOAD_API_KEYS`, or a 401: the API's Bearer header and the dashboard's
 * login both go through here, so the two cannot disagree on who a key is.
 */
export async function authenticate(
  raw: string | undefined,
  presented: string,
  warn: (line: string) => void,
): Promise<string> {
  const keys = await parseApiKeys(raw, warn);
  if (keys.length === 0)
    throw new OffloadError(
      "unauthorized",
      "this deployment has no API keys configured (OFFLOAD_API_KEYS)",
    );
  const tenant = await tenantOf(keys, presented);
  if (tenant === null) throw new OffloadError("unauthorized", "unknown API key");
  return tenant;
}

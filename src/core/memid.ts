/**
 * mem_ids: `trm_` + 24 hex chars of HMAC-SHA256(secret, tenant ∥ session ∥ body). Keyed, so ids cannot be
 * guessed from a body; scoped, so the same body in two sessions gets two ids; stable, so the same body in a
 * session always gets the same id (and the same stub bytes).
 */
const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

/** Used when the caller gives no secret: fine for a library in one process, never for a shared deployment. */
export const DEV_SECRET = "edge-offload-local-dev-secret";

function keyFor(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (key === undefined) {
    key = crypto.subtle.importKey(
      "raw",
      encoder.encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    keys.set(secret, key);
  }
  return key;
}

function hex(buf: ArrayBuffer): string {
  const bytes = new Uint8Array(buf);
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** Full keyed digest of a body within its scope (hex). */
export async function bodyDigest(
  secret: string,
  tenant: string,
  session: string,
  body: string,
): Promise<string> {
  const key = await keyFor(secret);
  const sig = await crypto.subtle.sign(
    "HMAC",
    key,
    encoder.encode(`${tenant}\u0000${session}\u0000${body}`),
  );
  return hex(sig);
}

export function memIdOf(digest: string): string {
  return `trm_${digest.slice(0, 24)}`;
}

export const MEM_ID_PATTERN = /^trm_[0-9a-f]{24}$/;

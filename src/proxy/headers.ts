/**
 * Which headers cross the proxy. Towards the provider: everything the client sent (its API key,
 * `Authorization`, `anthropic-version`, `anthropic-beta`, `openai-organization`, `openai-project`,
 * the SDK's own headers, idempotency keys…) except hop-by-hop headers, our `x-offload-*` headers,
 * and what belongs to this hop (host, length, encoding, cookies, the edge's forwarding headers).
 * Towards the client: the provider's headers (request ids, rate limits, retry-after, content type…)
 * except hop-by-hop ones and those the runtime recomputes for the body it actually sends. Nothing
 * here is stored or logged.
 */

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);
const NOT_FORWARDED = new Set([
  "host",
  "content-length",
  "accept-encoding",
  "cookie",
  "forwarded",
  "x-real-ip",
  "true-client-ip",
  "cdn-loop",
]);
const NOT_FORWARDED_PREFIXES = ["x-offload-", "cf-", "x-forwarded-"];
const NOT_RETURNED = new Set(["content-length", "content-encoding", "set-cookie"]);

/** Header names listed in `Connection` are hop-by-hop too (RFC 9110 §7.6.1). */
function connectionListed(headers: Headers): Set<string> {
  return new Set(
    (headers.get("connection") ?? "")
      .split(",")
      .map((s) => s.trim().toLowerCase())
      .filter((s) => s !== ""),
  );
}

export function upstreamHeaders(incoming: Headers): Headers {
  const listed = connectionListed(incoming);
  const out = new Headers();
  for (const [name, value] of incoming) {
    const n = name.toLowerCase();
    if (
      HOP_BY_HOP.has(n) ||
      NOT_FORWARDED.has(n) ||
      listed.has(n) ||
      NOT_FORWARDED_PREFIXES.some((p) => n.startsWith(p))
    )
      continue;
    out.append(n, value);
  }
  return out;
}

export function clientHeaders(upstream: Headers): Headers {
  const listed = connectionListed(upstream);
  const out = new Headers();
  for (const [name, value] of upstream) {
    const n = name.toLowerCase();
    if (HOP_BY_HOP.has(n) || NOT_RETURNED.has(n) || listed.has(n)) continue;
    out.append(n, value);
  }
  return out;
}

/**
 * The headers with `values` joined to `anthropic-beta` (each once; the client's own kept): what a request
 * compacted with the recall tool declared inline needs (core/turn/declare.ts).
 */
export function withAnthropicBeta(
  headers: Headers,
  values: readonly string[] | undefined,
): Headers {
  if (values === undefined || values.length === 0) return headers;
  const have = (headers.get("anthropic-beta") ?? "")
    .split(",")
    .map((v) => v.trim())
    .filter((v) => v !== "");
  const missing = values.filter((v) => !have.includes(v));
  if (missing.length === 0) return headers;
  const out = new Headers(headers);
  out.set("anthropic-beta", [...have, ...missing].join(","));
  return out;
}

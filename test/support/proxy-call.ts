/**
 * One Anthropic Messages call through the proxy loop in process (`proxyTurn`), as a client sends it, to a
 * `fetch` of the test's choosing (the billing fake's): the call's answer read to its end, and its status.
 */
import { resolveConfig } from "../../src/config.ts";
import { anthropicDialect } from "../../src/proxy/anthropic.ts";
import { type ProxyTurnInput, proxyTurn } from "../../src/proxy/turn.ts";

export async function proxyAnthropicCall(o: {
  fetch: typeof fetch;
  /** The client's request body. */
  text: string;
  ref: ProxyTurnInput["ref"];
  store: ProxyTurnInput["store"];
  /** The deployment's config layer under the request's. */
  config: Record<string, unknown>;
}): Promise<number> {
  const res = await proxyTurn({
    dialect: anthropicDialect,
    fetch: o.fetch,
    url: "https://fake.test/v1/messages",
    headers: new Headers({ "content-type": "application/json", "x-api-key": "sk-test" }),
    body: { bytes: async () => new TextEncoder().encode(o.text), text: async () => o.text },
    ref: o.ref,
    store: o.store,
    config: (layer) => resolveConfig(layer, o.config),
    secret: () => "a-bill-test-secret-0123456789",
    maxHops: 3,
    log: () => {},
  });
  await res.text();
  return res.status;
}

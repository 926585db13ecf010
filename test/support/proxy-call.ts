/**
 * One Anthropic Messages call through the proxy loop in process (`proxyTurn`), as a client sends it, to a
 * `fetch` of the test's choosing (the billing fake's): the call's answer read to its end, and its status.
 */
import { resolveConfig } from "../../src/config.ts";
import { anthropicDialect } from "../../src/proxy/anthropic.ts";
import { type ProxyTurnInput, proxyTurn } from "../../src/proxy/turn.ts";
import { conversation, type Turn } from "./requests.ts";

/**
 * The request of a caching client with a long system prompt (about 37,000 tokens): its breakpoint on the last
 * block.
 */
export function cachedRequest(turns: Turn[], model: string): Record<string, any> {
  const req = conversation(turns, {
    model,
    system: "You are a careful agent; follow the repository's conventions. ".repeat(2_500),
  }) as Record<string, any>;
  const last = req.messages.at(-1).content;
  last[last.length - 1] = { ...last[last.length - 1], cache_control: { type: "ephemeral" } };
  return req;
}

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

// offloadFetch's edges without a network (a stub provider): what passes through untouched and why the app
// hears about it, callbacks that throw, the options checked at setup, the abort signal on every call.
import { describe, expect, it } from "vitest";
import { offloadFetch } from "../../src/integrations/fetch.ts";
import type { OffloadProblem } from "../../src/integrations/options.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { anthropicMessage, anthropicRequest, ON } from "../support/providers.ts";

const SECRET = "unit-offload-fetch-secret-0123";

function provider() {
  const calls: { url: string; init: RequestInit | undefined }[] = [];
  const f = (async (url: RequestInfo | URL, init?: RequestInit) => {
    calls.push({ url: String(url), init });
    return Response.json(anthropicMessage("m", [{ text: "ok" }], { input: 1, output: 1 }));
  }) as typeof fetch;
  return { f, calls };
}

/** offloadFetch over a stub provider, with the problems it reported. */
function ours(session: Parameters<typeof offloadFetch>[0]["session"] = "s") {
  const { f, calls } = provider();
  const problems: OffloadProblem[] = [];
  const fetch = offloadFetch({
    store: new MemoryStore(),
    session,
    secret: SECRET,
    config: ON,
    fetch: f,
    log: () => {},
    onProblem: (p) => problems.push(p),
  });
  return { fetch, calls, problems };
}

describe("offloadFetch passes through, and says why", () => {
  it("a session that cannot be named: the request goes as sent, a passed_through problem", async () => {
    const { fetch, calls, problems } = ours(
      (req) => req.headers.get("x-chat") ?? "not a valid id!",
    );
    const init = { method: "POST", body: JSON.stringify(anthropicRequest()) };
    await fetch("https://api.anthropic.com/v1/messages", init);
    expect(calls[0]!.init).toBe(init);
    expect(problems).toEqual([
      expect.objectContaining({ code: "passed_through", cause: "invalid_argument" }),
    ]);
  });

  it("a body the adapter cannot read goes as sent (the provider answers it as it would)", async () => {
    const { fetch, calls, problems } = ours();
    const init = { method: "POST", body: '{"messages": 5}' };
    const res = await fetch("https://api.anthropic.com/v1/messages", init);
    expect(res.status).toBe(200);
    // The transform passes what it cannot read through unchanged and says where (the same bytes).
    expect(calls[0]!.init?.body).toBe(init.body);
    expect(problems[0]).toMatchObject({ code: "invalid_request", path: "messages" });
  });

  it("callbacks that throw never fail the app's call", async () => {
    const { f } = provider();
    const ours = offloadFetch({
      store: new MemoryStore(),
      session: "s",
      secret: SECRET,
      config: ON,
      fetch: f,
      log: () => {},
      onReport: () => {
        throw new Error("app bug");
      },
    });
    const res = await ours("https://api.anthropic.com/v1/messages", {
      method: "POST",
      body: JSON.stringify(anthropicRequest()),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-offload-summary")).toBeNull();
  });

  it("sends the app's abort signal with the provider call", async () => {
    const { fetch, calls } = ours();
    const controller = new AbortController();
    await fetch("https://api.anthropic.com/v1/messages", {
      method: "POST",
      body: JSON.stringify(anthropicRequest()),
      signal: controller.signal,
    });
    expect(calls[0]!.init?.signal).toBe(controller.signal);
  });

  it("checks its options at setup", () => {
    const store = new MemoryStore();
    expect(() => offloadFetch({ store, session: "s", secret: "short" })).toThrow(/secret/);
    expect(() => offloadFetch({ store, session: "s", secret: SECRET, maxHops: 99 })).toThrow(
      /maxHops/,
    );
    expect(() =>
      offloadFetch({ store, session: "s", secret: SECRET, config: { tool_result_nope: 1 } }),
    ).toThrow();
  });
});

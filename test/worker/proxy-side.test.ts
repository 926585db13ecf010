/**
 * The proxy's side endpoints in workerd (provider mocked at the Worker's outbound fetch): the token counts,
 * compacted exactly as the next call would be but never recorded; every other path under a provider prefix
 * passed through untouched; our errors there in the provider's shape. And the summary's stream flag and the
 * ending of a turn whose hop failed.
 */

import { SELF } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  anthropicEvents,
  anthropicMessage,
  anthropicRequest,
  memIdIn,
  RECALL_NAME,
  responsesRequest,
} from "../support/providers.ts";
import { BASE, call, KEYS, sid } from "./helpers.ts";
import {
  jsonReply,
  mockProvider,
  proxy,
  proxySummary,
  readEvents,
  type Seen,
  sseReply,
  textReply,
} from "./proxy-mock.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

const EAGER = {
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
  tool_result_recall_tool_declaration: "eager",
};

/** The parts of a request the model reads (what a count counts). */
function prompt(json: Record<string, unknown>, keys: string[]): string {
  return JSON.stringify(keys.map((k) => json[k]));
}

/** What the session recorded: its turns (null when there is no session at all). */
async function turnsLogged(id: string): Promise<number | null> {
  const res = await call(`/v1/sessions/${id}`);
  if (res.status === 404) return null;
  return ((await res.json()) as { totals: { turns_logged: number } }).totals.turns_logged;
}

describe("proxy: token counts", () => {
  it("Anthropic count_tokens is compacted as the next call will be, and records nothing", async () => {
    const session = sid("count-a");
    const { max_tokens: _, ...countBody } = anthropicRequest();
    const seen = mockProvider(
      jsonReply({ input_tokens: 1234 }, 200, { "request-id": "req_count" }),
      jsonReply(anthropicMessage("msg_1", [{ text: "ok" }], { input: 1, output: 1 })),
      jsonReply({ input_tokens: 1234 }),
    );
    const counted = await proxy("/anthropic/v1/messages/count_tokens", countBody, {
      session,
      config: EAGER,
      query: "?beta=true",
      headers: { "x-api-key": "sk-ant-secret", "anthropic-version": "2023-06-01" },
    });
    expect(counted.status).toBe(200);
    expect(await counted.json()).toEqual({ input_tokens: 1234 });
    expect(counted.headers.get("request-id")).toBe("req_count");
    expect(proxySummary(counted)).toMatchObject({ offloaded: 1, recall_tool: "added" });
    expect(seen[0]!.url).toBe("https://api.anthropic.com/v1/messages/count_tokens?beta=true");
    expect(seen[0]!.headers.get("x-api-key")).toBe("sk-ant-secret");
    expect([...seen[0]!.headers.keys()].filter((h) => h.startsWith("x-offload-"))).toEqual([]);
    const mem = memIdIn(seen[0]!.body);
    expect(seen[0]!.body).not.toContain("item-1499");
    // Nothing recorded: no session state at all, no body in the ledger.
    expect(await turnsLogged(session)).toBeNull();
    expect((await call(`/v1/sessions/${session}/memories/${mem}`)).status).toBe(404);

    // The real call sends what was counted: the same tools, system and messages, byte for byte.
    await proxy("/anthropic/v1/messages", anthropicRequest(), { session, config: EAGER });
    const keys = ["tools", "system", "messages"];
    expect(prompt(seen[1]!.json, keys)).toBe(prompt(seen[0]!.json, keys));
    expect(await turnsLogged(session)).toBe(1);
    // A count after it reads the decisions that now stand: still the same bytes.
    await proxy("/anthropic/v1/messages/count_tokens", countBody, { session, config: EAGER });
    expect(prompt(seen[2]!.json, keys)).toBe(prompt(seen[1]!.json, keys));
    expect(await turnsLogged(session)).toBe(1);
  });

  it("Responses input_tokens is compacted the same way; compaction off sends the bytes as they came", async () => {
    const session = sid("count-r");
    const seen = mockProvider(
      jsonReply({ object: "response.input_tokens", input_tokens: 99 }),
      jsonReply({ object: "response.input_tokens", input_tokens: 99 }),
    );
    const res = await proxy("/openai/v1/responses/input_tokens", responsesRequest(), {
      session,
      config: EAGER,
    });
    expect(await res.json()).toEqual({ object: "response.input_tokens", input_tokens: 99 });
    expect(seen[0]!.url).toBe("https://api.openai.com/v1/responses/input_tokens");
    expect(memIdIn(seen[0]!.body)).toMatch(/^trm_/);
    expect(await turnsLogged(session)).toBeNull();

    const raw = JSON.stringify(responsesRequest());
    await proxy("/openai/v1/responses/input_tokens", raw, { session: sid("count-off") });
    expect(seen[1]!.body).toBe(raw);
  });
});

describe("proxy: other paths pass through", () => {
  it("any method and path under a provider prefix reaches the provider as it came, and comes back as sent", async () => {
    const seen = mockProvider(
      textReply('{"data":[{"id":"claude-x"}]}', {
        "content-type": "application/json",
        "request-id": "req_models",
      }),
      jsonReply({ object: "list", data: [] }, 200),
      jsonReply({ id: "resp_1", deleted: true }),
      jsonReply({ error: { type: "invalid_request_error", message: "nope" } }, 404),
    );
    const models = await SELF.fetch(
      new Request(`${BASE}/anthropic/v1/models?limit=2`, {
        headers: { "x-offload-key": KEYS.acme, "x-api-key": "sk-ant-secret" },
      }),
    );
    expect(models.status).toBe(200);
    expect(models.headers.get("request-id")).toBe("req_models");
    expect(await models.text()).toBe('{"data":[{"id":"claude-x"}]}');
    expect(seen[0]).toMatchObject({
      method: "GET",
      url: "https://api.anthropic.com/v1/models?limit=2",
      body: "",
    });
    expect(seen[0]!.headers.get("x-api-key")).toBe("sk-ant-secret");
    expect(seen[0]!.headers.get("x-offload-key")).toBeNull();

    const body = '{"input":"embed me","model":"text-embedding-3-small"}';
    await SELF.fetch(
      new Request(`${BASE}/openai/v1/embeddings`, {
        method: "POST",
        headers: {
          "x-offload-key": KEYS.acme,
          "x-offload-session": "ignored",
          authorization: "Bearer sk-openai",
          "content-type": "application/json",
        },
        body,
      }),
    );
    expect(seen[1]).toMatchObject({
      method: "POST",
      url: "https://api.openai.com/v1/embeddings",
      body,
    });
    expect(seen[1]!.headers.get("authorization")).toBe("Bearer sk-openai");
    expect(seen[1]!.headers.get("x-offload-session")).toBeNull();

    const del = await SELF.fetch(
      new Request(`${BASE}/openai/v1/responses/resp_1`, {
        method: "DELETE",
        headers: { "x-offload-key": KEYS.acme },
      }),
    );
    expect(await del.json()).toEqual({ id: "resp_1", deleted: true });
    expect(seen[2]).toMatchObject({
      method: "DELETE",
      url: "https://api.openai.com/v1/responses/resp_1",
    });

    // The provider's own 404 for a path it does not have comes back as it sent it.
    const missing = await SELF.fetch(
      new Request(`${BASE}/anthropic/v1/nothing-here`, {
        method: "POST",
        headers: { "x-offload-key": KEYS.acme },
        body: "{}",
      }),
    );
    expect(missing.status).toBe(404);
    expect(missing.headers.get("x-offload-error")).toBeNull();
  });

  it("answers our own errors there in the provider's shape", async () => {
    mockProvider(new TypeError("connect ECONNREFUSED"));
    const noKey = await SELF.fetch(new Request(`${BASE}/anthropic/v1/models`));
    expect(noKey.status).toBe(401);
    expect(noKey.headers.get("x-offload-error")).toBe("unauthorized");
    expect(await noKey.json()).toMatchObject({
      type: "error",
      error: { type: "authentication_error" },
    });

    const outside = await SELF.fetch(
      new Request(`${BASE}/openai/models`, { headers: { "x-offload-key": KEYS.acme } }),
    );
    expect(outside.status).toBe(404);
    const err = (await outside.json()) as { error: { message: string; code: string } };
    expect(err.error.code).toBe("not_found");
    expect(err.error.message).toContain("/openai/v1");

    const count = await proxy("/anthropic/v1/messages/count_tokens", anthropicRequest(), {
      session: null,
    });
    expect(count.status).toBe(400);
    expect(await count.json()).toMatchObject({
      type: "error",
      error: { type: "invalid_request_error" },
    });

    const unreachable = await SELF.fetch(
      new Request(`${BASE}/anthropic/v1/models`, { headers: { "x-offload-key": KEYS.acme } }),
    );
    expect(unreachable.status).toBe(502);
    expect(unreachable.headers.get("x-offload-error")).toBe("upstream_error");
    expect(await unreachable.json()).toMatchObject({ type: "error", error: { type: "api_error" } });
  });
});

describe("proxy: requests it cannot read", () => {
  it("sends a shape the transform cannot read as it came, and the provider judges it", async () => {
    const refusal = {
      type: "error",
      error: { type: "invalid_request_error", message: "messages: bad" },
    };
    const seen = mockProvider(jsonReply(refusal, 400));
    const body = '{"model":"claude-sonnet-4-6","max_tokens":5,"messages":"hello"}';
    const res = await proxy("/anthropic/v1/messages", body, {
      session: sid("unread"),
      config: EAGER,
    });
    expect(seen[0]!.body).toBe(body);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual(refusal);
    expect(res.headers.get("x-offload-error")).toBeNull();
    expect(proxySummary(res)).toMatchObject({
      changed: false,
      errors: [{ code: "invalid_request", path: "messages" }],
    });
  });
});

describe("proxy: the summary of streams and failed hops", () => {
  const recallCall = (s: Seen) =>
    anthropicEvents(
      anthropicMessage(
        "msg_r",
        [{ call: RECALL_NAME, id: "toolu_r", input: { mem_id: memIdIn(s.body), query: "item-1" } }],
        { input: 10, output: 5 },
      ),
    );

  it("says stream:true for an event stream the proxy does not watch", async () => {
    const own = { name: RECALL_NAME, description: "mine", input_schema: { type: "object" } };
    const req = anthropicRequest();
    mockProvider(
      sseReply(anthropicEvents(anthropicMessage("m", [{ text: "hi" }], { input: 1, output: 1 }))),
    );
    const res = await proxy(
      "/anthropic/v1/messages",
      { ...req, stream: true, tools: [...(req.tools as object[]), own] },
      { session: sid("own-stream"), config: EAGER },
    );
    expect(proxySummary(res).proxy).toMatchObject({ stream: true });
    await res.text();
  });

  it("a streamed hop the provider refuses ends the stream with ending:failed", async () => {
    const session = sid("hop-fail-s");
    mockProvider(
      (s) => sseReply(recallCall(s)),
      jsonReply({ type: "error", error: { type: "api_error", message: "boom" } }, 500),
    );
    const res = await proxy(
      "/anthropic/v1/messages",
      { ...anthropicRequest(), stream: true },
      { session, config: EAGER },
    );
    const { events, comment } = await readEvents(res);
    expect(events.at(-1)!.event).toBe("error");
    expect(comment).toMatchObject({ hops: 1, recalls: 1, ending: "failed" });
  });

  it("a buffered hop the provider refuses says ending:failed in the summary", async () => {
    const session = sid("hop-fail-b");
    mockProvider(
      (s) =>
        jsonReply(
          anthropicMessage(
            "msg_r",
            [{ call: RECALL_NAME, id: "toolu_r", input: { mem_id: memIdIn(s.body) } }],
            { input: 1, output: 1 },
          ),
        ),
      jsonReply({ type: "error", error: { type: "api_error", message: "boom" } }, 500),
    );
    const res = await proxy("/anthropic/v1/messages", anthropicRequest(), {
      session,
      config: EAGER,
    });
    expect(res.status).toBe(500);
    expect(proxySummary(res).proxy).toMatchObject({ stream: false, hops: 1, ending: "failed" });
  });
});

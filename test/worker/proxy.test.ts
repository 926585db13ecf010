/**
 * The proxy routes in workerd, through SELF.fetch, with the provider mocked at the Worker's outbound fetch:
 * auth and session headers, which headers cross, pass-through with compaction off, errors in the provider's
 * shape, recall hops (buffered and streamed), mixed turns spliced back, and the turn log.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp, defaultParts } from "../../src/app.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import {
  anthropicEvents,
  anthropicMessage,
  anthropicRequest,
  chatCompletion,
  chatEvents,
  chatRequest,
  memIdIn,
  ON,
  RECALL_NAME,
  response,
  responseEvents,
  responsesRequest,
} from "../support/providers.ts";
import { bound, call, KEYS, sid } from "./helpers.ts";
import {
  jsonReply,
  mockProvider,
  proxy,
  proxyRequest,
  proxySummary,
  readEvents,
  type Seen,
  sseReply,
  textReply,
} from "./proxy-mock.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

const MESSAGES = "/anthropic/v1/messages";
const CHAT = "/openai/v1/chat/completions";
const RESPONSES = "/openai/v1/responses";

const hello = anthropicMessage("msg_hello", [{ text: "Hello." }], { input: 10, output: 2 });

function recallArgs(mem: string) {
  return { mem_id: mem, json_path: "$.items[1499]" };
}

/** The mem_id the proxy stubbed into the request it forwarded. */
function stubbed(seen: Seen): string {
  return memIdIn(seen.body);
}

describe("proxy: auth, session and headers", () => {
  it("answers our own errors in the provider's shape, with x-offload-error", async () => {
    const missingKey = await proxy(MESSAGES, anthropicRequest(), { key: null });
    expect(missingKey.status).toBe(401);
    expect(missingKey.headers.get("x-offload-error")).toBe("unauthorized");
    const body = (await missingKey.json()) as {
      type: string;
      error: { type: string; message: string };
    };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("authentication_error");
    expect(body.error.message).toContain("x-offload-key");

    const unknown = await proxy(CHAT, chatRequest(), { key: "nope" });
    expect(unknown.status).toBe(401);
    const openai = (await unknown.json()) as {
      error: { message: string; type: string; code: string; param: string };
    };
    expect(openai.error).toMatchObject({ code: "unauthorized", param: "x-offload-key" });
    expect(openai.error.message).toMatch(/^edge-offload: unknown x-offload-key/);

    const noSession = await proxy(RESPONSES, responsesRequest(), { session: null });
    expect(noSession.status).toBe(400);
    expect(
      ((await noSession.json()) as { error: { param: string; message: string } }).error,
    ).toMatchObject({ param: "x-offload-session" });
    const badSession = await proxy(MESSAGES, anthropicRequest(), { session: "a/b" });
    expect(badSession.status).toBe(400);
    expect(((await badSession.json()) as { error: { message: string } }).error.message).toContain(
      "x-offload-session must be",
    );

    const badConfig = await proxy(MESSAGES, anthropicRequest(), {
      config: { tool_result_recall_mode: "all" },
    });
    expect(badConfig.status).toBe(400);
    expect(badConfig.headers.get("x-offload-error")).toBe("invalid_config");
  });

  it("forwards the client's headers but not ours nor hop-by-hop ones, and returns the provider's", async () => {
    const seen = mockProvider(
      jsonReply(hello, 200, {
        "request-id": "req_123",
        "anthropic-ratelimit-requests-remaining": "99",
        "retry-after": "3",
        "set-cookie": "__cf_bm=x",
        "x-custom-hop": "1",
        connection: "x-custom-hop",
      }),
    );
    const res = await proxy(MESSAGES, anthropicRequest(), {
      session: sid("headers"),
      query: "?beta=true",
      headers: {
        "x-api-key": "sk-ant-secret",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "prompt-caching-2024-07-31",
        "x-stainless-lang": "js",
        "x-offload-extra": "ours",
        "x-private-hop": "drop me",
        connection: "x-private-hop",
        "cf-connecting-ip": "203.0.113.9",
        "x-forwarded-for": "203.0.113.9",
      },
    });
    expect(res.status).toBe(200);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe("https://api.anthropic.com/v1/messages?beta=true");
    const h = seen[0]!.headers;
    expect(h.get("x-api-key")).toBe("sk-ant-secret");
    expect(h.get("anthropic-version")).toBe("2023-06-01");
    expect(h.get("anthropic-beta")).toBe("prompt-caching-2024-07-31");
    expect(h.get("x-stainless-lang")).toBe("js");
    expect(h.get("content-type")).toBe("application/json");
    const names = [...h.keys()];
    expect(names.filter((n) => n.startsWith("x-offload-"))).toEqual([]);
    expect(names).not.toContain("x-private-hop");
    expect(names).not.toContain("cf-connecting-ip");
    expect(names).not.toContain("x-forwarded-for");
    expect(res.headers.get("request-id")).toBe("req_123");
    expect(res.headers.get("anthropic-ratelimit-requests-remaining")).toBe("99");
    expect(res.headers.get("retry-after")).toBe("3");
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(res.headers.get("x-custom-hop")).toBeNull();
    expect(await res.json()).toEqual(hello);
  });

  it("with compaction off forwards the very bytes and returns the provider's bytes", async () => {
    const pretty = `{ "model" : "gpt-4.1",\n "messages":[{"role":"user","content":"caf\\u00e9"}] }`;
    const answer = `{"id":"chatcmpl-1",  "object":"chat.completion","choices":[]}`;
    const seen = mockProvider(
      textReply(answer, { "content-type": "application/json", "x-request-id": "r1" }),
    );
    const res = await proxy(CHAT, pretty, {
      session: sid("off"),
      headers: { authorization: "Bearer sk-openai" },
    });
    expect(seen[0]!.url).toBe("https://api.openai.com/v1/chat/completions");
    expect(seen[0]!.body).toBe(pretty);
    expect(seen[0]!.headers.get("authorization")).toBe("Bearer sk-openai");
    expect(await res.text()).toBe(answer);
    expect(res.headers.get("x-request-id")).toBe("r1");
    expect(proxySummary(res)).toMatchObject({ enabled: false, proxy: { spliced: 0 } });
  });

  it("refuses an oversize body with 413 in the provider's shape", async () => {
    mockProvider();
    const app = createApp({ maxBodyBytes: 1000, log: () => {} });
    const res = await app.fetch(
      proxyRequest(RESPONSES, responsesRequest(), { config: ON, session: sid("big") }),
      env,
      createExecutionContext(),
    );
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      "payload_too_large",
    );
  });

  it("goes to ANTHROPIC_BASE_URL and OPENAI_BASE_URL as the SDKs mean them", async () => {
    const seen = mockProvider(
      jsonReply(hello),
      jsonReply(chatCompletion("c", [{ text: "hi" }], { input: 1, output: 1 })),
    );
    const app = createApp({
      log: () => {},
      fetch: (input, init) =>
        globalThis.fetch(
          String(input).replace("https://gw.example/", "https://api.anthropic.com/"),
          init,
        ),
    });
    const vars = {
      ...env,
      ANTHROPIC_BASE_URL: "https://gw.example/anthropic/",
      OPENAI_BASE_URL: "https://api.openai.com/proxy/v1",
    };
    await app.fetch(proxyRequest(MESSAGES, anthropicRequest()), vars, createExecutionContext());
    await app.fetch(proxyRequest(CHAT, chatRequest()), vars, createExecutionContext());
    expect(seen.map((s) => s.url)).toEqual([
      "https://api.anthropic.com/anthropic/v1/messages",
      "https://api.openai.com/proxy/v1/chat/completions",
    ]);
    const bad = await app.fetch(
      proxyRequest(MESSAGES, anthropicRequest()),
      { ...env, ANTHROPIC_BASE_URL: "ftp://x" },
      createExecutionContext(),
    );
    expect(bad.status).toBe(500);
  });
});

describe("proxy: provider errors reach the client as the provider sent them", () => {
  it("400, 429 with retry-after, 500: status, body and headers as sent", async () => {
    const invalid = {
      type: "error",
      error: { type: "invalid_request_error", message: "max_tokens: field required" },
    };
    const limited = {
      error: {
        message: "Rate limit reached",
        type: "requests",
        param: null,
        code: "rate_limit_exceeded",
      },
    };
    mockProvider(
      jsonReply(invalid, 400, { "request-id": "req_400" }),
      jsonReply(limited, 429, { "retry-after": "7", "x-ratelimit-remaining-requests": "0" }),
      jsonReply({ error: { message: "boom", type: "server_error" } }, 500),
    );
    const session = sid("errors");
    const a = await proxy(MESSAGES, anthropicRequest(), { session, config: ON });
    expect(a.status).toBe(400);
    expect(await a.json()).toEqual(invalid);
    expect(a.headers.get("request-id")).toBe("req_400");
    const b = await proxy(CHAT, chatRequest(), { session, config: ON });
    expect(b.status).toBe(429);
    expect(b.headers.get("retry-after")).toBe("7");
    expect(b.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(await b.json()).toEqual(limited);
    const c = await proxy(RESPONSES, responsesRequest(), { session, config: ON });
    expect(c.status).toBe(500);
    expect(c.headers.get("x-offload-error")).toBeNull();
  });

  it("a recall hop the provider refuses is the client's answer, and the hop that ran is still logged", async () => {
    const session = sid("hop-429");
    const limited = { type: "error", error: { type: "rate_limit_error", message: "slow down" } };
    mockProvider(
      (s) =>
        jsonReply(
          anthropicMessage(
            "m",
            [{ call: RECALL_NAME, id: "toolu_h", input: recallArgs(stubbed(s)) }],
            { input: 1, output: 1 },
          ),
        ),
      jsonReply(limited, 429, { "retry-after": "4" }),
    );
    const res = await proxy(MESSAGES, anthropicRequest(), { session, config: ON });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("4");
    expect(await res.json()).toEqual(limited);
    expect(proxySummary(res).proxy).toMatchObject({ hops: 1, recalls: 1 });
    const view = (await (await call(`/v1/sessions/${session}`)).json()) as {
      turns: { proxy?: unknown }[];
    };
    expect(view.turns.at(-1)!.proxy).toEqual({ hops: 1, recalls: 1, exhausted: false });
  });

  it("a connection that cannot be made is a 502 in the provider's shape", async () => {
    mockProvider(new TypeError("Network connection lost."), new TypeError("connect ECONNREFUSED"));
    const a = await proxy(MESSAGES, anthropicRequest(), { session: sid("drop") });
    expect(a.status).toBe(502);
    expect(a.headers.get("x-offload-error")).toBe("upstream_error");
    expect(((await a.json()) as { error: { type: string; message: string } }).error).toMatchObject({
      type: "api_error",
    });
    const b = await proxy(CHAT, chatRequest(), { session: sid("drop"), config: ON });
    expect(b.status).toBe(502);
    expect(((await b.json()) as { error: { type: string; code: string } }).error).toMatchObject({
      type: "server_error",
      code: "upstream_error",
    });
  });

  it("the provider's own error event mid-stream reaches the client once", async () => {
    const [start] = anthropicEvents(
      anthropicMessage("msg_e", [{ text: "x" }], { input: 1, output: 1 }),
    );
    const overloaded =
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
    mockProvider(sseReply([start!, overloaded]));
    const { events } = await readEvents(
      await proxy(
        MESSAGES,
        { ...anthropicRequest(), stream: true },
        { session: sid("err-ev"), config: ON },
      ),
    );
    expect(events.map((e) => e.event)).toEqual(["message_start", "error"]);
    expect(JSON.parse(events[1]!.data).error.type).toBe("overloaded_error");
  });

  it("a stream cut mid-way ends with the provider's error event", async () => {
    const events = anthropicEvents(
      anthropicMessage("msg_cut", [{ text: "Partial answer here." }], { input: 5, output: 5 }),
    );
    mockProvider(sseReply(events, { cut: 4 }));
    const res = await proxy(
      MESSAGES,
      { ...anthropicRequest(), stream: true },
      { session: sid("cut"), config: ON },
    );
    expect(res.status).toBe(200);
    const { events: got } = await readEvents(res);
    expect(got[got.length - 1]!.event).toBe("error");
    expect(JSON.parse(got[got.length - 1]!.data)).toMatchObject({
      type: "error",
      error: { type: "api_error" },
    });
  });
});

describe("proxy: recall hops", () => {
  it("Anthropic: answers a recall-only turn itself, sums usage, and logs the hop", async () => {
    const session = sid("hop-a");
    const seen = mockProvider(
      (s) =>
        jsonReply(
          anthropicMessage(
            "msg_1",
            [
              { text: "Let me look." },
              { call: RECALL_NAME, id: "toolu_r1", input: recallArgs(stubbed(s)) },
            ],
            { input: 1000, output: 20, cache_read: 100 },
          ),
        ),
      jsonReply(
        anthropicMessage("msg_2", [{ text: "item-1499 is the most expensive." }], {
          input: 1200,
          output: 30,
          cache_read: 900,
          cache_write: 50,
        }),
      ),
    );
    const res = await proxy(MESSAGES, anthropicRequest(), {
      session,
      config: ON,
      headers: { "idempotency-key": "idem-1" },
    });
    expect(res.status).toBe(200);
    const out = (await res.json()) as {
      id: string;
      content: { type: string; text?: string }[];
      stop_reason: string;
      usage: Record<string, number>;
    };
    // A hop is a new request: the client's idempotency key would make the provider replay the first answer.
    expect(seen.map((s) => s.headers.get("idempotency-key"))).toEqual(["idem-1", "idem-1.hop1"]);
    expect(out.id).toBe("msg_1");
    expect(out.content).toEqual([
      { type: "text", text: "Let me look." },
      { type: "text", text: "item-1499 is the most expensive." },
    ]);
    expect(out.stop_reason).toBe("end_turn");
    expect(out.usage).toEqual({
      input_tokens: 2200,
      output_tokens: 50,
      cache_read_input_tokens: 1000,
      cache_creation_input_tokens: 50,
    });
    expect(JSON.stringify(out)).not.toContain(RECALL_NAME);

    // The first call had the stub and the tool declared once, at the end; the hop continued it.
    const tools = (seen[0]!.json.tools as { name: string }[]).map((t) => t.name);
    expect(tools).toEqual(["status", RECALL_NAME]);
    expect(seen[0]!.body).not.toContain("item-1499");
    const hop = seen[1]!.json.messages as {
      role: string;
      content: { type: string; content?: string; tool_use_id?: string }[];
    }[];
    expect(hop.length).toBe(7);
    expect(hop[5]!.content.map((b) => b.type)).toEqual(["text", "tool_use"]);
    expect(hop[6]!.content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_r1" });
    expect(hop[6]!.content[0]!.content).toContain('"name": "item-1499"');
    expect(seen[1]!.body.startsWith(seen[0]!.body.slice(0, seen[0]!.body.lastIndexOf("]")))).toBe(
      true,
    );

    const summarized = proxySummary(res).proxy as Record<string, number>;
    expect(summarized).toEqual({
      stream: false,
      spliced: 0,
      hops: 1,
      recalls: 1,
      ending: "done",
      memos: 0,
      // Billed from the answers' usage: both calls, and the hop's alone.
      usd: expect.any(Number),
      hop_usd: expect.any(Number),
    });
    expect(summarized.hop_usd).toBeGreaterThan(0);
    expect(summarized.hop_usd).toBeLessThan(summarized.usd!);
    const view = (await (await call(`/v1/sessions/${session}`)).json()) as {
      turns: { proxy?: unknown }[];
      totals: { recalls: number; proxy_hops: number };
    };
    expect(view.turns.at(-1)!.proxy).toEqual({ hops: 1, recalls: 1, exhausted: false });
    expect(view.totals).toMatchObject({ recalls: 1, proxy_hops: 1 });
  });

  it("stops at OFFLOAD_PROXY_MAX_HOPS and ends the turn with a notice", async () => {
    const session = sid("hop-limit");
    const again = (id: string) => (s: Seen) =>
      jsonReply(
        chatCompletion(
          id,
          [{ call: RECALL_NAME, id: `call_${id}`, input: { mem_id: memIdIn(s.body) } }],
          { input: 10, output: 1 },
        ),
      );
    const seen = mockProvider(again("a"), again("b"));
    const app = createApp({ log: () => {} });
    const res = await app.fetch(
      proxyRequest(CHAT, chatRequest(), { session, config: ON }),
      { ...env, OFFLOAD_PROXY_MAX_HOPS: "1" },
      createExecutionContext(),
    );
    expect(seen).toHaveLength(2);
    const out = (await res.json()) as {
      choices: { message: { content: string; tool_calls?: unknown }; finish_reason: string }[];
      usage: { prompt_tokens: number };
    };
    expect(out.choices[0]!.finish_reason).toBe("stop");
    expect(out.choices[0]!.message.content).toContain("more than 1 times");
    expect(out.choices[0]!.message.tool_calls).toBeUndefined();
    expect(out.usage.prompt_tokens).toBe(20);
    expect(proxySummary(res).proxy).toMatchObject({ hops: 1, ending: "exhausted" });
  });

  it("a mixed turn goes to the client without our call, and the next request gets it spliced back", async () => {
    const session = sid("mixed");
    let mem = "";
    const seen = mockProvider(
      (s) => {
        mem = stubbed(s);
        return jsonReply(
          anthropicMessage(
            "msg_m",
            [
              { call: "status", id: "toolu_c1", input: {} },
              { call: RECALL_NAME, id: "toolu_r9", input: recallArgs(mem) },
            ],
            { input: 10, output: 5 },
          ),
        );
      },
      jsonReply(hello),
      jsonReply(hello),
    );
    const first = await proxy(MESSAGES, anthropicRequest(), { session, config: ON });
    const out = (await first.json()) as {
      content: { type: string; id?: string }[];
      stop_reason: string;
    };
    expect(out.content).toEqual([{ type: "tool_use", id: "toolu_c1", name: "status", input: {} }]);
    expect(out.stop_reason).toBe("tool_use");
    expect(proxySummary(first).proxy).toMatchObject({ ending: "mixed", memos: 1, recalls: 1 });

    // The client runs its tool and sends the history it holds: our call and its answer are spliced back in.
    const history = anthropicRequest();
    const next = {
      ...history,
      messages: [
        ...(history.messages as object[]),
        { role: "assistant", content: out.content },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_c1", content: "all green" },
            { type: "text", text: "Thanks." },
          ],
        },
      ],
    };
    const second = await proxy(MESSAGES, next, { session, config: ON });
    expect(proxySummary(second).proxy).toMatchObject({ spliced: 1 });
    const sent = seen[1]!.json.messages as {
      role: string;
      content: { type: string; id?: string; tool_use_id?: string; content?: string }[];
    }[];
    expect(sent[5]!.content.map((b) => b.id)).toEqual(["toolu_c1", "toolu_r9"]);
    expect(sent[6]!.content.map((b) => b.type)).toEqual(["tool_result", "tool_result", "text"]);
    expect(sent[6]!.content[1]).toMatchObject({ tool_use_id: "toolu_r9" });
    expect(sent[6]!.content[1]!.content).toContain("item-1499");

    // Sticky: the same history next turn splices the same bytes.
    await proxy(MESSAGES, next, { session, config: ON });
    expect(seen[2]!.body).toBe(seen[1]!.body);
  });
});

describe("proxy: streams", () => {
  it("Anthropic: a recall hop mid-stream gives one well-formed message", async () => {
    const session = sid("stream-a");
    mockProvider(
      (s) =>
        sseReply(
          anthropicEvents(
            anthropicMessage(
              "msg_s1",
              [
                { text: "Checking." },
                { call: RECALL_NAME, id: "toolu_rs", input: recallArgs(stubbed(s)) },
              ],
              { input: 100, output: 10 },
            ),
          ),
        ),
      sseReply(
        anthropicEvents(
          anthropicMessage("msg_s2", [{ text: "It is item-1499." }], {
            input: 150,
            output: 12,
            cache_read: 90,
          }),
        ),
      ),
    );
    const res = await proxy(
      MESSAGES,
      { ...anthropicRequest(), stream: true },
      { session, config: ON },
    );
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const { events, comment, text } = await readEvents(res);
    expect(text).not.toContain(RECALL_NAME);
    const types = events.filter((e) => e.event !== "ping").map((e) => e.event);
    expect(types.filter((t) => t === "message_start")).toHaveLength(1);
    expect(types.filter((t) => t === "message_stop")).toHaveLength(1);
    expect(types[types.length - 1]).toBe("message_stop");
    const starts = events
      .filter((e) => e.event === "content_block_start")
      .map((e) => (JSON.parse(e.data) as { index: number }).index);
    expect(starts).toEqual([0, 1]);
    const delta = JSON.parse(events.find((e) => e.event === "message_delta")!.data) as {
      delta: { stop_reason: string };
      usage: Record<string, number>;
    };
    expect(delta.delta.stop_reason).toBe("end_turn");
    expect(delta.usage).toMatchObject({
      input_tokens: 250,
      output_tokens: 22,
      cache_read_input_tokens: 90,
    });
    // The closing comment carries the bill (the stream's headers went out before it was known).
    expect(comment).toEqual({
      hops: 1,
      recalls: 1,
      ending: "done",
      memos: 0,
      usd: expect.any(Number),
      hop_usd: expect.any(Number),
    });
    expect((comment as Record<string, number>).hop_usd).toBeLessThan(
      (comment as Record<string, number>).usd!,
    );
  });

  it("Chat and Responses: a stream without recall passes as it came (Chat's usage asked for, and kept out)", async () => {
    const completion = chatCompletion("c1", [{ text: "Plain answer." }], { input: 3, output: 2 });
    const respStream = responseEvents(
      response("resp_1", [{ text: "Plain answer." }], { input: 3, output: 2 }),
    );
    // The client asks for no usage: the proxy asks upstream, so the provider sends it.
    const seen = mockProvider(sseReply(chatEvents(completion, true)), sseReply(respStream));
    const session = sid("stream-plain");
    const a = await readEvents(
      await proxy(CHAT, { ...chatRequest(), stream: true }, { session, config: ON }),
    );
    expect(seen[0]!.json.stream_options).toEqual({ include_usage: true });
    // The client's stream is the one it asked for: no usage chunk, no `"usage": null`.
    expect(a.text.replace(/: edge-offload .*\n\n$/, "")).toBe(
      chatEvents(completion, false).join(""),
    );
    const b = await readEvents(
      await proxy(RESPONSES, { ...responsesRequest(), stream: true }, { session, config: ON }),
    );
    expect(b.text.replace(/: edge-offload .*\n\n$/, "")).toBe(respStream.join(""));
  });
});

describe("proxy: more turns and formats", () => {
  it("Responses: a mixed turn with whole history gets our call and output spliced after the client's", async () => {
    const session = sid("mixed-r");
    const seen = mockProvider(
      (s) =>
        jsonReply(
          response(
            "resp_m",
            [
              { call: "status", id: "call_c", input: {} },
              { call: RECALL_NAME, id: "call_r", input: recallArgs(stubbed(s)) },
            ],
            { input: 9, output: 3 },
            { store: false },
          ),
        ),
      jsonReply(response("resp_n", [{ text: "ok" }], { input: 9, output: 1 }, { store: false })),
    );
    const first = (await (
      await proxy(RESPONSES, responsesRequest(), { session, config: ON })
    ).json()) as { output: { type: string; call_id?: string }[] };
    expect(first.output.map((i) => i.call_id)).toEqual(["call_c"]);
    const history = responsesRequest();
    const next = {
      ...history,
      input: [
        ...(history.input as object[]),
        ...first.output,
        { type: "function_call_output", call_id: "call_c", output: "green" },
      ],
    };
    await proxy(RESPONSES, next, { session, config: ON });
    const input = seen[1]!.json.input as { type: string; call_id: string; output?: string }[];
    expect(input.slice(-4).map((i) => `${i.type}:${i.call_id}`)).toEqual([
      "function_call:call_c",
      "function_call:call_r",
      "function_call_output:call_c",
      "function_call_output:call_r",
    ]);
    expect(input.at(-1)!.output).toContain("item-1499");
  });

  it("Responses stream: a reasoning item right before our call is dropped with it; sequence numbers stay in order", async () => {
    const session = sid("stream-r");
    mockProvider(
      (s) =>
        sseReply(
          responseEvents(
            response(
              "resp_a",
              [
                { text: "First." },
                { reasoning: "think" },
                { call: RECALL_NAME, id: "call_x", input: recallArgs(stubbed(s)) },
              ],
              { input: 10, output: 2 },
            ),
          ),
        ),
      sseReply(
        responseEvents(
          response("resp_b", [{ reasoning: "more" }, { text: "Second." }], {
            input: 20,
            output: 3,
          }),
        ),
      ),
    );
    const { events, comment } = await readEvents(
      await proxy(RESPONSES, { ...responsesRequest(), stream: true }, { session, config: ON }),
    );
    const data = events.map(
      (e) =>
        JSON.parse(e.data) as {
          type: string;
          sequence_number: number;
          output_index?: number;
          item?: { type: string; id: string };
          response?: { id: string; output: { type: string }[]; usage: { input_tokens: number } };
        },
    );
    const seqs = data.map((d) => d.sequence_number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(data.filter((d) => d.type === "response.created")).toHaveLength(1);
    const added = data
      .filter((d) => d.type === "response.output_item.added")
      .map((d) => `${d.output_index}:${d.item!.type}`);
    expect(added).toEqual(["0:message", "1:reasoning", "2:message"]);
    const done = data.at(-1)!;
    expect(done.type).toBe("response.completed");
    expect(done.response!.id).toBe("resp_a");
    expect(done.response!.output.map((i) => i.type)).toEqual(["message", "reasoning", "message"]);
    expect(done.response!.usage.input_tokens).toBe(30);
    expect(comment).toMatchObject({ hops: 1, ending: "done" });
  });

  it("streams that exhaust the hop limit end with a notice, in each format", async () => {
    const app = createApp({ log: () => {} });
    const vars = { ...env, OFFLOAD_PROXY_MAX_HOPS: "0" };
    const session = sid("exhaust-stream");
    mockProvider(
      (s) =>
        sseReply(
          anthropicEvents(
            anthropicMessage(
              "m",
              [{ call: RECALL_NAME, id: "toolu_x", input: recallArgs(stubbed(s)) }],
              { input: 1, output: 1 },
            ),
          ),
        ),
      (s) =>
        sseReply(
          chatEvents(
            chatCompletion(
              "c",
              [{ call: RECALL_NAME, id: "call_x", input: recallArgs(stubbed(s)) }],
              { input: 1, output: 1 },
            ),
          ),
        ),
      (s) =>
        sseReply(
          responseEvents(
            response(
              "r",
              [{ call: RECALL_NAME, id: "call_y", input: recallArgs(stubbed(s)) }],
              { input: 1, output: 1 },
              { store: false },
            ),
          ),
        ),
    );
    const a = await readEvents(
      await app.fetch(
        proxyRequest(MESSAGES, { ...anthropicRequest(), stream: true }, { session, config: ON }),
        vars,
        createExecutionContext(),
      ),
    );
    expect(a.text).not.toContain(RECALL_NAME);
    expect(a.events.map((e) => e.event).filter((e) => e !== "ping")).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(a.text).toContain("proxy stopped here");
    expect(
      JSON.parse(a.events.find((e) => e.event === "message_delta")!.data).delta.stop_reason,
    ).toBe("end_turn");

    const c = await readEvents(
      await app.fetch(
        proxyRequest(
          CHAT,
          { ...chatRequest(), stream: true, stream_options: { include_usage: true } },
          { session, config: ON },
        ),
        vars,
        createExecutionContext(),
      ),
    );
    expect(c.text).not.toContain(RECALL_NAME);
    expect(c.events.at(-1)!.data).toBe("[DONE]");
    const chunks = c.events.slice(0, -1).map(
      (e) =>
        JSON.parse(e.data) as {
          choices: { finish_reason: string | null; delta: { content?: string } }[];
          usage: unknown;
        },
    );
    expect(
      chunks.flatMap((k) => k.choices.map((ch) => ch.finish_reason)).filter((f) => f !== null),
    ).toEqual(["stop"]);
    expect(chunks.some((k) => k.choices[0]?.delta.content?.includes("proxy stopped here"))).toBe(
      true,
    );
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 1 });

    const r = await readEvents(
      await app.fetch(
        proxyRequest(RESPONSES, { ...responsesRequest(), stream: true }, { session, config: ON }),
        vars,
        createExecutionContext(),
      ),
    );
    expect(r.text).not.toContain(RECALL_NAME);
    const last = JSON.parse(r.events.at(-1)!.data) as {
      type: string;
      response: { output: { type: string }[] };
    };
    expect(last.type).toBe("response.completed");
    expect(last.response.output.map((i) => i.type)).toEqual(["message"]);
  });

  it("a client that declares recall_tool_result itself gets the model's calls: they are its own", async () => {
    const session = sid("own-tool");
    const own = {
      name: RECALL_NAME,
      description: "mine",
      input_schema: { type: "object", properties: {} },
    };
    const answer = anthropicMessage("m_own", [{ call: RECALL_NAME, id: "toolu_own", input: {} }], {
      input: 1,
      output: 1,
    });
    const seen = mockProvider(jsonReply(answer));
    const req = anthropicRequest();
    const res = await proxy(
      MESSAGES,
      { ...req, tools: [...(req.tools as object[]), own] },
      { session, config: ON },
    );
    expect(seen).toHaveLength(1);
    expect(await res.json()).toEqual(answer);
  });

  it("an unreadable session passes the call through unchanged, and no key ends up in the log", async () => {
    const lines: string[] = [];
    const app = createApp({
      log: (l) => lines.push(l),
      store: (e, settings, log) => {
        const real = defaultParts(e, settings, log);
        return new ComposedStore({
          ledger: real.ledger,
          index: real.index,
          log,
          sessions: {
            ...bound(real.sessions),
            begin: async () => {
              throw new Error("Network connection lost.");
            },
          },
        });
      },
    });
    const body = JSON.stringify(anthropicRequest());
    const seen = mockProvider(jsonReply(hello));
    const res = await app.fetch(
      proxyRequest(MESSAGES, body, {
        session: sid("do-down"),
        config: ON,
        headers: { "x-api-key": "sk-ant-never-logged" },
      }),
      env,
      createExecutionContext(),
    );
    expect(res.status).toBe(200);
    expect(seen[0]!.body).toBe(body);
    expect(proxySummary(res).errors).toMatchObject([{ code: "storage_error" }]);
    expect(lines.join("\n")).not.toContain("sk-ant-never-logged");
    expect(lines.join("\n")).not.toContain(KEYS.acme);
  });
});

describe("proxy: work after the answer", () => {
  it("starts a steady turn's log line once the provider has answered, not during the transform", async () => {
    const order: string[] = [];
    mockProvider(
      sseReply(anthropicEvents(hello)),
      sseReply(anthropicEvents(hello)),
      sseReply(anthropicEvents(hello)),
    );
    const app = createApp({
      log: () => {},
      fetch: async (input, init) => {
        order.push("provider");
        const res = await globalThis.fetch(input, init);
        order.push("answered");
        return res;
      },
      store: (e, settings, log, defer) => {
        const parts = defaultParts(e, settings, log, defer);
        const sessions = new Proxy(parts.sessions, {
          get(target, key) {
            const value = Reflect.get(target, key, target) as unknown;
            if (typeof value !== "function") return value;
            return (...args: unknown[]) => {
              if (key === "commit") order.push("commit");
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        });
        return new ComposedStore({ ...parts, sessions });
      },
    });
    const session = sid("held-defer");
    const turn = async () => {
      order.length = 0;
      const ctx = createExecutionContext();
      const res = await app.fetch(
        proxyRequest(MESSAGES, { ...anthropicRequest(), stream: true }, { session, config: ON }),
        env,
        ctx,
      );
      await res.text();
      await waitOnExecutionContext(ctx);
      return [...order];
    };
    // A first sight commits before the provider is called (its records stand before stubs go out).
    const first = await turn();
    expect(first.indexOf("commit")).toBeGreaterThanOrEqual(0);
    expect(first.indexOf("commit")).toBeLessThan(first.indexOf("provider"));
    // A steady turn: its only commit (the log line) starts after the provider answered.
    const steady = await turn();
    expect(steady.filter((s) => s === "commit")).toHaveLength(1);
    expect(steady.indexOf("commit")).toBeGreaterThan(steady.indexOf("answered"));
  });
});

/**
 * The proxy's pure parts in Node: the SSE reader, usage sums, which headers cross, the upstream settings, and
 * each dialect's next-hop request, merge and splice on their edge cases (what the HTTP tests do not reach).
 */
import { describe, expect, it } from "vitest";
import { splice as applyEdits, compact } from "../../src/core/compact.ts";
import { anthropicDialect } from "../../src/proxy/anthropic.ts";
import type { Answer, Dialect } from "../../src/proxy/dialect.ts";
import { clientHeaders, upstreamHeaders } from "../../src/proxy/headers.ts";
import { openaiChatDialect } from "../../src/proxy/openai-chat.ts";
import { openaiResponsesDialect } from "../../src/proxy/openai-responses.ts";
import type { ProxyMemo } from "../../src/proxy/port.ts";
import { runRecalls } from "../../src/proxy/recalls.ts";
import { readSse } from "../../src/proxy/sse.ts";
import { type ProxyVars, proxySettingsOf, upstreamUrl } from "../../src/proxy/upstream.ts";
import { addUsage } from "../../src/proxy/usage.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import {
  anthropicMessage,
  anthropicRequest,
  chatCompletion,
  memIdIn,
  ON,
  RECALL_NAME,
  response,
} from "../support/providers.ts";

function streamOf(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const x of chunks) c.enqueue(typeof x === "string" ? encoder.encode(x) : x);
      c.close();
    },
  });
}

async function events(chunks: (string | Uint8Array)[]) {
  const out = [];
  for await (const e of readSse(streamOf(chunks))) out.push(e);
  return out;
}

const params = { mode: "both" as const, max_chars: 50_000, window: 300 };
const answers = (ids: string[]) =>
  new Map(ids.map((id) => [id, { id, content: `answer ${id}`, is_error: false }]));
const edit = (d: Dialect, raw: string, memos: ProxyMemo[], ids: string[]) => {
  const { edits, spliced } = d.splice(raw, memos, answers(ids));
  return { text: applyEdits(raw, edits), spliced };
};

describe("readSse", () => {
  it("yields events as they complete, whatever the chunking (CRLF split, UTF-8 split, multi-line data)", async () => {
    const bytes = new TextEncoder().encode("data: café\n\n");
    const got = await events([
      "event: a\r",
      '\ndata: {"x":1}\r\n\r\n: comment\n\nev',
      "ent: b\ndata: line1\ndata: line2\n\n",
      bytes.slice(0, 9),
      bytes.slice(9),
      "data: tail",
    ]);
    expect(got.map((e) => [e.event, e.data])).toEqual([
      ["a", '{"x":1}'],
      [null, ""],
      ["b", "line1\nline2"],
      [null, "café"],
      [null, "tail"],
    ]);
    expect(got[0]!.raw).toBe('event: a\ndata: {"x":1}\n\n');
  });

  it("throws when the connection drops mid-stream", async () => {
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        c.error(new Error("reset"));
      },
    });
    await expect(async () => {
      for await (const _ of readSse(body)) void _;
    }).rejects.toThrow("reset");
  });
});

describe("usage, headers, settings", () => {
  it("sums usage field by field, nested objects too; strings are the later call's", () => {
    expect(
      addUsage(
        {
          input_tokens: 1,
          cache_creation: { ephemeral_5m_input_tokens: 2 },
          service_tier: "standard",
        },
        {
          input_tokens: 3,
          output_tokens: 4,
          cache_creation: { ephemeral_5m_input_tokens: 1, ephemeral_1h_input_tokens: 5 },
          service_tier: "priority",
        },
      ),
    ).toEqual({
      input_tokens: 4,
      output_tokens: 4,
      cache_creation: { ephemeral_5m_input_tokens: 3, ephemeral_1h_input_tokens: 5 },
      service_tier: "priority",
    });
    expect(addUsage(null, { a: 1 })).toEqual({ a: 1 });
    expect(addUsage({ a: 1 }, undefined)).toEqual({ a: 1 });
  });

  it("keeps credentials and SDK headers, drops ours, hop-by-hop ones and those listed in Connection", () => {
    const up = upstreamHeaders(
      new Headers({
        "x-api-key": "k",
        authorization: "Bearer o",
        "openai-project": "p",
        "x-offload-key": "ours",
        "x-offload-session": "s",
        connection: "keep-alive, x-hop",
        "x-hop": "1",
        te: "trailers",
        host: "edge",
        "content-length": "5",
        "accept-encoding": "gzip",
        cookie: "c=1",
        "cf-ray": "r",
        "x-forwarded-proto": "https",
        "idempotency-key": "i",
      }),
    );
    expect([...up.keys()].sort()).toEqual([
      "authorization",
      "idempotency-key",
      "openai-project",
      "x-api-key",
    ]);
    const down = clientHeaders(
      new Headers({
        "content-type": "application/json",
        "request-id": "r",
        "retry-after": "2",
        "x-ratelimit-limit-requests": "9",
        "set-cookie": "x",
        "content-encoding": "gzip",
        "content-length": "9",
        "transfer-encoding": "chunked",
      }),
    );
    expect([...down.keys()].sort()).toEqual([
      "content-type",
      "request-id",
      "retry-after",
      "x-ratelimit-limit-requests",
    ]);
  });

  it("reads the upstream vars as the SDKs mean them, and refuses bad ones", () => {
    const env = (vars: ProxyVars) => vars;
    expect(proxySettingsOf(env({}))).toEqual({
      baseUrls: { anthropic: "https://api.anthropic.com", openai: "https://api.openai.com/v1" },
      maxHops: 3,
    });
    const s = proxySettingsOf(
      env({
        ANTHROPIC_BASE_URL: "http://127.0.0.1:9/a/",
        OPENAI_BASE_URL: "https://gw/v1",
        OFFLOAD_PROXY_MAX_HOPS: "0",
      }),
    );
    expect(upstreamUrl(s.baseUrls.anthropic, anthropicDialect.path, "?beta=true")).toBe(
      "http://127.0.0.1:9/a/v1/messages?beta=true",
    );
    expect(upstreamUrl(s.baseUrls.openai, openaiChatDialect.path, "")).toBe(
      "https://gw/v1/chat/completions",
    );
    expect(s.maxHops).toBe(0);
    for (const bad of [
      { OFFLOAD_PROXY_MAX_HOPS: "-1" },
      { OFFLOAD_PROXY_MAX_HOPS: "1.5" },
      { OFFLOAD_PROXY_MAX_HOPS: "99" },
      { ANTHROPIC_BASE_URL: "nope" },
      { OPENAI_BASE_URL: "file:///etc" },
    ]) {
      expect(() => proxySettingsOf(env(bad))).toThrow(/misconfigured/);
    }
  });
});

describe("recalls", () => {
  it("a model's bad arguments are an is_error answer; a replay does not count as a recall", async () => {
    const store = new MemoryStore();
    const out = await compact({
      request: JSON.stringify(anthropicRequest()),
      session: "s",
      store,
      config: ON,
    });
    const mem = memIdIn(out.request);
    const got = await runRecalls(
      [
        { id: "a", arguments: "not json" },
        { id: "b", arguments: "[1]" },
        { id: "c", arguments: JSON.stringify({ mem_id: mem, query: "item-1499" }) },
        { id: "d", arguments: "" },
      ],
      { store, ref: { tenant: "default", session: "s" }, params, count: true },
    );
    expect(got.map((r) => r.is_error)).toEqual([true, true, false, true]);
    expect(got[2]!.content).toContain("1 match");
    await runRecalls([{ id: "c", arguments: JSON.stringify({ mem_id: mem }) }], {
      store,
      ref: { tenant: "default", session: "s" },
      params,
      count: false,
    });
    expect((await store.describeSession({ tenant: "default", session: "s" }))!.recalls).toBe(1);
  });
});

describe("anthropic dialect", () => {
  const memo: ProxyMemo = {
    kind: "recall",
    format: "anthropic",
    anchors: ["toolu_c"],
    calls: [{ id: "toolu_r", arguments: '{"mem_id":"trm_x"}' }],
    params,
  };
  const base = (user: unknown[]) =>
    JSON.stringify({
      model: "m",
      messages: [
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "t" },
            { type: "tool_use", id: "toolu_c", name: "status", input: {} },
          ],
        },
        { role: "user", content: user },
      ],
    });

  it("splices our call after the client's and our result after its last tool_result, before any text", () => {
    const { text, spliced } = edit(
      anthropicDialect,
      base([
        { type: "tool_result", tool_use_id: "toolu_c", content: "ok" },
        { type: "text", text: "more" },
      ]),
      [memo],
      ["toolu_r"],
    );
    expect(spliced).toBe(1);
    const m = JSON.parse(text).messages;
    expect(m[1].content.map((b: { type: string; id?: string }) => b.id ?? b.type)).toEqual([
      "text",
      "toolu_c",
      "toolu_r",
    ]);
    expect(m[1].content[2]).toEqual({
      type: "tool_use",
      id: "toolu_r",
      name: RECALL_NAME,
      input: { mem_id: "trm_x" },
    });
    expect(
      m[2].content.map((b: { type: string; tool_use_id?: string }) => b.tool_use_id ?? b.type),
    ).toEqual(["toolu_c", "toolu_r", "text"]);
  });

  it("leaves a request alone when pairing could not stay valid, or our call is already there, or its answer is missing", () => {
    const noResult = base([{ type: "text", text: "no results" }]);
    expect(edit(anthropicDialect, noResult, [memo], ["toolu_r"])).toEqual({
      text: noResult,
      spliced: 0,
    });
    const withOurs = base([
      { type: "tool_result", tool_use_id: "toolu_c", content: "ok" },
      { type: "tool_result", tool_use_id: "toolu_r", content: "x" },
    ]);
    expect(edit(anthropicDialect, withOurs, [memo], ["toolu_r"]).spliced).toBe(0);
    expect(
      edit(
        anthropicDialect,
        base([{ type: "tool_result", tool_use_id: "toolu_c", content: "ok" }]),
        [memo],
        [],
      ).spliced,
    ).toBe(0);
    expect(
      edit(
        anthropicDialect,
        base([{ type: "tool_result", tool_use_id: "toolu_c", content: "ok" }]),
        [{ ...memo, format: "openai-chat" }],
        ["toolu_r"],
      ).spliced,
    ).toBe(0);
  });

  it("continues a request with every hop, and merges with a notice when nothing is left to show", () => {
    const request = JSON.stringify({ model: "m", messages: [] });
    const a1 = anthropicMessage("m1", [{ call: RECALL_NAME, id: "r1", input: { mem_id: "x" } }], {
      input: 1,
      output: 1,
    });
    const next = JSON.parse(
      anthropicDialect.nextRequest(request, [
        { answer: a1, results: [{ id: "r1", content: "bad", is_error: true }] },
      ]),
    );
    expect(next.messages).toEqual([
      { role: "assistant", content: a1.content },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "r1", content: "bad", is_error: true }],
      },
    ]);
    const cut = anthropicDialect.merge([{ ...a1, stop_reason: "max_tokens" }], "done", 3);
    expect(cut.content).toEqual([{ type: "text", text: expect.stringContaining("cut short") }]);
    expect(cut.stop_reason).toBe("max_tokens");
  });
});

describe("chat dialect", () => {
  const memo: ProxyMemo = {
    kind: "recall",
    format: "openai-chat",
    anchors: ["call_c"],
    calls: [{ id: "call_r", arguments: '{"mem_id":"trm_x"}' }],
    params,
  };
  const msgs = (after: unknown[]) =>
    JSON.stringify({
      model: "gpt-4.1",
      messages: [
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_c", type: "function", function: { name: "status", arguments: "{}" } },
          ],
        },
        ...after,
      ],
    });

  it("puts our tool message at the end of the run of tool messages after the assistant message", () => {
    const { text } = edit(
      openaiChatDialect,
      msgs([
        { role: "tool", tool_call_id: "call_c", content: "ok" },
        { role: "user", content: "next" },
      ]),
      [memo],
      ["call_r"],
    );
    const m = JSON.parse(text).messages;
    expect(m[1].tool_calls.map((c: { id: string }) => c.id)).toEqual(["call_c", "call_r"]);
    expect(
      m.slice(2).map((x: { role: string; tool_call_id?: string }) => x.tool_call_id ?? x.role),
    ).toEqual(["call_c", "call_r", "user"]);
    expect(m[3].content).toBe("answer call_r");
    const unanswered = msgs([{ role: "user", content: "next" }]);
    expect(edit(openaiChatDialect, unanswered, [memo], ["call_r"]).text).toBe(unanswered);
  });

  it("merges hops: text joined, our calls out, finish_reason stop when no call is left", () => {
    const a1 = chatCompletion("c1", [{ text: "A" }, { call: RECALL_NAME, id: "r", input: {} }], {
      input: 2,
      output: 1,
    });
    const a2 = chatCompletion("c2", [{ text: "B" }], { input: 3, output: 1 });
    const merged = openaiChatDialect.merge([a1, a2], "done", 3) as {
      id: string;
      choices: { message: { content: string; tool_calls?: unknown }; finish_reason: string }[];
      usage: { prompt_tokens: number };
    };
    expect(merged.id).toBe("c1");
    expect(merged.choices[0]!.message.content).toBe("AB");
    expect(merged.choices[0]!.message.tool_calls).toBeUndefined();
    expect(merged.usage.prompt_tokens).toBe(5);
    const hop = JSON.parse(
      openaiChatDialect.nextRequest(
        JSON.stringify({ messages: [{ role: "user", content: "q" }] }),
        [{ answer: a1, results: [{ id: "r", content: "R", is_error: false }] }],
      ),
    );
    expect(hop.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: "A",
        tool_calls: [
          { id: "r", type: "function", function: { name: RECALL_NAME, arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "r", content: "R" },
    ]);
  });
});

describe("responses dialect", () => {
  const a1 = response(
    "resp_1",
    [{ reasoning: "r" }, { call: RECALL_NAME, id: "call_r", input: { mem_id: "x" } }],
    { input: 1, output: 1 },
  );
  const hop = [
    { answer: a1 as Answer, results: [{ id: "call_r", content: "R", is_error: false }] },
  ];

  it("continues by history mode: conversation, stored (chained), stateless (resent, reasoning without encrypted content left out)", () => {
    const conv = JSON.parse(
      openaiResponsesDialect.nextRequest(
        JSON.stringify({ model: "g", conversation: "conv_1", input: "q" }),
        hop,
      ),
    );
    expect(conv).toEqual({
      model: "g",
      conversation: "conv_1",
      input: [{ type: "function_call_output", call_id: "call_r", output: "R" }],
    });
    const stored = JSON.parse(
      openaiResponsesDialect.nextRequest(
        JSON.stringify({ model: "g", input: "q", previous_response_id: "resp_0" }),
        hop,
      ),
    );
    expect(stored.previous_response_id).toBe("resp_1");
    expect(stored.input.map((i: { type: string }) => i.type)).toEqual(["function_call_output"]);
    const stateless = JSON.parse(
      openaiResponsesDialect.nextRequest(
        JSON.stringify({ model: "g", store: false, input: "q" }),
        hop,
      ),
    );
    expect(stateless.input.map((i: { type?: string; role?: string }) => i.type ?? i.role)).toEqual([
      "user",
      "function_call",
      "function_call_output",
    ]);
  });

  it("an alias rewrites previous_response_id and adds the outputs the provider still expects (string input too)", () => {
    const memo: ProxyMemo = {
      kind: "alias",
      format: "openai-responses",
      from: "resp_1",
      to: "resp_3",
      calls: [{ id: "call_open", arguments: "{}" }],
      params,
    };
    const { text, spliced } = edit(
      openaiResponsesDialect,
      JSON.stringify({ model: "g", previous_response_id: "resp_1", input: "next" }),
      [memo],
      ["call_open"],
    );
    expect(spliced).toBe(1);
    expect(JSON.parse(text)).toEqual({
      model: "g",
      previous_response_id: "resp_3",
      input: [
        { type: "function_call_output", call_id: "call_open", output: "answer call_open" },
        { role: "user", content: "next" },
      ],
    });
    const other = JSON.stringify({ model: "g", previous_response_id: "resp_9", input: "next" });
    expect(edit(openaiResponsesDialect, other, [memo], ["call_open"]).text).toBe(other);
  });

  it("with stored history only the output is spliced, after the client's output", () => {
    const memo: ProxyMemo = {
      kind: "recall",
      format: "openai-responses",
      anchors: ["call_c"],
      calls: [{ id: "call_r", arguments: "{}" }],
      params,
    };
    const raw = JSON.stringify({
      model: "g",
      previous_response_id: "resp_1",
      input: [{ type: "function_call_output", call_id: "call_c", output: "ok" }],
    });
    const input = JSON.parse(edit(openaiResponsesDialect, raw, [memo], ["call_r"]).text).input;
    expect(input.map((i: { call_id: string }) => i.call_id)).toEqual(["call_c", "call_r"]);
  });

  it("merges without our calls and the reasoning right before them; remembers an alias for stored history", () => {
    const a2 = response("resp_2", [{ text: "done" }], { input: 2, output: 2 });
    const merged = openaiResponsesDialect.merge([a1, a2], "done", 3) as {
      id: string;
      output: { type: string }[];
      usage: { input_tokens: number };
    };
    expect(merged.id).toBe("resp_1");
    expect(merged.output.map((i) => i.type)).toEqual(["message"]);
    expect(merged.usage.input_tokens).toBe(3);
    const inspection = openaiResponsesDialect.inspect(a2);
    expect(
      openaiResponsesDialect.memos({
        answers: [a1, a2],
        inspection,
        ending: "done",
        params,
        request: '{"input":"q"}',
      }),
    ).toEqual([
      {
        kind: "alias",
        format: "openai-responses",
        from: "resp_1",
        to: "resp_2",
        calls: [],
        params,
      },
    ]);
    expect(
      openaiResponsesDialect.memos({
        answers: [a1, a2],
        inspection,
        ending: "done",
        params,
        request: '{"input":"q","store":false}',
      }),
    ).toEqual([]);
  });
});

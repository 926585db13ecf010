/**
 * The official clients against the proxy. The Worker runs locally (wrangler's unstable_startWorker: the real
 * build, workerd, miniflare's bindings) on 127.0.0.1 with ANTHROPIC_BASE_URL / OPENAI_BASE_URL pointing at a
 * fake provider on 127.0.0.1; @anthropic-ai/sdk and openai talk to the Worker with the two-line change of
 * docs/proxy.md (base URL, x-offload-key + x-offload-session). We assert on what the fake received
 * (stubs in place, the recall tool declared once at the end, the client's credentials through, ours not)
 * and on what the client got, as the SDK parsed it (no trace of our tool, summed usage, streams whole).
 */
import Anthropic, { APIError as AnthropicAPIError } from "@anthropic-ai/sdk";
import OpenAI, { type APIError as OpenAIAPIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
import { type LocalWorker, startProxyWorker } from "../support/worker.ts";
import { FakeProvider, type Received } from "./fake-provider.ts";

const KEY = "sk-offload-clients-test";
const ANTHROPIC_KEY = "sk-ant-fake-credential";
const OPENAI_KEY = "sk-openai-fake-credential";

const fake = new FakeProvider();
let worker: LocalWorker | undefined;
let base = "";

beforeAll(async () => {
  worker = await startProxyWorker({
    provider: await fake.start(),
    vars: { OFFLOAD_PROXY_MAX_HOPS: "2", OFFLOAD_DEFAULT_CONFIG: JSON.stringify(ON) },
    secrets: {
      OFFLOAD_API_KEYS: `clients:${KEY}`,
      OFFLOAD_SECRET: "clients-test-secret-0123456789",
    },
  });
  base = worker.base;
});

afterAll(async () => {
  await worker?.dispose();
  await fake.stop();
});

let n = 0;
function session(prefix: string): string {
  n++;
  return `${prefix}-${Date.now().toString(36)}-${n}`;
}

// The two-line change: the base URL, and our two headers.
function anthropic(id: string): Anthropic {
  return new Anthropic({
    apiKey: ANTHROPIC_KEY,
    baseURL: `${base}/anthropic`,
    defaultHeaders: { "x-offload-key": KEY, "x-offload-session": id },
    maxRetries: 0,
  });
}

function openai(id: string): OpenAI {
  return new OpenAI({
    apiKey: OPENAI_KEY,
    baseURL: `${base}/openai/v1`,
    defaultHeaders: { "x-offload-key": KEY, "x-offload-session": id },
    maxRetries: 0,
  });
}

/** What every forwarded request must show: our stub instead of the catalog, our tool once and last, no x-offload-*. */
function expectForwarded(r: Received, toolNames: string[]): string {
  expect(Object.keys(r.headers).filter((h) => h.startsWith("x-offload-"))).toEqual([]);
  expect(r.body).not.toContain("item-1499");
  const mem = memIdIn(r.body);
  expect(toolNames.filter((t) => t === RECALL_NAME)).toHaveLength(1);
  expect(toolNames[toolNames.length - 1]).toBe(RECALL_NAME);
  return mem;
}

function anthropicTools(r: Received): string[] {
  return (r.json.tools as { name: string }[]).map((t) => t.name);
}

function chatTools(r: Received): string[] {
  return (r.json.tools as { function: { name: string } }[]).map((t) => t.function.name);
}

function responsesTools(r: Received): string[] {
  return (r.json.tools as { name: string }[]).map((t) => t.name);
}

const recallArgs = (r: Received) => ({ mem_id: memIdIn(r.body), json_path: "$.items[1499]" });

describe("@anthropic-ai/sdk through the proxy", () => {
  it("a recall-only turn is answered by the proxy: one message, summed usage, credentials passed through", async () => {
    const from = fake.received.length;
    fake.reply(
      (r) => ({
        json: anthropicMessage(
          "msg_a1",
          [{ call: RECALL_NAME, id: "toolu_ra", input: recallArgs(r) }],
          { input: 900, output: 15, cache_read: 0, cache_write: 800 },
        ),
      }),
      {
        json: anthropicMessage("msg_a2", [{ text: "item-1499 costs 2248.5." }], {
          input: 1100,
          output: 12,
          cache_read: 800,
        }),
      },
    );
    const msg = await anthropic(session("a-hop")).messages.create(
      anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming,
      { headers: { "anthropic-beta": "fake-beta-2026" } },
    );
    expect(msg.content).toEqual([{ type: "text", text: "item-1499 costs 2248.5." }]);
    expect(msg.stop_reason).toBe("end_turn");
    expect(msg.usage).toMatchObject({
      input_tokens: 2000,
      output_tokens: 27,
      cache_read_input_tokens: 800,
      cache_creation_input_tokens: 800,
    });
    expect(JSON.stringify(msg)).not.toContain(RECALL_NAME);

    const [first, hop] = fake.since(from);
    expect(fake.since(from)).toHaveLength(2);
    expect(first!.path).toBe("/anthropic/v1/messages");
    // The SDK sends its key as Authorization: Bearer (x-api-key in older versions): either way, untouched.
    expect(first!.headers.authorization ?? first!.headers["x-api-key"]).toContain(ANTHROPIC_KEY);
    expect(first!.headers["anthropic-version"]).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(first!.headers["anthropic-beta"]).toBe("fake-beta-2026");
    expectForwarded(first!, anthropicTools(first!));
    const last = (hop!.json.messages as { content: { type: string; content?: string }[] }[]).at(
      -1,
    )!;
    expect(last.content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_ra" });
    expect(last.content[0]!.content).toContain("item-1499");
    expect(hop!.headers.authorization ?? hop!.headers["x-api-key"]).toContain(ANTHROPIC_KEY);
  });

  it("a streamed turn with a recall hop is one well-formed stream; without a hop it passes as sent", async () => {
    fake.reply(
      (r) => ({
        events: anthropicEvents(
          anthropicMessage(
            "msg_s1",
            [
              { thinking: "The stub has the catalog.", signature: "sig-1" },
              { text: "Let me check. " },
              { call: RECALL_NAME, id: "toolu_rs", input: recallArgs(r) },
            ],
            { input: 500, output: 40 },
          ),
        ),
      }),
      {
        events: anthropicEvents(
          anthropicMessage("msg_s2", [{ text: "It is item-1499." }], {
            input: 700,
            output: 9,
            cache_read: 450,
          }),
        ),
      },
    );
    const client = anthropic(session("a-stream"));
    const stream = client.messages.stream(
      anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming,
    );
    const indices: number[] = [];
    stream.on("streamEvent", (e) => {
      if (e.type === "content_block_start") indices.push(e.index);
    });
    const msg = await stream.finalMessage();
    expect(indices).toEqual([0, 1, 2]);
    expect(msg.id).toBe("msg_s1");
    expect(msg.content.map((b) => b.type)).toEqual(["thinking", "text", "text"]);
    expect(msg.content.map((b) => (b.type === "text" ? b.text : "")).join("")).toBe(
      "Let me check. It is item-1499.",
    );
    expect(msg.stop_reason).toBe("end_turn");
    expect(msg.usage).toMatchObject({
      input_tokens: 1200,
      output_tokens: 49,
      cache_read_input_tokens: 450,
    });
    // The hop sent the streamed answer back as it was, thinking block and signature included.
    const hopped = fake.received.at(-1)!.json.messages as {
      role: string;
      content: Record<string, unknown>[];
    }[];
    expect(hopped.at(-2)!.content).toEqual([
      { type: "thinking", thinking: "The stub has the catalog.", signature: "sig-1" },
      { type: "text", text: "Let me check. " },
      {
        type: "tool_use",
        id: "toolu_rs",
        name: RECALL_NAME,
        input: { mem_id: expect.stringMatching(/^trm_/), json_path: "$.items[1499]" },
      },
    ]);

    fake.reply({
      events: anthropicEvents(
        anthropicMessage("msg_plain", [{ text: "No recall needed." }], { input: 5, output: 4 }),
      ),
    });
    const plain = await client.messages
      .stream(anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .finalMessage();
    expect(plain.content.map((b) => (b.type === "text" ? b.text : b.type))).toEqual([
      "No recall needed.",
    ]);
  });

  it("a mixed turn: the client sees only its tool, and our call and answer are spliced into the next request", async () => {
    const id = session("a-mixed");
    const from = fake.received.length;
    fake.reply((r) => ({
      json: anthropicMessage(
        "msg_m1",
        [
          { text: "Two things." },
          { call: "status", id: "toolu_c1", input: {} },
          { call: RECALL_NAME, id: "toolu_r1", input: recallArgs(r) },
        ],
        { input: 10, output: 5 },
      ),
    }));
    const client = anthropic(id);
    const req = anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const msg = await client.messages.create(req);
    expect(msg.content.map((b) => (b.type === "tool_use" ? b.id : b.type))).toEqual([
      "text",
      "toolu_c1",
    ]);
    expect(msg.stop_reason).toBe("tool_use");

    fake.reply({
      json: anthropicMessage("msg_m2", [{ text: "All green, and item-1499 is the priciest." }], {
        input: 20,
        output: 9,
      }),
    });
    const next = await client.messages.create({
      ...req,
      messages: [
        ...req.messages,
        { role: "assistant", content: msg.content },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_c1", content: "green" }],
        },
      ],
    });
    expect(next.content[0]).toMatchObject({ type: "text" });
    const sent = fake.since(from)[1]!.json.messages as {
      role: string;
      content: { type: string; id?: string; tool_use_id?: string; content?: string }[];
    }[];
    const assistant = sent[sent.length - 2]!;
    const user = sent[sent.length - 1]!;
    expect(assistant.content.filter((b) => b.type === "tool_use").map((b) => b.id)).toEqual([
      "toolu_c1",
      "toolu_r1",
    ]);
    expect(user.content.map((b) => b.tool_use_id)).toEqual(["toolu_c1", "toolu_r1"]);
    expect(user.content[1]!.content).toContain("item-1499");
  });

  it("errors keep the provider's status, body and headers: 400, 429 + retry-after, 500, dropped → 502", async () => {
    const client = anthropic(session("a-errors"));
    const req = anthropicRequest() as unknown as Anthropic.MessageCreateParamsNonStreaming;
    fake.reply({
      status: 400,
      json: { type: "error", error: { type: "invalid_request_error", message: "messages: bad" } },
    });
    const bad = await client.messages.create(req).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect((bad as AnthropicAPIError).message).toContain("messages: bad");

    fake.reply({
      status: 429,
      headers: { "retry-after": "12", "anthropic-ratelimit-requests-remaining": "0" },
      json: { type: "error", error: { type: "rate_limit_error", message: "slow down" } },
    });
    const limited = (await client.messages
      .create(req)
      .catch((e: unknown) => e)) as AnthropicAPIError;
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect(limited.headers?.get("retry-after")).toBe("12");
    expect(limited.headers?.get("anthropic-ratelimit-requests-remaining")).toBe("0");

    fake.reply({
      status: 500,
      json: { type: "error", error: { type: "api_error", message: "Internal server error" } },
    });
    expect(await client.messages.create(req).catch((e: unknown) => e)).toBeInstanceOf(
      Anthropic.InternalServerError,
    );

    fake.reply({ drop: true });
    const dropped = (await client.messages
      .create(req)
      .catch((e: unknown) => e)) as AnthropicAPIError;
    expect(dropped).toBeInstanceOf(AnthropicAPIError);
    expect(dropped.status).toBe(502);
    expect(dropped.headers?.get("x-offload-error")).toBe("upstream_error");
    expect(dropped.message).toContain("api_error");

    // A stream the provider cuts half way: the SDK raises the error event the proxy sends.
    fake.reply({
      events: anthropicEvents(
        anthropicMessage("msg_cut", [{ text: "Half an answer" }], { input: 1, output: 1 }),
      ),
      dropAfter: 4,
    });
    const cut = await client.messages
      .stream(req)
      .finalMessage()
      .catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(AnthropicAPIError);
  });
});

describe("openai (Chat Completions) through the proxy", () => {
  it("a recall-only turn is answered by the proxy; a streamed turn with a hop is one completion", async () => {
    const from = fake.received.length;
    const client = openai(session("c-hop"));
    fake.reply(
      (r) => ({
        json: chatCompletion(
          "chatcmpl-1",
          [{ call: RECALL_NAME, id: "call_r1", input: recallArgs(r) }],
          { input: 800, output: 20, cache_read: 0 },
        ),
      }),
      {
        json: chatCompletion("chatcmpl-2", [{ text: "item-1499." }], {
          input: 900,
          output: 4,
          cache_read: 768,
        }),
      },
    );
    const done = await client.chat.completions.create(
      chatRequest() as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming,
      { headers: { "openai-organization": "org-fake", "openai-project": "proj-fake" } },
    );
    expect(done.choices[0]!.message.content).toBe("item-1499.");
    expect(done.choices[0]!.message.tool_calls).toBeUndefined();
    expect(done.choices[0]!.finish_reason).toBe("stop");
    expect(done.usage).toMatchObject({
      prompt_tokens: 1700,
      completion_tokens: 24,
      total_tokens: 1724,
      prompt_tokens_details: { cached_tokens: 768 },
    });
    const [first, hop] = fake.since(from);
    expect(first!.path).toBe("/openai/v1/chat/completions");
    expect(first!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(first!.headers["openai-organization"]).toBe("org-fake");
    expect(first!.headers["openai-project"]).toBe("proj-fake");
    expectForwarded(first!, chatTools(first!));
    const msgs = hop!.json.messages as { role: string; tool_call_id?: string; content?: string }[];
    expect(msgs.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_r1" });
    expect(msgs.at(-1)!.content).toContain("item-1499");

    fake.reply(
      (r) => ({
        events: chatEvents(
          chatCompletion(
            "chatcmpl-s1",
            [{ text: "Looking. " }, { call: RECALL_NAME, id: "call_rs", input: recallArgs(r) }],
            { input: 300, output: 10 },
          ),
        ),
      }),
      {
        events: chatEvents(
          chatCompletion("chatcmpl-s2", [{ text: "It is item-1499." }], { input: 400, output: 6 }),
        ),
      },
    );
    const stream = client.chat.completions.stream({
      ...(chatRequest() as unknown as OpenAI.ChatCompletionCreateParamsStreaming),
      stream_options: { include_usage: true },
    });
    const ids = new Set<string>();
    stream.on("chunk", (c) => ids.add(c.id));
    const final = await stream.finalChatCompletion();
    expect([...ids]).toEqual(["chatcmpl-s1"]);
    expect(final.choices[0]!.message.content).toBe("Looking. It is item-1499.");
    expect(final.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(final.choices[0]!.finish_reason).toBe("stop");
    expect(final.usage).toMatchObject({ prompt_tokens: 700, completion_tokens: 16 });
  });

  it("a mixed turn: the client runs its tool; our answer is spliced right after the assistant message", async () => {
    const from = fake.received.length;
    const client = openai(session("c-mixed"));
    const req = chatRequest() as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    fake.reply((r) => ({
      events: chatEvents(
        chatCompletion(
          "chatcmpl-m",
          [
            { call: RECALL_NAME, id: "call_r7", input: recallArgs(r) },
            { call: "status", id: "call_c7", input: {} },
          ],
          { input: 30, output: 8 },
        ),
      ),
    }));
    const got = await client.chat.completions
      .stream({
        ...(req as unknown as OpenAI.ChatCompletionCreateParamsStreaming),
        stream_options: { include_usage: true },
      })
      .finalChatCompletion();
    const message = got.choices[0]!.message;
    expect(message.tool_calls?.map((c) => c.id)).toEqual(["call_c7"]);
    expect(got.choices[0]!.finish_reason).toBe("tool_calls");

    fake.reply({
      json: chatCompletion("chatcmpl-m2", [{ text: "Green; item-1499." }], {
        input: 40,
        output: 5,
      }),
    });
    await client.chat.completions.create({
      ...req,
      messages: [
        ...req.messages,
        { role: "assistant", content: message.content, tool_calls: message.tool_calls! },
        { role: "tool", tool_call_id: "call_c7", content: "green" },
        { role: "user", content: "And?" },
      ],
    });
    const sent = fake.since(from)[1]!.json.messages as {
      role: string;
      tool_calls?: { id: string }[];
      tool_call_id?: string;
      content?: string;
    }[];
    const k = sent.findIndex((m) => m.tool_calls?.some((c) => c.id === "call_c7"));
    expect(sent[k]!.tool_calls!.map((c) => c.id)).toEqual(["call_c7", "call_r7"]);
    expect(sent.slice(k + 1, k + 4).map((m) => m.tool_call_id ?? m.role)).toEqual([
      "call_c7",
      "call_r7",
      "user",
    ]);
    expect(sent[k + 2]!.content).toContain("item-1499");
  });

  it("errors keep the provider's status and body: 429 + retry-after, 500, dropped → 502", async () => {
    const client = openai(session("c-errors"));
    const req = chatRequest() as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    fake.reply({
      status: 429,
      headers: { "retry-after": "5", "x-ratelimit-remaining-tokens": "0" },
      json: {
        error: {
          message: "Rate limit reached",
          type: "tokens",
          param: null,
          code: "rate_limit_exceeded",
        },
      },
    });
    const limited = (await client.chat.completions
      .create(req)
      .catch((e: unknown) => e)) as OpenAIAPIError;
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited.code).toBe("rate_limit_exceeded");
    expect(limited.headers?.get("retry-after")).toBe("5");
    fake.reply({
      status: 400,
      json: {
        error: {
          message: "Invalid 'messages'",
          type: "invalid_request_error",
          param: "messages",
          code: null,
        },
      },
    });
    expect(await client.chat.completions.create(req).catch((e: unknown) => e)).toBeInstanceOf(
      OpenAI.BadRequestError,
    );
    fake.reply({
      status: 500,
      json: {
        error: {
          message: "The server had an error",
          type: "server_error",
          param: null,
          code: null,
        },
      },
    });
    expect(await client.chat.completions.create(req).catch((e: unknown) => e)).toBeInstanceOf(
      OpenAI.InternalServerError,
    );
    fake.reply({ drop: true });
    const dropped = (await client.chat.completions
      .create(req)
      .catch((e: unknown) => e)) as OpenAIAPIError;
    expect(dropped.status).toBe(502);
    expect(dropped.code).toBe("upstream_error");
  });
});

describe("openai (Responses) through the proxy", () => {
  it("a recall hop, buffered and streamed, comes back as one response under the first id", async () => {
    const from = fake.received.length;
    const client = openai(session("r-hop"));
    const req = responsesRequest() as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming;
    fake.reply(
      (r) => ({
        json: response(
          "resp_1",
          [
            { reasoning: "Need the last item." },
            { call: RECALL_NAME, id: "call_rr", input: recallArgs(r) },
          ],
          { input: 600, output: 30 },
          { store: false },
        ),
      }),
      {
        json: response(
          "resp_2",
          [{ text: "item-1499 it is." }],
          { input: 700, output: 5, cache_read: 512 },
          { store: false },
        ),
      },
    );
    const got = await client.responses.create(req);
    expect(got.id).toBe("resp_1");
    expect(got.output.map((i) => i.type)).toEqual(["message"]);
    expect(got.output_text).toBe("item-1499 it is.");
    expect(got.usage).toMatchObject({
      input_tokens: 1300,
      output_tokens: 35,
      input_tokens_details: { cached_tokens: 512 },
    });
    const [first, hop] = fake.since(from);
    expect(first!.path).toBe("/openai/v1/responses");
    expectForwarded(first!, responsesTools(first!));
    // store: false, so the hop resends the input, the answer's items and our output.
    const input = hop!.json.input as { type?: string; call_id?: string; output?: string }[];
    expect(input.slice(-2).map((i) => i.type)).toEqual(["function_call", "function_call_output"]);
    expect(input.at(-1)!.output).toContain("item-1499");

    fake.reply(
      (r) => ({
        events: responseEvents(
          response(
            "resp_s1",
            [{ text: "Checking." }, { call: RECALL_NAME, id: "call_rs", input: recallArgs(r) }],
            { input: 100, output: 10 },
          ),
        ),
      }),
      {
        events: responseEvents(
          response("resp_s2", [{ text: "Found item-1499." }], { input: 150, output: 7 }),
        ),
      },
    );
    const stream = client.responses.stream(
      req as unknown as OpenAI.Responses.ResponseCreateParamsStreaming,
    );
    const seqs: number[] = [];
    stream.on("event", (e) => seqs.push(e.sequence_number));
    const final = await stream.finalResponse();
    expect(final.id).toBe("resp_s1");
    expect(final.output_text).toBe("Checking.Found item-1499.");
    expect(final.output.map((i) => i.type)).toEqual(["message", "message"]);
    expect(final.usage).toMatchObject({ input_tokens: 250, output_tokens: 17 });
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
  });

  it("a streamed mixed turn: the client gets its own call; the next request carries ours, spliced", async () => {
    const from = fake.received.length;
    const client = openai(session("r-mixed"));
    const req = responsesRequest() as unknown as OpenAI.Responses.ResponseCreateParamsStreaming;
    fake.reply((r) => ({
      events: responseEvents(
        response(
          "resp_x",
          [
            { reasoning: "both" },
            { call: RECALL_NAME, id: "call_rx", input: recallArgs(r) },
            { call: "status", id: "call_cx", input: {} },
          ],
          { input: 50, output: 9 },
          { store: false },
        ),
      ),
    }));
    const got = await client.responses.stream(req).finalResponse();
    expect(got.output.map((i) => (i.type === "function_call" ? i.call_id : i.type))).toEqual([
      "call_cx",
    ]);
    expect(JSON.stringify(got)).not.toContain(RECALL_NAME);

    fake.reply({
      json: response("resp_y", [{ text: "green" }], { input: 60, output: 1 }, { store: false }),
    });
    await client.responses.create({
      ...req,
      stream: false,
      input: [
        ...(req.input as OpenAI.Responses.ResponseInputItem[]),
        ...(got.output as OpenAI.Responses.ResponseInputItem[]),
        { type: "function_call_output", call_id: "call_cx", output: "green" },
      ],
    });
    const input = fake.since(from)[1]!.json.input as {
      type: string;
      call_id?: string;
      output?: string;
    }[];
    expect(input.slice(-4).map((i) => `${i.type}:${i.call_id}`)).toEqual([
      "function_call:call_cx",
      "function_call:call_rx",
      "function_call_output:call_cx",
      "function_call_output:call_rx",
    ]);
    expect(input.at(-1)!.output).toContain("item-1499");
  });

  it("with stored history, the client's next turn chains off the last hop's response", async () => {
    const from = fake.received.length;
    const client = openai(session("r-chain"));
    const req = {
      ...(responsesRequest() as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming),
      store: true,
    };
    fake.reply(
      (r) => ({
        json: response("resp_c1", [{ call: RECALL_NAME, id: "call_rc", input: recallArgs(r) }], {
          input: 60,
          output: 3,
        }),
      }),
      {
        json: response(
          "resp_c2",
          [{ text: "Done." }],
          { input: 70, output: 2 },
          { previous_response_id: "resp_c1" },
        ),
      },
    );
    const got = await client.responses.create(req);
    expect(got.id).toBe("resp_c1");
    const hop = fake.since(from)[1]!;
    expect(hop.json.previous_response_id).toBe("resp_c1");
    expect((hop.json.input as { type: string }[]).map((i) => i.type)).toEqual([
      "function_call_output",
    ]);

    fake.reply({ json: response("resp_c3", [{ text: "Next." }], { input: 5, output: 1 }) });
    await client.responses.create({
      model: "gpt-4.1",
      previous_response_id: got.id,
      input: "and then?",
    });
    expect(fake.since(from)[2]!.json.previous_response_id).toBe("resp_c2");
  });
});

/**
 * The billing fake over HTTP: usage fields as each API reports them (buffered and streamed), its bill, its
 * scripts, and the 400s of the cache rules. Texts are runs of "abc" so every count is arithmetic: n words are
 * n tokens, plus 3 per block and 3 more on a message's first block.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse } from "../../src/proxy/sse.ts";
import { billUsd } from "../support/billing/bill.ts";
import { BillingFake, callTool, say } from "../support/billing-fake.ts";

const words = (n: number) => Array.from({ length: n }, () => "abc").join(" ");
const EPH = { type: "ephemeral" };

const fake = new BillingFake();
let base = "";

beforeAll(async () => {
  base = await fake.start();
});
afterAll(() => fake.stop());

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

async function events(res: Response): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for await (const ev of readSse(res.body!))
    if (ev.data !== "[DONE]") out.push(JSON.parse(ev.data) as Record<string, unknown>);
  return out;
}

// system 1,000 words → 1,003 tokens; the first user message (100 words) → 106; "ok" answered → 7.
const first = {
  model: "claude-sonnet-4-6",
  max_tokens: 100,
  system: words(1000),
  messages: [{ role: "user", content: [{ type: "text", text: words(100), cache_control: EPH }] }],
};
const second = (extra: Record<string, unknown> = {}) => ({
  ...first,
  messages: [
    { role: "user", content: [{ type: "text", text: words(100) }] },
    { role: "assistant", content: [{ type: "text", text: "ok" }] },
    { role: "user", content: [{ type: "text", text: words(50), cache_control: EPH }] },
  ],
  ...extra,
});

describe("Anthropic Messages", () => {
  it("reports the cache write, then the read, and bills them at the price table", async () => {
    fake.flush();
    const from = fake.calls.length;
    const a = (await (await post("/anthropic/v1/messages", first)).json()) as Record<string, any>;
    expect(a.usage).toEqual({
      input_tokens: 0,
      cache_creation_input_tokens: 1109,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 1109, ephemeral_1h_input_tokens: 0 },
      output_tokens: 4, // "ok" + 3
      service_tier: "standard",
    });
    expect(a.content).toEqual([{ type: "text", text: "ok" }]);
    fake.clock.advance(30);
    const b = (await (await post("/anthropic/v1/messages", second())).json()) as Record<
      string,
      any
    >;
    // 1,003 + 106 read; "ok" (7) and the new message (56) written.
    expect(b.usage).toMatchObject({
      input_tokens: 0,
      cache_read_input_tokens: 1109,
      cache_creation_input_tokens: 63,
    });
    const billed = fake.calls.slice(from);
    expect(billed.map((c) => c.at)).toEqual([0, 30_000].map((t) => t + billed[0]!.at));
    // Sonnet 4.6: $3.75/MTok writes, $0.30 reads, $15 output.
    expect(billed[0]!.usd).toBeCloseTo((1109 * 3.75 + 4 * 15) / 1e6, 12);
    expect(billed[1]!.usd).toBeCloseTo((63 * 3.75 + 1109 * 0.3 + 4 * 15) / 1e6, 12);
    expect(fake.total(billed).usd).toBeCloseTo(billed[0]!.usd! + billed[1]!.usd!, 12);
  });

  it("streams message_start with the input side and a cumulative message_delta", async () => {
    fake.flush();
    await post("/anthropic/v1/messages", first);
    fake.reply(say("abc abc"));
    const res = await post("/anthropic/v1/messages", second({ stream: true }));
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const evs = await events(res);
    const start = evs.find((e) => e.type === "message_start")!.message as Record<string, any>;
    expect(start.usage).toMatchObject({
      input_tokens: 0,
      cache_read_input_tokens: 1109,
      output_tokens: 1,
    });
    expect(start.usage.cache_creation).toEqual({
      ephemeral_5m_input_tokens: 63,
      ephemeral_1h_input_tokens: 0,
    });
    const delta = evs.find((e) => e.type === "message_delta")!;
    expect(delta.usage).toEqual({
      input_tokens: 0,
      cache_creation_input_tokens: 63,
      cache_read_input_tokens: 1109,
      output_tokens: 5, // 2 words + 3
    });
    expect(fake.calls.at(-1)!.stream).toBe(true);
  });

  it("answers from its script: a tool call, then what the request asks", async () => {
    fake.reply(callTool("recall_tool_result", { mem_id: "trm_x", query: "abc" }, "toolu_r1"));
    const a = (await (await post("/anthropic/v1/messages", first)).json()) as Record<string, any>;
    expect(a.stop_reason).toBe("tool_use");
    expect(a.content).toEqual([
      {
        type: "tool_use",
        id: "toolu_r1",
        name: "recall_tool_result",
        input: { mem_id: "trm_x", query: "abc" },
      },
    ]);
    fake.script = (call) => say(`${(call.json.messages as unknown[]).length} messages`);
    try {
      const b = (await (await post("/anthropic/v1/messages", second())).json()) as Record<
        string,
        any
      >;
      expect(b.content[0].text).toBe("3 messages");
    } finally {
      fake.script = () => say("ok");
    }
  });

  it("refuses what the API refuses, in its error shape, and bills nothing", async () => {
    const from = fake.calls.length;
    const five = Array.from({ length: 5 }, (_, i) => ({
      type: "text",
      text: `t${i}`,
      cache_control: EPH,
    }));
    const res = await post("/anthropic/v1/messages", {
      ...first,
      messages: [{ role: "user", content: five }],
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      type: "error",
      error: {
        type: "invalid_request_error",
        message: "A maximum of 4 blocks with cache_control may be provided. Found 5.",
      },
    });
    fake.reply({ error: { status: 429, message: "slow down" } });
    expect((await post("/anthropic/v1/messages", first)).status).toBe(429);
    expect((await post("/anthropic/v1/messages", "nope")).status).toBe(400);
    expect((await post("/anthropic/v1/other", first)).status).toBe(404);
    expect(fake.calls.length).toBe(from);
  });

  it("takes a tool defined in a system message only as the docs place it, with its beta, and reads the prefix before it", async () => {
    const from = fake.calls.length;
    const recall = {
      type: "tool_addition",
      tool: {
        type: "tool_definition",
        definition: { name: "lookup", description: words(20), input_schema: { type: "object" } },
      },
    };
    const opus = (messages: unknown[]) => ({ ...first, model: "claude-opus-5-5", messages });
    const u = (n: number, cc = false) => ({
      role: "user",
      content: [{ type: "text", text: words(n), ...(cc ? { cache_control: EPH } : {}) }],
    });
    const a = { role: "assistant", content: [{ type: "text", text: "ok" }] };
    const sys = { role: "system", content: [recall] };
    const BETA = { "anthropic-beta": "other-beta, inline-tools-2026-09-15" };
    const refused = async (body: unknown, headers: Record<string, string>, message: RegExp) => {
      const res = await post("/anthropic/v1/messages", body, headers);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(message);
    };
    await refused(opus([u(100), sys]), {}, /needs the inline-tools-2026-09-15 beta/);
    await refused({ ...opus([u(100), sys]), model: "claude-sonnet-4-6" }, BETA, /does not support/);
    await refused(opus([sys, u(100)]), BETA, /cannot be the first/);
    await refused(opus([u(100), a, sys]), BETA, /must follow a user message/);
    await refused(opus([u(100), sys, u(50)]), BETA, /followed by an assistant/);
    await refused(opus([u(100), sys, { ...sys, content: "x" }]), BETA, /followed by an assistant/);
    await refused(
      opus([u(100), { role: "system", content: [{ type: "image", source: {} }] }]),
      BETA,
      /text blocks and tool changes only/,
    );
    expect(fake.calls.length).toBe(from);
    // The system message after the first turn leaves that turn's cached prefix as it was: the second call
    // reads system + first turn, writes the rest, and the defined tool is counted as a `tools` entry would be.
    fake.flush();
    await post("/anthropic/v1/messages", opus([u(100, true)]), BETA);
    const res = await post("/anthropic/v1/messages", opus([u(100), sys, a, u(50, true)]), BETA);
    expect(res.status).toBe(200);
    const usage = ((await res.json()) as { usage: Record<string, number> }).usage;
    expect(usage.cache_read_input_tokens).toBe(1109);
    const plain = await post("/anthropic/v1/messages", opus([u(100), a, u(50, true)]), BETA);
    const without = ((await plain.json()) as { usage: Record<string, number> }).usage;
    // The definition's tokens: "lookup", 20 words and the schema's JSON, framed as a block.
    expect(
      usage.cache_creation_input_tokens! - without.cache_creation_input_tokens!,
    ).toBeGreaterThan(20);
  });

  it("keeps calls apart by conversation, and shadow ledgers bill the same calls their own way", async () => {
    const shadowed = new BillingFake({
      shadows: { "no expiry": { rules: { lookback: 20, expiry: false, entries: "breakpoints" } } },
    });
    const url = await shadowed.start();
    try {
      const send = (body: unknown, conversation: string) =>
        fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: { "x-fake-conversation": conversation },
          body: JSON.stringify(body),
        });
      await send(first, "c1");
      shadowed.clock.advance(3600);
      await send(second(), "c2");
      const [a, b] = [shadowed.of("c1"), shadowed.of("c2")];
      expect([a.length, b.length]).toEqual([1, 1]);
      expect(b[0]!.tokens.cache_read).toBe(0); // expired after an hour…
      expect(b[0]!.shadows["no expiry"]!.tokens.cache_read).toBe(1109); // …but not without expiry
    } finally {
      await shadowed.stop();
    }
  });
});

describe("OpenAI", () => {
  const chat = (tail: string, extra: Record<string, unknown> = {}) => ({
    model: "gpt-4.1",
    messages: [
      { role: "system", content: words(1300) },
      { role: "user", content: tail },
    ],
    ...extra,
  });

  it("Chat Completions: cached_tokens in steps of 128, in the body and in a stream's last chunk", async () => {
    fake.flush();
    const a = (await (await post("/openai/v1/chat/completions", chat("one"))).json()) as Record<
      string,
      any
    >;
    // "system\n" (2 tokens) + 1,300 words + 3 framing = 1,305; "user\none" (3) + 3 = 6.
    expect(a.usage).toMatchObject({
      prompt_tokens: 1311,
      prompt_tokens_details: { cached_tokens: 0 },
    });
    const b = (await (await post("/openai/v1/chat/completions", chat("two"))).json()) as Record<
      string,
      any
    >;
    expect(b.usage.prompt_tokens_details.cached_tokens).toBe(1280); // 1,305 shared → 10 × 128
    const silent = await events(
      await post("/openai/v1/chat/completions", chat("two", { stream: true })),
    );
    expect(silent.every((e) => e.usage === undefined || e.usage === null)).toBe(true);
    const res = await post(
      "/openai/v1/chat/completions",
      chat("two", { stream: true, stream_options: { include_usage: true } }),
    );
    const last = (await events(res)).at(-1)!;
    expect(last.choices).toEqual([]);
    expect((last.usage as Record<string, any>).prompt_tokens_details.cached_tokens).toBe(1280);
    // gpt-4.1: $2 input, $0.50 cached, $8 output.
    const billed = fake.calls.at(-1)!;
    expect(billed.usd).toBeCloseTo((31 * 2 + 1280 * 0.5 + billed.tokens.output * 8) / 1e6, 12);
  });

  it("Responses: input_tokens_details.cached_tokens, buffered and in response.completed", async () => {
    fake.flush();
    const req = (tail: string, stream = false) => ({
      model: "gpt-4.1",
      instructions: words(1300),
      input: tail,
      stream,
    });
    await post("/openai/v1/responses", req("one"));
    const b = (await (await post("/openai/v1/responses", req("two"))).json()) as Record<
      string,
      any
    >;
    expect(b.usage.input_tokens_details.cached_tokens).toBe(1280);
    const evs = await events(await post("/openai/v1/responses", req("two", true)));
    const done = evs.find((e) => e.type === "response.completed")!.response as Record<string, any>;
    expect(done.usage.input_tokens_details.cached_tokens).toBe(1280);
  });
});

describe("the fake's prices", () => {
  it("bills a whole call past 272K prompt tokens at OpenAI's long-context rates (2x input, 1.5x output)", () => {
    const t = (input: number, read: number) => ({
      input,
      cache_read: read,
      cache_write_5m: 0,
      cache_write_1h: 0,
      output: 1_000,
    });
    // gpt-5.4: $2.50 input, $0.25 cached, $15 output; at 272,000 prompt tokens still the short rates.
    expect(billUsd("gpt-5.4", t(72_000, 200_000))).toBeCloseTo(
      (72_000 * 2.5 + 200_000 * 0.25 + 1_000 * 15) / 1e6,
      12,
    );
    expect(billUsd("gpt-5.4", t(72_001, 200_000))).toBeCloseTo(
      (72_001 * 5 + 200_000 * 0.5 + 1_000 * 22.5) / 1e6,
      12,
    );
    // gpt-6.2-sol's writes are doubled with its input; Anthropic's models have no such tier here.
    expect(billUsd("gpt-6.2-sol", { ...t(0, 0), cache_write_5m: 300_000, output: 0 })).toBeCloseTo(
      (300_000 * 2.5 * 2) / 1e6,
      12,
    );
    expect(billUsd("claude-opus-5-5", t(500_000, 0))).toBeCloseTo(
      (500_000 * 4 + 1_000 * 20) / 1e6,
      12,
    );
    expect(billUsd("claude-sonnet-5-5", t(500_000, 0))).toBeCloseTo(
      (500_000 * 2 + 1_000 * 10) / 1e6,
      12,
    );
  });
});

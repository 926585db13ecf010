/**
 * Billed figures end to end: the real Worker (workerd) proxies Anthropic and OpenAI Chat requests to the
 * billing fake, buffered and streamed, with a recall hop; the session report must then show what the fake
 * billed (its usage × the price table, the hop's calls apart, the measured cache-read share) next to the
 * estimate. The compact route's clients post the usage back instead: validated, idempotent per turn.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RECALL_TOOL_NAME } from "../../src/core/recall-tool.ts";
import { BillingFake, callTool, type BillingFake as Fake, say } from "../support/billing-fake.ts";
import { anthropicKit, chatKit, type Kit } from "../support/formats.ts";
import { jsonBody } from "../support/requests.ts";
import { type LocalWorker, startProxyWorker } from "../support/worker.ts";

const KEY = "billing-key-0123456789";
const CONFIG = {
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
  tool_result_recall_tool_declaration: "eager",
  tool_result_compaction_keep_last_n: 1,
};
const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const PATHS: Record<string, string> = {
  anthropic: "/anthropic/v1/messages",
  "openai-chat": "/openai/v1/chat/completions",
};

let fake: Fake;
let worker: LocalWorker;

beforeAll(async () => {
  fake = new BillingFake();
  await fake.start();
  worker = await startProxyWorker({
    provider: fake.url,
    secrets: {
      OFFLOAD_API_KEYS: `acme:${KEY}`,
      OFFLOAD_SECRET: "billing-test-secret-0123456789",
      OFFLOAD_COUNT_ANTHROPIC_KEY: "sk-ant-deployment-counting",
    },
  });
}, 120_000);

afterAll(async () => {
  await worker?.dispose();
  await fake?.stop();
});

const memIdIn = (json: unknown) => /trm_[0-9a-f]{24}/.exec(JSON.stringify(json))?.[0] ?? "none";

async function call(
  kit: Kit,
  session: string,
  request: Record<string, unknown>,
  stream: boolean,
): Promise<{ summary: Record<string, unknown>; body: string }> {
  const body =
    stream && kit.format === "openai-chat"
      ? { ...request, stream: true, stream_options: { include_usage: true } }
      : stream
        ? { ...request, stream: true }
        : request;
  const res = await fetch(`${worker.base}${PATHS[kit.format]}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
      "x-api-key": "sk-ant-fake",
      authorization: "Bearer sk-fake",
      "x-offload-key": KEY,
      "x-offload-session": session,
      "x-offload-config": JSON.stringify(CONFIG),
      "x-fake-conversation": session,
    },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return {
    summary: JSON.parse(res.headers.get("x-offload-summary") ?? "{}"),
    body: await res.text(),
  };
}

interface Billed {
  usd: number;
  hops_usd: number;
  calls: number;
  prompt_tokens: number;
  cache_read_share: number | null;
  counterfactual_usd: number;
  saved_usd: number;
}

async function report(session: string) {
  const res = await fetch(`${worker.base}/v1/sessions/${session}/report`, {
    headers: { authorization: `Bearer ${KEY}` },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as {
    totals: {
      saved_usd: number;
      billed: Billed & {
        turns_measured: number;
        removed: { tokens: number; results: number; measured: number };
      };
    };
    turns: { saved_usd: number; billed: Billed | null }[];
  };
}

describe("billed figures through the proxy, next to the estimate", () => {
  for (const kit of [anthropicKit, chatKit])
    for (const stream of [false, true])
      it(`${kit.format}, ${stream ? "streamed" : "buffered"}, with a recall hop`, async () => {
        const session = `bill-${kit.format}-${stream ? "s" : "b"}`;
        const model = kit.format === "anthropic" ? "claude-sonnet-4-6" : "gpt-4.1";
        const first = kit.conversation(
          [
            { id: "call_big", result: jsonBody(70_000) },
            { id: "call_small", result: "ok" },
          ],
          { model },
        );
        // Turn 1: the large settled result is offloaded; the model reads it back in a hop.
        fake.reply(
          (c) => callTool(RECALL_TOOL_NAME, { mem_id: memIdIn(c.json), query: "SKU-000042" }),
          say("SKU-000042 costs 29.4."),
        );
        const from = fake.of(session).length;
        const one = await call(kit, session, first, stream);
        expect(one.body).toContain("29.4");
        expect(one.body).not.toContain(RECALL_TOOL_NAME);
        const turn1 = fake.of(session).slice(from);
        expect(turn1).toHaveLength(2); // the client's call and the recall hop
        expect(turn1[0]!.stream).toBe(stream);

        // Turn 2: the same history and one more call; no hop.
        fake.clock.advance(30);
        fake.reply(say("done"));
        await call(kit, session, kit.addTurn(first, { id: "call_3", result: "three" }), stream);
        const calls = fake.of(session);
        expect(calls).toHaveLength(3);

        const r = await report(session);
        expect(r.turns).toHaveLength(2);
        const [t1, t2] = r.turns as [(typeof r.turns)[0], (typeof r.turns)[0]];
        // Billed: the fake's own bill, call for call, with the hop's calls apart.
        expect(t1.billed!.calls).toBe(2);
        expect(t1.billed!.usd).toBeCloseTo(turn1[0]!.usd! + turn1[1]!.usd!, 8);
        expect(t1.billed!.hops_usd).toBeCloseTo(turn1[1]!.usd!, 8);
        expect(t2.billed!.calls).toBe(1);
        expect(t2.billed!.usd).toBeCloseTo(calls[2]!.usd!, 8);
        const billed = r.totals.billed;
        expect(billed.turns_measured).toBe(2);
        expect(billed.usd).toBeCloseTo(fake.total(calls).usd, 8);
        expect(billed.hops_usd).toBeCloseTo(turn1[1]!.usd!, 8);
        const prompt = calls.reduce(
          (n, c) => n + c.tokens.input + c.tokens.cache_read + c.tokens.cache_write_5m,
          0,
        );
        expect(billed.prompt_tokens).toBe(prompt);
        expect(billed.cache_read_share!).toBeCloseTo(
          calls.reduce((n, c) => n + c.tokens.cache_read, 0) / prompt,
          9,
        );
        // Beside the estimate: the estimated saving is net of the hop, the billed one is a bill's difference.
        expect(r.totals.saved_usd).toBeCloseTo(t1.saved_usd + t2.saved_usd, 8);
        expect(billed.counterfactual_usd).toBeGreaterThan(billed.usd);
        expect(billed.saved_usd).toBeCloseTo(billed.counterfactual_usd - billed.usd, 8);
        // A buffered answer's summary carries the call's bill; a stream's carries none (sent first).
        if (!stream) {
          const proxy = one.summary.proxy as Record<string, number>;
          expect(proxy.usd).toBeCloseTo(turn1[0]!.usd! + turn1[1]!.usd!, 8);
          expect(proxy.hop_usd).toBeCloseTo(turn1[1]!.usd!, 8);
        }
      }, 60_000);
});

describe("POST /v1/sessions/{id}/usage (the compact route's clients)", () => {
  const session = "compact-usage";
  const post = (body: unknown, id = session) =>
    fetch(`${worker.base}/v1/sessions/${id}/usage`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("keeps the usage on the compacted turn, idempotently, and validates it", async () => {
    const res = await fetch(`${worker.base}/v1/sessions/${session}/compact?format=anthropic`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${KEY}`,
        "content-type": "application/json",
        "x-offload-config": JSON.stringify(CONFIG),
      },
      body: JSON.stringify(
        anthropicKit.conversation(
          [
            { id: "a", result: jsonBody(70_000) },
            { id: "b", result: "ok" },
          ],
          { model: "claude-sonnet-4-6" },
        ),
      ),
    });
    expect(res.status).toBe(200);
    const summary = JSON.parse(res.headers.get("x-offload-summary")!);
    expect(summary.offloaded).toBe(1);
    expect(summary.seq).toBeGreaterThan(0);
    const usage = {
      input_tokens: 1000,
      cache_creation_input_tokens: 2000,
      cache_read_input_tokens: 4000,
      cache_creation: { ephemeral_5m_input_tokens: 1500, ephemeral_1h_input_tokens: 500 },
      output_tokens: 100,
      service_tier: "standard",
    };
    const ok = await post({ seq: summary.seq, usage });
    expect(ok.status).toBe(200);
    // Sonnet 4.6: 1,000 × $3 + 1,500 × $3.75 + 500 × $6 + 4,000 × $0.30 + 100 × $15, per MTok.
    expect(await ok.json()).toEqual({
      tenant: "acme",
      session,
      seq: summary.seq,
      status: "recorded",
      billed_usd: expect.closeTo(0.014325, 9),
    });
    // The same report again is a no-op; the turn number names the same line.
    const again = await post({ turn: summary.turn, usage });
    expect(await again.json()).toMatchObject({ status: "unchanged", seq: summary.seq });
    // A steady turn's summary says `seq: null`: posted as it came, beside the turn, it is as absent.
    const passed = await post({ seq: null, turn: summary.turn, usage });
    expect(await passed.json()).toMatchObject({ status: "unchanged", seq: summary.seq });
    // Different numbers for a turn that has usage: the first report stands.
    const other = await post({ seq: summary.seq, usage: { ...usage, output_tokens: 101 } });
    expect(other.status).toBe(409);
    expect((await other.json()).error).toMatchObject({ type: "conflict", path: "usage" });

    const r = await report(session);
    expect(r.turns[0]!.billed).toMatchObject({ usd: expect.closeTo(0.014325, 9), calls: 1 });
    expect(r.totals.billed.cache_read_share!).toBeCloseTo(4000 / 7000, 9);
  }, 60_000);

  it("refuses what it cannot keep, in the one error shape", async () => {
    const bad = async (body: unknown, status: number, type: string, path: string, id?: string) => {
      const res = await post(body, id);
      expect(res.status).toBe(status);
      expect((await res.json()).error).toMatchObject({ type, path });
    };
    await bad({ usage: { input_tokens: 1 } }, 400, "invalid_request", "turn");
    await bad({ seq: null, usage: { input_tokens: 1 } }, 400, "invalid_request", "turn");
    await bad({ seq: 1, turn: 1, usage: { input_tokens: 1 } }, 400, "invalid_request", "turn");
    await bad(
      { seq: 1, usage: { input_tokens: -1 } },
      400,
      "invalid_request",
      "usage.input_tokens",
    );
    await bad(
      { seq: 1, usage: { input_tokens: "1" } },
      400,
      "invalid_request",
      "usage.input_tokens",
    );
    await bad({ seq: 1, usage: {} }, 400, "invalid_argument", "usage");
    await bad({ seq: 1, usage: { input_tokens: 1 }, extra: 1 }, 400, "invalid_request", "extra");
    await bad({ seq: 1, usage: { input_tokens: 1 } }, 404, "not_found", "session", "never-seen");
    await bad({ seq: 99_999, usage: { input_tokens: 1 } }, 404, "not_found", "seq");
    await bad({ turn: 77, usage: { input_tokens: 1 } }, 404, "not_found", "turn");
  }, 60_000);

  it("counts a result stubbed on arrival with the deployment's key, and the report says it is measured", async () => {
    const id = "compact-counted";
    const before = fake.counts.length;
    const big = jsonBody(90_000);
    const res = await fetch(`${worker.base}/v1/sessions/${id}/compact?format=anthropic`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${KEY}`,
        "content-type": "application/json",
        "x-offload-config": JSON.stringify({ ...ON, tool_result_offload_shadow: false }),
      },
      // Live at the defaults: the large result, just arrived, is stubbed on this call (first delivery).
      body: JSON.stringify(
        anthropicKit.conversation(
          [
            { id: "a", result: "ok" },
            { id: "big", result: big },
          ],
          { model: "claude-sonnet-4-6" },
        ),
      ),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain(big.slice(0, 200));
    const counts = fake.counts.slice(before);
    // The framing, then the result: with the deployment's key, never a client's.
    expect(counts).toHaveLength(2);
    expect(counts.every((c) => c.credential === "sk-ant-deployment-counting")).toBe(true);
    const summary = JSON.parse(res.headers.get("x-offload-summary")!);
    const usage = { input_tokens: 3000, output_tokens: 10 };
    const posted = await post(
      { ...(summary.seq === null ? { turn: summary.turn } : { seq: summary.seq }), usage },
      id,
    );
    expect(posted.status).toBe(200);
    const r = await report(id);
    expect(r.totals.billed.removed.results).toBeGreaterThan(0);
    expect(r.totals.billed.removed.measured).toBe(r.totals.billed.removed.results);
  }, 60_000);
});

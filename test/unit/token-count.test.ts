/**
 * The provider's counts of results stubbed on arrival (src/proxy/token-count.ts): where the counting
 * endpoint is, what is counted, that a failure of any kind leaves the call and the rest standing, and, end to
 * end through the proxy loop to the billing fake (its own tokenizer, its own counting endpoints), that the
 * billed saving of a session whose large result never went out matches the bill.
 */
import { afterEach, describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config.ts";
import { adapterFor } from "../../src/core/compact.ts";
import { prepareRequest } from "../../src/core/prepare.ts";
import { anthropicDialect } from "../../src/proxy/anthropic.ts";
import type { Dialect } from "../../src/proxy/dialect.ts";
import { openaiChatDialect } from "../../src/proxy/openai-chat.ts";
import { openaiResponsesDialect } from "../../src/proxy/openai-responses.ts";
import {
  COUNT_LIMIT,
  countResults,
  countUnsent,
  countUrlOf,
  resetCountSupport,
  unsentTexts,
} from "../../src/proxy/token-count.ts";
import { type ProxyTurnInput, proxyTurn } from "../../src/proxy/turn.ts";
import { billedSession } from "../../src/store/billing-report.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { countTokens } from "../support/billing/tokenizer.ts";
import { BillingFake, say } from "../support/billing-fake.ts";
import { KITS, type Kit, type Req, type Step } from "../support/formats.ts";

afterEach(() => resetCountSupport());

describe("countUrlOf", () => {
  it("puts the counting endpoint where the call's path was, the query kept", () => {
    expect(
      countUrlOf("https://api.anthropic.com/v1/messages?beta=true", "/v1/messages", "anthropic", 0),
    ).toBe("https://api.anthropic.com/v1/messages/count_tokens?beta=true");
    expect(
      countUrlOf("https://api.openai.com/v1/chat/completions", "/chat/completions", "openai", 0),
    ).toBe("https://api.openai.com/v1/responses/input_tokens");
    expect(countUrlOf("https://gw.example/openai/v1/responses", "/responses", "openai", 0)).toBe(
      "https://gw.example/openai/v1/responses/input_tokens",
    );
  });

  it("answers null for a URL of another shape, or one that is no URL", () => {
    expect(countUrlOf("https://gw.example/run", "/v1/messages", "anthropic", 0)).toBeNull();
    expect(countUrlOf("not a url", "/v1/messages", "anthropic", 0)).toBeNull();
  });
});

const TEXT = JSON.stringify(
  Array.from({ length: 400 }, (_, i) => ({ id: i, sku: `SKU-${i}`, price: i * 1.25 })),
  null,
  2,
);

describe("countResults against the fake's counting endpoints", () => {
  for (const [provider, path] of [
    ["anthropic", "/v1/messages/count_tokens"],
    ["openai", "/v1/responses/input_tokens"],
  ] as const)
    it(`${provider}: each text's tokens, as the fake's tokenizer counts them`, async () => {
      const fake = new BillingFake();
      const out = await countResults({
        provider,
        fetcher: (async (input: RequestInfo | URL, init?: RequestInit) =>
          fake.fetch(new Request(input, init))) as typeof fetch,
        url: `https://fake.test${path}`,
        headers: new Headers({ "x-api-key": "sk-test", "content-length": "9" }),
        model: provider === "anthropic" ? "claude-sonnet-4-6" : "gpt-5.4",
        texts: new Map([
          ["a", TEXT],
          ["b", "short text"],
        ]),
      });
      expect(out.a).toBe(countTokens(TEXT));
      expect(out.b).toBe(countTokens("short text"));
      // The framing, then one count per text; nothing billed.
      expect(fake.counts).toHaveLength(3);
      expect(fake.calls).toHaveLength(0);
    });

  it("the fake's endpoints refuse what the APIs refuse, and count nothing then", async () => {
    const fake = new BillingFake();
    const post = (path: string, body: string) =>
      fake.fetch(new Request(`https://fake.test${path}`, { method: "POST", body }));
    expect((await post("/v1/messages/count_tokens", "not json")).status).toBe(400);
    expect((await post("/v1/messages/count_tokens", '{"messages":[]}')).status).toBe(400);
    expect((await post("/v1/responses/input_tokens", '{"input":"x"}')).status).toBe(400);
    fake.counting = false;
    expect(
      (await post("/v1/responses/input_tokens", '{"model":"gpt-5.4","input":"x"}')).status,
    ).toBe(404);
    expect(fake.counts).toHaveLength(0);
  });

  it("an upstream without the endpoint (404) is asked once, then not for an hour", async () => {
    let asked = 0;
    const fetcher = (async () => {
      asked++;
      return new Response("{}", { status: 404 });
    }) as unknown as typeof fetch;
    const url = countUrlOf("https://gw.test/v1/messages", "/v1/messages", "anthropic", 1000)!;
    const input = {
      provider: "anthropic" as const,
      fetcher,
      url,
      headers: new Headers(),
      model: "m",
      texts: new Map([["a", TEXT]]),
      now: 1000,
    };
    expect(await countResults(input)).toEqual({});
    expect(asked).toBe(1);
    expect(countUrlOf("https://gw.test/v1/messages", "/v1/messages", "anthropic", 2000)).toBeNull();
    expect(
      countUrlOf("https://gw.test/v1/messages", "/v1/messages", "anthropic", 1000 + 3_600_001),
    ).not.toBeNull();
  });

  it("a hanging upstream, a refused connection, a broken or hostile answer: no count, no throw", async () => {
    const base = {
      provider: "anthropic" as const,
      url: "https://fake.test/v1/messages/count_tokens",
      headers: new Headers(),
      model: "m",
      texts: new Map([["a", TEXT]]),
    };
    const hang = ((_: unknown, init?: RequestInit) =>
      new Promise((_resolve, reject) =>
        init?.signal?.addEventListener("abort", () => reject(new Error("aborted"))),
      )) as typeof fetch;
    expect(await countResults({ ...base, fetcher: hang, deadlineMs: 30 })).toEqual({});
    const refuse = (async () => {
      throw new Error("connection refused");
    }) as typeof fetch;
    expect(await countResults({ ...base, fetcher: refuse })).toEqual({});
    for (const body of ["not json", '{"input_tokens":-5}', '{"input_tokens":"many"}', "[]"]) {
      const answer = (async () => new Response(body, { status: 200 })) as unknown as typeof fetch;
      expect(await countResults({ ...base, fetcher: answer }), body).toEqual({});
    }
    const refused = (async () => new Response("{}", { status: 429 })) as unknown as typeof fetch;
    expect(await countResults({ ...base, fetcher: refused })).toEqual({});
    // A 429 is no sign the endpoint is missing.
    expect(
      countUrlOf("https://fake.test/v1/messages", "/v1/messages", "anthropic", 0),
    ).not.toBeNull();
  });
});

describe("unsentTexts", () => {
  // One earlier call answered (settled), then COUNT_LIMIT + 1 parallel calls whose results just arrived.
  const fresh = Array.from({ length: COUNT_LIMIT + 1 }, (_, i) => `new${i}`);
  const req = {
    model: "claude-sonnet-4-6",
    max_tokens: 100,
    messages: [
      { role: "user", content: "task" },
      { role: "assistant", content: [{ type: "tool_use", id: "old", name: "bash", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "old", content: TEXT }] },
      {
        role: "assistant",
        content: fresh.map((id) => ({ type: "tool_use", id, name: "bash", input: {} })),
      },
      {
        role: "user",
        content: fresh.map((id, i) => ({
          type: "tool_result",
          tool_use_id: id,
          content: TEXT + i,
        })),
      },
    ],
  };
  const prepared = prepareRequest("anthropic", adapterFor("anthropic"), JSON.stringify(req));

  it("takes the results cut on arrival, the largest first, at most COUNT_LIMIT", async () => {
    const cut: Record<string, number> = { old: 5000 };
    fresh.forEach((id, i) => {
      cut[id] = 2000 + i;
    });
    const out = unsentTexts(prepared, cut);
    expect(out.size).toBe(COUNT_LIMIT);
    // The settled result was sent in full before (its growth measures it): never counted.
    expect(out.has("old")).toBe(false);
    expect(out.has("new0")).toBe(false);
    expect(out.get(`new${COUNT_LIMIT}`)).toBe(TEXT + COUNT_LIMIT);
    // Counted in the model the request names.
    const models: unknown[] = [];
    const fetcher = (async (_: RequestInfo | URL, init?: RequestInit) => {
      models.push(JSON.parse(String(init?.body)).model);
      return Response.json({ input_tokens: 1 });
    }) as typeof fetch;
    const url = "https://fake.test/v1/messages/count_tokens";
    await countUnsent({
      provider: "anthropic",
      fetcher,
      url,
      headers: new Headers(),
      prepared,
      cut,
    });
    expect(models).toHaveLength(COUNT_LIMIT + 1);
    expect(new Set(models)).toEqual(new Set(["claude-sonnet-4-6"]));
  });

  it("nothing without a cut, for results under the minimum, or kept", () => {
    expect(unsentTexts(prepared, undefined).size).toBe(0);
    expect(unsentTexts(prepared, { new0: 10 }).size).toBe(0);
    expect(unsentTexts(prepared, { other: 5000 }).size).toBe(0);
  });
});

const DIALECTS: Record<string, [Dialect, string]> = {
  anthropic: [anthropicDialect, "/v1/messages"],
  "openai-chat": [openaiChatDialect, "/v1/chat/completions"],
  "openai-responses": [openaiResponsesDialect, "/v1/responses"],
};
const LARGE = JSON.stringify(
  Array.from({ length: 1500 }, (_, i) => ({ item: `item-${i}`, price: i * 1.5, stock: i % 7 })),
  null,
  2,
);
const SMALL = (i: number) => `line ${i}: ${"ok ".repeat(200)}`;
const STEPS: Step[] = [
  { id: "s0", result: SMALL(0) },
  { id: "big", result: LARGE },
  ...Array.from({ length: 8 }, (_, i) => ({ id: `s${i + 1}`, result: SMALL(i + 1) })),
];

/** One session through the proxy loop to the fake; the bill, the report, the fake. */
async function session(
  kit: Kit,
  config: Record<string, unknown>,
  counting = true,
): Promise<{ bill: number; billed: ReturnType<typeof billedSession>; fake: BillingFake }> {
  const fake = new BillingFake();
  fake.counting = counting;
  fake.script = () => say("next");
  const store = new MemoryStore();
  const ref = { tenant: "t", session: `count-${kit.format}` };
  const [dialect, path] = DIALECTS[kit.format]!;
  const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) =>
    fake.fetch(new Request(input, init))) as typeof fetch;
  let req: Req = kit.conversation(STEPS.slice(0, 1), { model: MODEL[kit.format]! });
  for (let i = 1; i <= STEPS.length; i++) {
    fake.clock.advance(30);
    const text = JSON.stringify(req);
    const input: ProxyTurnInput = {
      dialect,
      fetch: fetcher,
      url: `https://fake.test${path}`,
      headers: new Headers({ "content-type": "application/json", "x-api-key": "sk-test" }),
      body: { bytes: async () => new TextEncoder().encode(text), text: async () => text },
      ref,
      store,
      config: (layer) => resolveConfig(layer, config),
      secret: () => "a-count-test-secret-0123456789",
      maxHops: 3,
      log: () => {},
    };
    const res = await proxyTurn(input);
    expect(res.status).toBe(200);
    await res.text();
    if (i < STEPS.length) req = kit.addTurn(req, STEPS[i]!);
  }
  const report = await store.sessionReport(ref, { turns: true });
  return { bill: fake.total().usd, billed: billedSession(report?.turns ?? []), fake };
}

const MODEL: Record<string, string> = {
  anthropic: "claude-sonnet-4-6",
  "openai-chat": "gpt-5.4",
  "openai-responses": "gpt-5.4",
};
const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

describe.each(KITS.filter((k) => k.format in DIALECTS))(
  "a result stubbed on arrival, counted, on the bill ($format)",
  (kit) => {
    it("the billed saving is within 5% of bill off − bill on, and says the tokens were measured", async () => {
      const off = await session(kit, { tool_result_compaction_enabled: false });
      const on = await session(kit, ON);
      const truth = off.bill - on.bill;
      const t = on.billed.totals;
      expect(truth).toBeGreaterThan(0);
      expect(t.removed.results).toBeGreaterThan(0);
      expect(t.removed.measured).toBeGreaterThan(0);
      expect(on.fake.counts.length).toBeGreaterThanOrEqual(2);
      expect(Math.abs(t.saved_usd - truth)).toBeLessThan(0.05 * truth);
    });

    it("an upstream without counting, or the switch off: the call is unchanged, the tokens estimated", async () => {
      const missing = await session(kit, ON, false);
      const off = await session(kit, { ...ON, tool_result_count_unsent: false });
      expect(missing.billed.totals.removed.measured).toBe(0);
      expect(off.billed.totals.removed.measured).toBe(0);
      expect(off.fake.counts).toHaveLength(0);
      // The same bytes went out either way: the count is beside the call, never in it.
      expect(missing.bill).toBeCloseTo(off.bill, 9);
    });
  },
);

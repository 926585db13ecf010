/**
 * The eval's pure parts: the intervals against published values, how answers compare, the seeded sample,
 * the requests it builds per provider (read back by the format adapters), the retrying and metered fetches,
 * the judge's verdicts, the resumable log, and the report's escaping. End to end against a fake model:
 * test/clients/eval.test.ts.
 */

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { RECOMMENDED_CONFIG, resolveConfig } from "../../src/config.ts";
import { adapterFor } from "../../src/core/compact.ts";
import { parseJsonSpans } from "../../src/core/json/scan.ts";
import { resolveModel } from "../../src/core/pricing.ts";
import { readAnswer } from "../../src/eval/answers.ts";
import { canonicalJson, comparePair, sameAction, similarity } from "../../src/eval/compare.ts";
import { Budget, CEILING, meteredFetch } from "../../src/eval/cost.ts";
import { JUDGE_PROMPT, judgePrompt, parseVerdict } from "../../src/eval/judge.ts";
import { retryAfterMs, retryingFetch } from "../../src/eval/provider.ts";
import { renderHtml } from "../../src/eval/report-html.ts";
import { callRequest } from "../../src/eval/requests.ts";
import { memoryLog, openLog } from "../../src/eval/results-log.ts";
import { candidateCalls, drawSample } from "../../src/eval/sample.ts";
import { newcombe, verdictOf, wilson } from "../../src/eval/stats.ts";
import { summarise } from "../../src/eval/summary.ts";
import type { AnswerView, ArmRecord, SampledCall } from "../../src/eval/types.ts";
import { attachmentExtractor } from "../../src/extract/attachment-extractor.ts";
import { parseSessions } from "../../src/replay/sessions.ts";
import { catalogSessions } from "../support/eval-model.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe("intervals", () => {
  it("Wilson's score interval matches the published values", () => {
    // Newcombe (1998), table I: 81/263 → 0.2553–0.3662; 15/148 → 0.0624–0.1605; 0/20 → 0–0.1611.
    const close = (p: { low: number | null; high: number | null }, lo: number, hi: number) => {
      expect(p.low!).toBeCloseTo(lo, 4);
      expect(p.high!).toBeCloseTo(hi, 4);
    };
    close(wilson(81, 263), 0.2553, 0.3662);
    close(wilson(15, 148), 0.0624, 0.1605);
    close(wilson(0, 20), 0, 0.1611);
    close(wilson(10, 10), 0.7225, 1);
    expect(wilson(0, 0)).toEqual({ agree: 0, n: 0, rate: null, low: null, high: null });
  });

  it("Newcombe's hybrid score interval for a difference matches his worked examples", () => {
    // Newcombe (1998), table II, method 10: 56/70 − 48/80 → 0.0524 to 0.3339; 9/10 − 3/10 → 0.1705 to 0.8090.
    const a = newcombe(wilson(56, 70), wilson(48, 80))!;
    expect(a.estimate).toBeCloseTo(0.2, 10);
    expect(a.low).toBeCloseTo(0.0524, 4);
    expect(a.high).toBeCloseTo(0.3339, 4);
    const b = newcombe(wilson(9, 10), wilson(3, 10))!;
    expect(b.low).toBeCloseTo(0.1705, 4);
    expect(b.high).toBeCloseTo(0.809, 3);
    expect(newcombe(wilson(5, 10), wilson(0, 0))).toBeNull();
  });

  it("calls a regression only when the whole interval is below zero", () => {
    expect(verdictOf(newcombe(wilson(2, 20), wilson(10, 10)))).toBe("regression");
    expect(verdictOf(newcombe(wilson(18, 20), wilson(10, 10)))).toBe("no_regression_detected");
    expect(verdictOf(null)).toBe("no_noise_floor");
  });
});

const view = (text: string, calls: AnswerView["calls"] = []): AnswerView => ({
  text,
  calls,
  stop: null,
});

describe("comparing two answers", () => {
  it("the next action: tool names and arguments, keys in any order, calls in any order", () => {
    expect(canonicalJson({ b: [1, { d: 2, c: 3 }], a: "x" })).toBe(
      '{"a":"x","b":[1,{"c":3,"d":2}]}',
    );
    const one = view("", [
      { name: "read", args: { path: "a", lines: [1, 2] } },
      { name: "ls", args: {} },
    ]);
    const two = view("other words", [
      { name: "ls", args: {} },
      { name: "read", args: { lines: [1, 2], path: "a" } },
    ]);
    expect(sameAction(one, two)).toBe(true);
    expect(sameAction(one, view("", [{ name: "read", args: { path: "b", lines: [1, 2] } }]))).toBe(
      false,
    );
    const p = comparePair("x", "AB", one, two, { threshold: 0.9, judge: null });
    expect(p).toMatchObject({ action: true, agree: true }); // the text beside a tool call is not compared
    expect(
      comparePair("x", "AB", one, view("done"), { threshold: 0.9, judge: null }),
    ).toMatchObject({
      agree: false,
      why: "one answer calls a tool, the other does not",
    });
  });

  it("the text: normalised exact, then the judge, then the similarity", () => {
    const a = view("The price is  12.34.\n");
    expect(
      comparePair("x", "AB", a, view("the PRICE is 12.34."), { threshold: 0.9, judge: null }),
    ).toMatchObject({
      text_exact: true,
      agree: true,
    });
    const b = view("I would guess the price is about 10.");
    const plain = comparePair("x", "AB", a, b, { threshold: 0.9, judge: null });
    expect(plain.agree).toBe(false);
    expect(plain.why).toMatch(/similarity 0\.\d\d < 0\.9/);
    expect(comparePair("x", "AB", a, b, { threshold: 0.9, judge: true }).agree).toBe(true);
    expect(
      comparePair("x", "AB", a, view("The price is 12.34, as listed."), {
        threshold: 0.9,
        judge: false,
      }).agree,
    ).toBe(false);
  });

  it("similarity is 2·LCS over the words, bounded in the words it reads", () => {
    expect(similarity("a b c d", "a b c d")).toBe(1);
    expect(similarity("a b c d", "a x c d")).toBeCloseTo(0.75, 10);
    expect(similarity("", "")).toBe(1);
    expect(similarity("", "a")).toBe(0);
    expect(similarity("SKU-1-0042 costs 12.34", "sku-1-0042 is 12.34")).toBeCloseTo(2 / 3, 10);
    const long = "word ".repeat(100_000);
    const t = Date.now();
    expect(similarity(long, `${long} more`)).toBe(1); // both cut at MAX_WORDS
    expect(Date.now() - t).toBeLessThan(5000);
  });

  it("reads answers of every API, leaving the recall tool out", () => {
    const anthropic = readAnswer("anthropic", {
      content: [
        { type: "text", text: "Looking." },
        { type: "tool_use", id: "t", name: "recall_tool_result", input: { mem_id: "m" } },
        { type: "tool_use", id: "u", name: "ls", input: { dir: "/" } },
      ],
      stop_reason: "tool_use",
    });
    expect(anthropic).toEqual({
      text: "Looking.",
      calls: [{ name: "ls", args: { dir: "/" } }],
      stop: "tool_use",
    });
    const chat = readAnswer("openai-chat", {
      choices: [
        {
          index: 0,
          message: {
            content: null,
            tool_calls: [{ function: { name: "ls", arguments: '{"dir":"/"}' } }],
          },
          finish_reason: "tool_calls",
        },
      ],
    });
    expect(chat.calls).toEqual([{ name: "ls", args: { dir: "/" } }]);
    const responses = readAnswer("openai-responses", {
      status: "completed",
      output: [
        { type: "reasoning", summary: [] },
        { type: "message", content: [{ type: "output_text", text: "Hi" }] },
        { type: "function_call", name: "ls", arguments: "not json" },
      ],
    });
    expect(responses).toEqual({
      text: "Hi",
      calls: [{ name: "ls", args: "not json" }],
      stop: "completed",
    });
    expect(readAnswer("anthropic", "garbage")).toEqual({ text: "", calls: [], stop: null });
  });
});

const catalog = parseSessions(
  catalogSessions(5)
    .map((s) => JSON.stringify(s))
    .join("\n"),
  "catalog",
);
const turn = (provider: "anthropic" | "openai-chat" | "openai-responses") => ({
  request: {
    provider,
    model: provider === "anthropic" ? "claude-sonnet-4-6" : "gpt-5.1",
    client: "cached" as const,
    maxTokens: 512,
    temperature: 0,
  },
  config: resolveConfig(RECOMMENDED_CONFIG),
  secret: "unit-test-secret-0123456789",
  extractor: attachmentExtractor(),
});

describe("the sample", () => {
  it("keeps the calls the config changes, each with what changed and its token estimates", async () => {
    const calls = await candidateCalls(catalog, turn("anthropic"));
    // Per session: the catalog's arrival (first delivery: a stub the model reads before it answers), the
    // call after the status check and the four questions (the catalog settled, not hot).
    expect(calls).toHaveLength(30);
    for (const c of calls) {
      expect(c.changed).toEqual([
        expect.objectContaining({ tool_name: "get_catalog", action: "offloaded" }),
      ]);
      expect(c.tokens_b).toBeLessThan(c.tokens_a / 5);
    }
  });

  it("is the same for a seed, spread over sessions, late in each, with its A/A share", async () => {
    const calls = await candidateCalls(catalog, turn("anthropic"));
    const a = drawSample(calls, 10, 1, 0.5);
    expect(drawSample(calls, 10, 1, 0.5)).toEqual(a);
    expect(drawSample(calls, 10, 2, 0.5)).not.toEqual(a);
    expect(a.filter((c) => c.aa)).toHaveLength(5);
    const perSession = new Map<number, number>();
    for (const c of a) perSession.set(c.session_index, (perSession.get(c.session_index) ?? 0) + 1);
    expect([...perSession.values()]).toEqual([2, 2, 2, 2, 2]);
    const five = drawSample(calls, 5, 3, 0);
    expect(new Set(five.map((c) => c.session_index)).size).toBe(5);
    // Late calls are favoured: over many seeds, the picks sit later than the candidates do on average.
    const mean = (xs: SampledCall[]) => xs.reduce((s, c) => s + c.call, 0) / xs.length;
    const picks = Array.from({ length: 40 }, (_, seed) => drawSample(calls, 5, seed, 0)).flat();
    expect(mean(picks)).toBeGreaterThan(mean(calls));
    expect(drawSample(calls, 100, 1, 1)).toHaveLength(30);
  });
});

describe("the requests, per provider", () => {
  it("carry the conversation so the format's adapter finds every tool result, settled as it was", () => {
    const s = catalog[0]!;
    for (const provider of ["anthropic", "openai-chat", "openai-responses"] as const) {
      const raw = callRequest(s, s.calls[3]!, turn(provider).request);
      const analysis = adapterFor(provider).analyze(raw, parseJsonSpans(raw));
      expect(
        analysis.sites.map((x) => [x.tool_use_id, x.tool_name, x.settled]),
        provider,
      ).toEqual([
        ["toolu_cat_0", "get_catalog", true],
        ["toolu_st_0", "get_status", true],
      ]);
      const body = JSON.parse(raw);
      expect(body.temperature, provider).toBe(0);
      expect(body.max_tokens ?? body.max_completion_tokens ?? body.max_output_tokens).toBe(512);
    }
    const chat = JSON.parse(
      callRequest(s, s.calls[3]!, { ...turn("openai-chat").request, temperature: null }),
    );
    expect(chat.temperature).toBeUndefined();
    expect(chat.messages[0]).toEqual({
      role: "system",
      content: "You answer questions about the catalog.",
    });
    expect(chat.messages[2].tool_calls[0].function).toEqual({
      name: "get_catalog",
      arguments: "{}",
    });
    expect(chat.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      "get_catalog",
      "get_status",
    ]);
    const responses = JSON.parse(callRequest(s, s.calls[3]!, turn("openai-responses").request));
    expect(responses.instructions).toBe("You answer questions about the catalog.");
    expect(responses.store).toBe(false);
  });

  it("keeps a logged request's own cache breakpoints rather than adding a fifth", () => {
    const [s] = parseSessions(
      JSON.stringify({
        model: "claude-sonnet-4-6",
        messages: [
          {
            role: "user",
            content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }],
          },
        ],
      }),
    );
    const body = JSON.parse(callRequest(s!, 1, turn("anthropic").request));
    expect(JSON.stringify(body).match(/cache_control/g)).toHaveLength(1);
  });
});

describe("talking to the provider", () => {
  it("reads retry-after-ms, retry-after in seconds and as a date", () => {
    expect(retryAfterMs(new Headers({ "retry-after-ms": "250" }))).toBe(250);
    expect(retryAfterMs(new Headers({ "retry-after": "3" }))).toBe(3000);
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMs(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }), now)).toBe(
      5000,
    );
    expect(retryAfterMs(new Headers())).toBeNull();
  });

  it("retries 429, 529 and a dropped connection with backoff; never a 400 or what says not to", async () => {
    const answers: (number | "drop")[] = [429, 529, "drop", 200];
    const waits: number[] = [];
    const fetcher = (async () => {
      const next = answers.shift()!;
      if (next === "drop") throw new TypeError("fetch failed");
      return new Response("{}", {
        status: next,
        headers: next === 429 ? { "retry-after": "2" } : {},
      });
    }) as typeof fetch;
    const f = retryingFetch({
      fetch: fetcher,
      sleep: async (ms) => void waits.push(ms),
      signal: new AbortController().signal,
      random: () => 0,
    });
    expect((await f("http://x", { method: "POST" })).status).toBe(200);
    expect(waits).toEqual([2000, 750, 1500]); // retry-after, then 0.75 × 500·2^n
    let calls = 0;
    const once = (status: number, headers: Record<string, string> = {}) =>
      retryingFetch({
        fetch: (async () => {
          calls++;
          return new Response("{}", { status, headers });
        }) as typeof fetch,
        sleep: async () => {},
        signal: new AbortController().signal,
      });
    expect((await once(400)("http://x")).status).toBe(400);
    expect((await once(503, { "x-should-retry": "false" })("http://x")).status).toBe(503);
    expect(calls).toBe(2);
    expect((await once(500)("http://x")).status).toBe(500);
    expect(calls).toBe(2 + 6); // MAX_ATTEMPTS, then the last answer stands
  });

  it("never starts a call that could pass the ceiling, and charges what the usage bills", async () => {
    const price = resolveModel("claude-sonnet-4-6")!;
    const budget = new Budget(0, 0.02);
    const usage = { input_tokens: 1000, output_tokens: 100 };
    const f = meteredFetch(
      (async () => new Response(JSON.stringify({ usage }), { status: 200 })) as typeof fetch,
      budget,
      "anthropic",
      price,
      100,
    );
    await f("http://x", { method: "POST", body: "x".repeat(3300) });
    expect(budget.spent).toBeCloseTo((1000 * 3 + 100 * 15) / 1e6, 12);
    // A prompt whose worst case passes the ceiling is never sent.
    await expect(f("http://x", { method: "POST", body: "x".repeat(10_000) })).rejects.toBe(CEILING);
    // The provider counted 1000 tokens where we estimated 1000: the margin stays at 1.5×.
    expect(budget.factor).toBe(1.5);
    budget.learn(3000, 1000);
    expect(budget.factor).toBeCloseTo(3.6, 10);
  });
});

describe("the judge", () => {
  it("reads its verdict whatever the formatting, and says when there is none", () => {
    expect(parseVerdict("EQUIVALENT\nBoth say 12.")).toEqual({
      equivalent: true,
      reason: "Both say 12.",
    });
    expect(parseVerdict("**Different**: the values differ.")).toEqual({
      equivalent: false,
      reason: "the values differ.",
    });
    expect(parseVerdict("I think they match.").equivalent).toBeNull();
  });

  it("fills its prompt in one pass (an answer's braces stay as they are), clipped", () => {
    const p = judgePrompt("Q?", "{answer2}", "x".repeat(10_000));
    expect(p).toContain("Answer 1:\n<<<\n{answer2}\n>>>");
    expect(p).toContain("…[clipped]");
  });

  it("is the prompt docs/measure.md shows", () => {
    expect(readFileSync(`${root}/docs/measure.md`, "utf8")).toContain(JUDGE_PROMPT);
  });
});

describe("the results log", () => {
  it("starts with a header, resumes its records, refuses another run's", async () => {
    const log = memoryLog();
    const first = await openLog(log, "f1");
    const record = { kind: "call", id: "c", arm: "A", ok: true, usd: 0.5 } as unknown as ArmRecord;
    await first.append(record);
    log.text += '{"kind":"call","id":"d","arm":"A","ok":tr'; // a crash mid-line
    const again = await openLog(log, "f1");
    expect([...again.results.arms.keys()]).toHaveLength(1);
    expect(again.results.spent).toBe(0.5);
    await again.append({ kind: "unlogged", usd: 0.25 });
    expect(log.text.split("\n").at(-2)).toBe('{"kind":"unlogged","usd":0.25}');
    expect((await openLog(log, "f1")).results.spent).toBe(0.75);
    await expect(openLog({ ...log, name: "r.jsonl" }, "f2")).rejects.toMatchObject({
      type: "conflict",
      message: expect.stringMatching(/^r\.jsonl holds the results of another eval/),
    });
  });
});

describe("the HTML report", () => {
  it("escapes what the traces hold", () => {
    const hostile = '<script>alert("x")</script>';
    const arm = (answer: AnswerView, extra: Partial<ArmRecord> = {}): ArmRecord => ({
      kind: "call",
      id: "0:s#1",
      arm: "A",
      ok: true,
      answer,
      provider_calls: 1,
      hops: 0,
      recalls: [],
      ending: null,
      usage: { input: 10, cache_read: 0, cache_write_5m: 0, cache_write_1h: 0, output: 2 },
      usd: 0.001,
      temperature: 0,
      ...extra,
    });
    const sample: SampledCall[] = [
      {
        id: "0:s#1",
        session: hostile,
        session_index: 0,
        call: 1,
        calls: 2,
        aa: false,
        tokens_a: 10,
        tokens_b: 5,
        tokens_out: 2,
        changed: [],
        attachments: 0,
      },
    ];
    const report = summarise({
      settings: {
        input: hostile,
        provider: "anthropic",
        model: "m",
        endpoint: "http://x",
        config: {},
        sample: 1,
        seed: 1,
        aa_share: 0,
        judge: null,
        similarity: 0.9,
        client: "cached",
        max_tokens: 10,
        max_hops: 3,
      },
      sessions: 1,
      calls: 2,
      candidates: 1,
      sample,
      results: {
        arms: new Map([
          ["0:s#1\u0000A", arm(view(hostile))],
          [
            "0:s#1\u0000B",
            arm(view("fine"), {
              arm: "B",
              shown: [
                {
                  tool_use_id: "t",
                  tool_name: hostile,
                  action: "offloaded",
                  mem_id: null,
                  chars: 9,
                  shown: hostile,
                },
              ],
            }),
          ],
        ]),
        judges: new Map(),
        spent: 0,
      },
      failures: [],
      stopped: null,
      estimate: { expected_usd: 0 },
    });
    expect(report.disagreements).toHaveLength(1);
    const html = renderHtml(report);
    expect(html).not.toContain("<script>");
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
  });
});

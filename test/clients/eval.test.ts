/**
 * `evaluate` and `edge-offload eval` against a fake model on 127.0.0.1 (test/support/eval-model.ts) whose
 * next action depends on what its prompt shows: with the catalog in full it answers; with a stub, the
 * recalling model recalls then answers, the guessing one answers wrong, the noisy one words every answer at
 * random. The eval must report ≈100% for the first, catch the second's regression with an interval that
 * excludes no effect, and show the third's A/A noise; bill what the fake reported at the published rates;
 * resume from its results; retry what the provider throttles; and fail with one line when every call fails.
 * The official clients read the fake's answers first, so the fake speaks the real APIs.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { isOffloadError } from "../../src/errors.ts";
import { type EvalOptions, evaluate, planEval } from "../../src/eval/evaluate.ts";
import { renderHtml } from "../../src/eval/report-html.ts";
import { memoryLog } from "../../src/eval/results-log.ts";
import { parseSessions } from "../../src/replay/sessions.ts";
import { catalogSessions, FakeModel, type FakeModelOptions } from "../support/eval-model.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const lines = catalogSessions(6);
const sessions = parseSessions(lines.map((s) => JSON.stringify(s)).join("\n"), "catalog.jsonl");
/** Published Sonnet 4.6 rates, $ per million tokens (typed here, not read from the price table). */
const SONNET = { input: 3, output: 15 };

const running: FakeModel[] = [];
afterEach(async () => {
  for (const m of running.splice(0)) await m.stop();
});

async function fake(options: FakeModelOptions): Promise<FakeModel> {
  const m = new FakeModel(options);
  await m.start();
  running.push(m);
  return m;
}

function options(m: FakeModel, extra: Partial<EvalOptions> = {}): EvalOptions {
  const provider = extra.provider ?? "anthropic";
  return {
    sessions,
    input: "catalog.jsonl",
    provider,
    model: provider === "anthropic" ? "claude-sonnet-4-6" : "gpt-5.1",
    apiKey: "sk-test",
    baseUrl: provider === "anthropic" ? m.url : `${m.url}/v1`,
    yes: true,
    sleep: async () => {},
    ...extra,
  };
}

describe("the fake model speaks the providers' APIs (read by the official clients)", () => {
  it("answers with the price when its prompt shows the catalog, and calls recall on a stub", async () => {
    const m = await fake({ mode: "recalling" });
    const catalog = JSON.stringify([{ sku: "SKU-0-0700", price: 12.34, name: "x" }]);
    const anthropic = new Anthropic({ apiKey: "k", baseURL: m.url, maxRetries: 0 });
    const full = await anthropic.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 100,
      messages: [
        { role: "user", content: `Catalog: ${catalog}\nWhat is the price of SKU-0-0700?` },
      ],
    });
    expect(full.content[0]).toMatchObject({
      type: "text",
      text: "The price of SKU-0-0700 is 12.34.",
    });
    expect(full.usage.input_tokens).toBeGreaterThan(0);
    const openai = new OpenAI({ apiKey: "k", baseURL: `${m.url}/v1`, maxRetries: 0 });
    const stub = "[offloaded tool result trm_0123456789abcdef01234567: 80,000 chars]";
    const tools = [
      {
        type: "function" as const,
        function: { name: "recall_tool_result", parameters: { type: "object" } },
      },
    ];
    const chat = await openai.chat.completions.create({
      model: "gpt-5.1",
      tools,
      messages: [{ role: "user", content: `${stub}\nWhat is the price of SKU-0-0700?` }],
    });
    const call = chat.choices[0]!.message.tool_calls![0]!;
    expect(call.type === "function" && call.function.name).toBe("recall_tool_result");
    expect(call.type === "function" && JSON.parse(call.function.arguments)).toEqual({
      mem_id: "trm_0123456789abcdef01234567",
      query: "SKU-0-0700",
    });
    const responses = await openai.responses.create({
      model: "gpt-5.1",
      input: `Catalog: ${catalog}\nWhat is the price of SKU-0-0700?`,
    });
    expect(responses.output_text).toBe("The price of SKU-0-0700 is 12.34.");
  });
});

describe("evaluate against the fake model", () => {
  it("reports ≈100% agreement for the recalling model on every provider API, with its recall hops", async () => {
    for (const provider of ["anthropic", "openai-chat", "openai-responses"] as const) {
      const m = await fake({ mode: "recalling" });
      const report = await evaluate(options(m, { provider }));
      expect(report.sampled, provider).toBe(20);
      expect(report.evaluated).toBe(20);
      expect(report.ab.agree.rate, provider).toBeGreaterThanOrEqual(0.95);
      expect(report.aa.agree.n).toBe(10);
      expect(report.aa.agree.rate).toBe(1);
      expect(report.verdict).toBe("no_regression_detected");
      expect(report.difference!.low).toBeLessThan(0);
      expect(report.difference!.high).toBeGreaterThan(0);
      // Every question asked of a stub was answered after one recall, by the proxy's loop.
      expect(report.hops.total).toBeGreaterThan(10);
      expect(report.hops.recalls).toBe(report.hops.total);
      const hop = m.received.find(
        (r) => r.body.includes("recall_tool_result") && r.body.includes("price"),
      );
      expect(hop).toBeDefined();
      expect(report.failures).toEqual([]);
    }
  });

  it("bills what the provider reported, at the published rates, per arm", async () => {
    const m = await fake({ mode: "recalling" });
    const report = await evaluate(options(m));
    const reported = m.reported.filter((r) => !r.judge);
    const input = reported.reduce((s, r) => s + r.input, 0);
    const output = reported.reduce((s, r) => s + r.output, 0);
    const { a, b, aa } = report.spend;
    expect(a.prompt_tokens + b.prompt_tokens + aa.prompt_tokens).toBe(input);
    expect(a.output_tokens + b.output_tokens + aa.output_tokens).toBe(output);
    expect(a.calls + b.calls + aa.calls).toBe(reported.length);
    const dollars = (input * SONNET.input + output * SONNET.output) / 1e6;
    expect(report.spend.total_usd).toBeCloseTo(dollars, 9);
    // B's calls carry stubs, not the catalog: much cheaper, hops and all.
    expect(report.spend.b_over_a).toBeLessThan(0.5);
    expect(b.calls).toBeGreaterThan(b.answers);
  });

  it("catches the guessing model's regression with an interval that excludes no effect", async () => {
    const m = await fake({ mode: "guessing" });
    const report = await evaluate(options(m));
    expect(report.verdict).toBe("regression");
    expect(report.difference!.high).toBeLessThan(0);
    expect(report.ab.agree.high!).toBeLessThan(report.aa.agree.low!);
    expect(report.hops.total).toBe(0);
    const d = report.disagreements.find((x) => x.pair === "AB")!;
    expect(d.second.text).toContain("best guess");
    expect(d.first.text).toMatch(/is \d+\.\d\d\.$/);
    // The stub it saw is in the report, beside both answers.
    expect(d.shown[0]!.action).toBe("offloaded");
    expect(d.shown[0]!.shown).toMatch(/trm_[0-9a-f]{24}/);
    const html = renderHtml(report);
    expect(html).toContain("<svg");
    expect(html).toContain("best guess");
    expect(html).toContain(d.shown[0]!.mem_id!);
  });

  it("shows the noisy model's A/A noise, and a judge that sees through the wording", async () => {
    const m = await fake({ mode: "noisy", seed: 11 });
    const plain = await evaluate(options(m, { concurrency: 1 }));
    expect(plain.aa.agree.n).toBe(10);
    expect(plain.aa.agree.rate!).toBeLessThan(0.8);
    expect(plain.aa.agree.high!).toBeLessThan(1);
    expect(plain.aa.action.rate).toBe(1); // the same action, other words
    expect(plain.verdict).not.toBe("regression");
    expect(plain.disagreements.some((d) => d.pair === "AA")).toBe(true);

    const judged = await evaluate(options(m, { concurrency: 1, judge: "claude-haiku-4-5" }));
    expect(judged.ab.agree.rate).toBe(1);
    expect(judged.aa.agree.rate).toBe(1);
    expect(judged.spend.judge.answers).toBeGreaterThan(0);
    expect(judged.spend.judge.usd).toBeGreaterThan(0);
    expect(judged.pairs.filter((p) => p.judge === true).length).toBe(judged.spend.judge.answers);
  });

  it("never passes a ceiling, and resumes from its results without sending anything twice", async () => {
    const m = await fake({ mode: "recalling" });
    const plan = await planEval(options(m));
    const log = memoryLog();
    const ceiling = plan.estimate.expected_usd / 3;
    const first = await evaluate(options(m, { yes: false, maxUsd: ceiling, log, plan }));
    expect(first.stopped).toBe("max_usd");
    expect(first.spend.total_usd).toBeLessThanOrEqual(ceiling);
    expect(first.evaluated).toBeGreaterThan(0);
    expect(first.evaluated).toBeLessThan(20);
    const sent = m.received.length;
    // A crash cut the last line short: it is ignored, and the next line starts on its own.
    log.text += '{"kind":"call","id":"0:catalog-0#6","arm":"A","ok":tr';
    const second = await evaluate(options(m, { log, plan }));
    expect(second.stopped).toBeNull();
    expect(second.evaluated).toBe(20);
    expect(second.ab.agree.rate).toBe(1);
    // 20 A, 20 B (those asked a price with one hop: the catalog's arrival asks none), 10 A2; the second
    // run sends those the log lacks.
    const hops = second.hops.total;
    expect(hops).toBeGreaterThan(10);
    expect(hops).toBeLessThan(20);
    const all = 20 + 20 + hops + 10;
    const logged = first.spend.a.calls + first.spend.b.calls + first.spend.aa.calls;
    expect(second.spend.a.calls + second.spend.b.calls + second.spend.aa.calls).toBe(all);
    expect(m.received.length - sent).toBe(all - logged);
    const total = m.received.length;
    const third = await evaluate(options(m, { log, plan }));
    expect(m.received.length).toBe(total);
    expect(third.ab).toEqual(second.ab);
    // The results of another eval are not mixed in.
    await expect(evaluate(options(m, { log, seed: 2 }))).rejects.toMatchObject({
      type: "conflict",
    });
  });

  it("retries what the provider throttles, waiting as long as its retry-after says", async () => {
    const m = await fake({ mode: "recalling", throttle: 3 });
    const waits: number[] = [];
    const report = await evaluate(
      options(m, { sample: 4, aaShare: 0, sleep: async (ms) => void waits.push(ms) }),
    );
    expect(waits).toEqual([1000, 1000, 1000]);
    expect(report.evaluated).toBe(4);
    expect(report.failures).toEqual([]);
  });

  it("asks again without temperature when the model refuses 0, and says so", async () => {
    const m = await fake({ mode: "recalling", refuseTemperature: true });
    const report = await evaluate(options(m, { sample: 6, concurrency: 2 }));
    expect(report.evaluated).toBe(6);
    expect(report.temperature).toBeNull();
    const refused = m.received.filter((r) => r.json.temperature !== undefined).length;
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThanOrEqual(2); // one per call in flight when the first was refused
  });

  it("fails with one message when the provider refuses every call, after a few calls", async () => {
    const bad = await fake({
      mode: "recalling",
      fail: { status: 400, type: "invalid_request_error", message: "prompt is too long" },
    });
    const e = await evaluate(options(bad)).catch((x: unknown) => x);
    expect(isOffloadError(e) && e.type).toBe("upstream_error");
    expect((e as Error).message).toContain("400 invalid_request_error: prompt is too long");
    expect(bad.received.length).toBeLessThanOrEqual(8);
    const key = await fake({
      mode: "recalling",
      fail: { status: 401, type: "authentication_error", message: "invalid x-api-key" },
    });
    await expect(evaluate(options(key))).rejects.toThrow(
      "the provider refused the eval's calls: 401 authentication_error: invalid x-api-key",
    );
    expect(key.received.length).toBeLessThanOrEqual(4);
  });

  it("sends nothing until the spend is confirmed", async () => {
    const m = await fake({ mode: "recalling" });
    await expect(evaluate(options(m, { yes: false }))).rejects.toThrow(/would spend about \$\d/);
    expect(m.received).toHaveLength(0);
  });
});

/** The CLI in a child process (asynchronous: the fake answers from this process). */
function cli(args: string[], env: Record<string, string>) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((done) => {
    const child = spawn(
      process.execPath,
      [
        "--experimental-strip-types",
        "--disable-warning=ExperimentalWarning",
        `${root}/src/cli.ts`,
        ...args,
      ],
      { env: { PATH: process.env.PATH ?? "", ...env } },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => done({ status, stdout, stderr }));
  });
}

describe("edge-offload eval (the CLI) against the fake model", { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "eo-eval-"));
  const input = join(dir, "catalog.jsonl");
  writeFileSync(input, lines.map((s) => JSON.stringify(s)).join("\n"));

  it("prints the table, writes the report and resumes; a regression exits 3", async () => {
    const m = await fake({ mode: "recalling" });
    const env = { ANTHROPIC_API_KEY: "sk-test", ANTHROPIC_BASE_URL: m.url };
    const files = ["--results", join(dir, "r.jsonl"), "--report", join(dir, "r.html")];
    const estimate = await cli(["eval", input, "--model", "claude-sonnet-4-6", ...files], env);
    expect(estimate.status).toBe(0);
    expect(estimate.stderr).toContain("nothing was sent");
    expect(m.received).toHaveLength(0);
    const run = await cli(["eval", input, "--model", "claude-sonnet-4-6", "--yes", ...files], env);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/A\/B on vs off\s+20\s+100\.0%/);
    expect(run.stdout).toContain("no regression detected");
    expect(readFileSync(join(dir, "r.html"), "utf8")).toContain("<svg");
    const again = await cli(
      ["eval", input, "--model", "claude-sonnet-4-6", "--yes", "--json", ...files],
      env,
    );
    expect(again.status).toBe(0);
    const report = JSON.parse(again.stdout);
    expect(report.ab.agree.rate).toBe(1);
    // Nothing sent twice: 20 A, 20 B and their hops, 10 A2.
    expect(m.received).toHaveLength(50 + report.hops.total);

    const g = await fake({ mode: "guessing" });
    const guess = await cli(
      [
        "eval",
        input,
        "--model",
        "claude-sonnet-4-6",
        "--yes",
        "--results",
        join(dir, "g.jsonl"),
        "--report",
        join(dir, "g.html"),
      ],
      { ANTHROPIC_API_KEY: "sk-test", ANTHROPIC_BASE_URL: g.url },
    );
    expect(guess.status).toBe(3);
    expect(guess.stdout).toContain("REGRESSION");
    expect(existsSync(join(dir, "g.html"))).toBe(true);
  });

  it("answers a provider error on every call with one line and exit code 1", async () => {
    const m = await fake({
      mode: "recalling",
      fail: { status: 401, type: "authentication_error", message: "invalid x-api-key" },
    });
    const out = await cli(
      [
        "eval",
        input,
        "--model",
        "claude-sonnet-4-6",
        "--yes",
        "--results",
        join(dir, "f.jsonl"),
        "--report",
        join(dir, "f.html"),
      ],
      { ANTHROPIC_API_KEY: "sk-test", ANTHROPIC_BASE_URL: m.url },
    );
    expect(out.status).toBe(1);
    const errors = out.stderr.split("\n").filter((l) => l.startsWith("edge-offload:"));
    expect(errors).toEqual([
      "edge-offload: the provider refused the eval's calls: 401 authentication_error: invalid x-api-key",
    ]);
    expect(out.stderr).not.toMatch(/\n\s+at /);
  });
});

/**
 * `edge-offload eval <sessions.jsonl[.gz]>`: the A/B eval of the model's answers with offload off and on
 * (src/eval/), against the user's provider. Without `--yes` or `--max-usd` it prints the estimate and sends
 * nothing. The table goes to stdout (or `--json`), the progress line and notes to stderr, the HTML report to
 * `--report`; results are appended to `--results` as they come, and a second run resumes from it. Exit
 * codes: 0 done, 2 what the user got wrong, 1 the provider refused, 3 a regression found, 130 interrupted.
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { configFromText, readSessionsFile, UsageError } from "./cli-input.ts";
import { progressReporter } from "./cli-progress.ts";

async function loadEval() {
  const [entry, config, provider] = await Promise.all([
    import("./eval/entry.ts"),
    import("./config.ts"),
    import("./eval/provider.ts"),
  ]);
  return { ...entry, ...config, ...provider };
}
type Eval = Awaited<ReturnType<typeof loadEval>>;

export const EVAL_HELP = `edge-offload eval <sessions.jsonl[.gz]> --model M [options]

Does the model still answer the same with offload on? Samples calls of your own sessions whose request the
config changes (a stub, a shortened result, an extracted attachment), sends each to your provider as it was
(A) and compacted (B, its recall_tool_result calls answered in process by the proxy's loop), and A twice on a
share of them (the model's own noise). Compares the next action and the text, with 95% intervals; reports
B's recall hops and what the provider billed. Input: the replay's formats (see edge-offload replay --help).

Options:
  --provider P       anthropic (default), openai-chat or openai-responses; the key is read from
                     ANTHROPIC_API_KEY or OPENAI_API_KEY
  --model M          the model your deployment calls (required)
  --base-url URL     a gateway, as the provider's SDK takes it (default ANTHROPIC_BASE_URL / OPENAI_BASE_URL,
                     else the provider's own)
  --config JSON      the config under test, over the recommended settings (compaction and offload on)
  --sample N         calls to sample (default 20), chosen late in sessions and spread over them
  --seed N           the sample's seed (default 1): the same seed, the same calls
  --aa SHARE         share of the sample also sent twice with offload off (default 0.5)
  --judge MODEL      also ask this model whether two differing text answers are equivalent (its cost counts)
  --similarity T     word similarity from which two texts count as the same (default 0.9)
  --client C         cached (an advancing cache breakpoint, default) or uncached
  --max-tokens N     output cap of every call (default 1024)
  --max-hops N       B's recall hops per call, as your proxy's OFFLOAD_PROXY_MAX_HOPS (default 3)
  --concurrency N    sampled calls in flight at once (default 4); 429 and overload are retried with backoff
  --yes              send, whatever the estimate
  --max-usd X        send, but never pass X dollars (this results file's earlier runs included)
  --results FILE     results appended as they come; a second run resumes (default edge-offload-eval.jsonl)
  --report FILE      the HTML report, every disagreement side by side (default edge-offload-eval.html)
  --json             print the report as JSON instead of a table
  --help             this text

Without --yes or --max-usd nothing is sent: the estimate is printed. Exit codes: 0 done, 1 the provider
refused the calls, 2 a usage error, 3 a regression found (B agrees with A less than A with itself, beyond
the 95% interval), 130 interrupted (run again to resume). How to read the report: docs/measure.md.
`;

function parseEvalArgs(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    options: {
      provider: { type: "string", default: "anthropic" },
      model: { type: "string" },
      "base-url": { type: "string" },
      config: { type: "string" },
      sample: { type: "string" },
      seed: { type: "string" },
      aa: { type: "string" },
      judge: { type: "string" },
      similarity: { type: "string" },
      client: { type: "string" },
      "max-tokens": { type: "string" },
      "max-hops": { type: "string" },
      concurrency: { type: "string" },
      yes: { type: "boolean", default: false },
      "max-usd": { type: "string" },
      results: { type: "string", default: "edge-offload-eval.jsonl" },
      report: { type: "string", default: "edge-offload-eval.html" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
}

function number(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n))
    throw new UsageError(`${flag} must be a number (got ${JSON.stringify(value)})`);
  return n;
}

/** Option paths of the library, as the flags a user typed. */
const FLAGS: Record<string, string> = {
  aaShare: "--aa",
  maxTokens: "--max-tokens",
  maxHops: "--max-hops",
  maxUsd: "--max-usd",
  baseUrl: "--base-url",
  apiKey: "the API key",
};

/** The library's errors about what was asked are usage errors; its message names flags, not options. */
function asUsage(e: unknown): unknown {
  if (typeof e !== "object" || e === null || !("status" in e) || !(e instanceof Error)) return e;
  if ((e as { status: number }).status >= 500) return e;
  const path = (e as { path?: string }).path;
  const flag = path === undefined ? undefined : (FLAGS[path] ?? `--${path}`);
  const text = flag === undefined ? e.message : e.message.replace(new RegExp(`^${path}\\b`), flag);
  return new UsageError(text);
}

export async function evalCommand(rest: string[]): Promise<number> {
  let args: ReturnType<typeof parseEvalArgs>;
  try {
    args = parseEvalArgs(rest);
  } catch (e) {
    throw new UsageError(`${e instanceof Error ? e.message : String(e)} (see --help)`);
  }
  const v = args.values;
  if (v.help) {
    process.stdout.write(EVAL_HELP);
    return 0;
  }
  const file = args.positionals[0];
  if (file === undefined) throw new UsageError("eval needs a sessions file (see --help)");
  const r: Eval = await loadEval();
  const provider = v.provider as (typeof r.EVAL_PROVIDERS)[number];
  if (!r.EVAL_PROVIDERS.includes(provider))
    throw new UsageError(
      `unknown provider ${JSON.stringify(v.provider)}: ${r.EVAL_PROVIDERS.join(", ")}`,
    );
  if (v.model === undefined)
    throw new UsageError("--model is required: the model your deployment calls");
  const apiKey = process.env[r.KEY_VARS[provider]] ?? "";
  if (apiKey.trim() === "")
    throw new UsageError(`no API key: set ${r.KEY_VARS[provider]} for --provider ${provider}`);
  const config =
    v.config === undefined
      ? undefined
      : configFromText(v.config, (value) => r.parseConfigPatch(value, "--config"));
  const sessions = [...readSessionsFile(file, r.parseSessions)];
  const maxUsd = number(v["max-usd"], "--max-usd");
  const baseUrl = v["base-url"] ?? emptyToUndefined(process.env[r.BASE_URL_VARS[provider]]);
  const controller = new AbortController();
  const options = {
    sessions,
    input: file,
    provider,
    model: v.model,
    apiKey,
    ...(baseUrl === undefined ? {} : { baseUrl }),
    ...(config === undefined ? {} : { config }),
    ...defined({
      sample: number(v.sample, "--sample"),
      seed: number(v.seed, "--seed"),
      aaShare: number(v.aa, "--aa"),
      similarity: number(v.similarity, "--similarity"),
      maxTokens: number(v["max-tokens"], "--max-tokens"),
      maxHops: number(v["max-hops"], "--max-hops"),
      concurrency: number(v.concurrency, "--concurrency"),
      maxUsd,
      judge: v.judge,
      client: v.client as "cached" | "uncached" | undefined,
    }),
    yes: v.yes,
    log: r.fileLog(v.results),
    signal: controller.signal,
  };
  const sampling = process.stderr.isTTY
    ? progressReporter(process.stderr, Date.now, { verb: "sampling", unit: "sessions replayed" })
    : null;
  let plan: Awaited<ReturnType<Eval["planEval"]>>;
  try {
    plan = await r.planEval({ ...options, onProgress: (p) => sampling?.update(p.done, p.total) });
  } catch (e) {
    throw asUsage(e);
  } finally {
    sampling?.end();
  }
  const confirmed = v.yes || maxUsd !== undefined;
  process.stderr.write(`${r.renderPlan(plan, confirmed)}\n`);
  if (!confirmed) {
    if (v.json) process.stdout.write(`${JSON.stringify({ plan: planJson(plan) })}\n`);
    return 0;
  }
  const calling = process.stderr.isTTY
    ? progressReporter(process.stderr, Date.now, { verb: "evaluating", unit: "sampled calls" })
    : null;
  // The first Ctrl-C stops sending and reports what came back; a second one ends the process.
  const interrupt = () => controller.abort();
  process.once("SIGINT", interrupt);
  let report: Awaited<ReturnType<Eval["evaluate"]>>;
  try {
    report = await r.evaluate({
      ...options,
      plan,
      onProgress: (p) => calling?.update(p.done, p.total, `$${p.spent_usd.toFixed(2)} spent`),
    });
  } catch (e) {
    throw asUsage(e);
  } finally {
    calling?.end();
    process.off("SIGINT", interrupt);
  }
  try {
    writeFileSync(v.report, r.renderHtml(report));
  } catch (e) {
    process.stderr.write(
      `edge-offload: the report could not be written to ${v.report}: ${e instanceof Error ? e.message : String(e)}\n`,
    );
  }
  process.stdout.write(`${v.json ? JSON.stringify(report) : r.renderTable(report)}\n`);
  process.stderr.write(`report: ${v.report}; results: ${v.results}\n`);
  if (report.stopped === "aborted") return 130;
  return report.verdict === "regression" ? 3 : 0;
}

function emptyToUndefined(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v;
}

function defined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, x]) => x !== undefined)) as Partial<T>;
}

/** The plan as --json prints it before anything is sent. */
function planJson(p: Awaited<ReturnType<Eval["planEval"]>>) {
  return {
    settings: p.settings,
    sessions: p.sessions,
    calls: p.calls,
    candidates: p.candidates,
    sample: p.sample.map((c) => ({ id: c.id, aa: c.aa, changed: c.changed.length })),
    estimate: p.estimate,
  };
}

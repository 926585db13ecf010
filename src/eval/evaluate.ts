/**
 * `evaluate`: does the model still answer the same with offload on? For a fixed sample of the
 * user's own calls whose request the config changes, the original request (A) and the compacted
 * one (B, recall hops answered by the proxy's loop) go to the user's provider, A twice on a share
 * of them (the model's own noise), and the answers are compared (compare.ts) with their intervals
 * (stats.ts) and what the provider billed (docs/measure.md). `planEval` draws the sample and
 * estimates the cost without calling anyone.
 */
import {
  type OffloadConfig,
  parseConfigPatch,
  RECOMMENDED_CONFIG,
  resolveConfig,
} from "../config.ts";
import { type ModelPrice, resolveModel } from "../core/pricing.ts";
import { OffloadError } from "../errors.ts";
import { attachmentExtractor } from "../extract/attachment-extractor.ts";
import { DEFAULT_MAX_HOPS } from "../proxy/upstream.ts";
import type { Client, ReplaySession } from "../replay/types.ts";
import { type CallContext, type Outcome, runA, runB, runJudge, Temperatures } from "./arms.ts";
import { isTextPair, normaliseText } from "./compare.ts";
import { Budget, type CostSettings, estimateCall, JUDGE_MAX_TOKENS, meteredFetch } from "./cost.ts";
import { lastUserText } from "./judge.ts";
import {
  endpointOf,
  isFatal,
  KEY_VARS,
  type ProviderFailure,
  providerHeaders,
  retryingFetch,
} from "./provider.ts";
import {
  armKey,
  digest,
  type EvalLog,
  judgeKey,
  type LoggedResults,
  memoryLog,
  openLog,
} from "./results-log.ts";
import { candidateCalls, drawSample } from "./sample.ts";
import type { TurnSettings } from "./session-replay.ts";
import { type EvalReport, type EvalSettings, summarise } from "./summary.ts";
import {
  type Arm,
  type ArmRecord,
  EVAL_PROVIDERS,
  type EvalProvider,
  type Failure,
  type JudgeRecord,
  type SampledCall,
} from "./types.ts";

export interface EvalProgress {
  /** "sampling": sessions replayed to find the calls the config changes; "calling": sampled calls done. */
  phase: "sampling" | "calling";
  done: number;
  total: number;
  spent_usd: number;
}

export interface EvalOptions {
  /** The sessions (`parseSessions` reads the replay's formats). */
  sessions: readonly ReplaySession[];
  /** What the input is called in reports and messages (a file name). */
  input?: string;
  provider: EvalProvider;
  /** The model the calls go to (and are priced as, unless the config names a pricing model). */
  model: string;
  apiKey: string;
  /** The provider's base URL as its SDK takes it (a gateway); default the provider's own. */
  baseUrl?: string;
  /** The config under test, over the recommended settings (compaction and offload on). */
  config?: unknown;
  /** Sampled calls (default 20). */
  sample?: number;
  seed?: number;
  /** Share of the sample also sent twice with offload off (default 0.5). */
  aaShare?: number;
  /** A model of the same provider asked whether two text answers are equivalent. */
  judge?: string;
  /** Word similarity from which two texts count as the same (default 0.9). */
  similarity?: number;
  /** "cached" (default): an advancing cache breakpoint, as the replay's cached client. */
  client?: Client;
  /** Output cap of every call (default 1024). */
  maxTokens?: number;
  /** B's recall hops per call, as the proxy's OFFLOAD_PROXY_MAX_HOPS (default 3). */
  maxHops?: number;
  /** Sampled calls in flight at once (default 4). */
  concurrency?: number;
  /** Spend confirmed: run whatever the estimate. Without it, `maxUsd` must be set. */
  yes?: boolean;
  /** A ceiling on the eval's spend (earlier runs in the log included) that it never passes. */
  maxUsd?: number;
  /** Where results go as they come, and what a resumed run starts from (default: memory). */
  log?: EvalLog;
  /** The sample and estimate already drawn by `planEval` with the same options. */
  plan?: EvalPlan;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  /** Stops sending (what came back is kept and reported). */
  signal?: AbortSignal;
  onProgress?: (progress: EvalProgress) => void;
}

export interface EvalPlan {
  settings: EvalSettings;
  sessions: number;
  calls: number;
  candidates: number;
  sample: SampledCall[];
  estimate: {
    expected_usd: number;
    /** Provider calls before recall hops and judges: A, B, and A2 on the A/A share. */
    provider_calls: number;
  };
  /** Names the run in the results log. */
  fingerprint: string;
}

const DEFAULTS = {
  sample: 20,
  seed: 1,
  aaShare: 0.5,
  similarity: 0.9,
  client: "cached" as Client,
  maxTokens: 1024,
  concurrency: 4,
};
/** The results of this many sampled calls all failing stops the run: the next would fail too. */
const FAIL_FAST = 3;
/** Keys mem_ids of B's in-process store (which lives and dies with the run). */
const SECRET = "edge-offload-eval-in-process-store";

function bad(message: string, path: string): OffloadError {
  return new OffloadError("invalid_argument", message, { path });
}

function whole(
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
  path: string,
) {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max)
    throw bad(`${path} must be a whole number from ${min} to ${max}`, path);
  return v;
}

function share(value: number | undefined, fallback: number, path: string): number {
  const v = value ?? fallback;
  if (typeof v !== "number" || !(v >= 0 && v <= 1)) throw bad(`${path} must be from 0 to 1`, path);
  return v;
}

interface Resolved {
  settings: EvalSettings;
  config: OffloadConfig;
  cost: CostSettings;
  turn: TurnSettings;
  concurrency: number;
}

function resolve(o: EvalOptions): Resolved {
  if (!EVAL_PROVIDERS.includes(o.provider))
    throw bad(
      `unknown provider ${JSON.stringify(o.provider)}: ${EVAL_PROVIDERS.join(", ")}`,
      "provider",
    );
  if (typeof o.model !== "string" || o.model.trim() === "")
    throw bad("a model is required (the one your deployment calls)", "model");
  if (typeof o.apiKey !== "string" || o.apiKey.trim() === "")
    throw bad(`no API key: set ${KEY_VARS[o.provider]}`, "apiKey");
  if (!Array.isArray(o.sessions))
    throw bad("sessions must be an array (parseSessions)", "sessions");
  // Checked on its own first, so a mistake is named as the caller wrote it (`config.x`).
  const patch = parseConfigPatch(o.config ?? {}, "config");
  const config = resolveConfig(RECOMMENDED_CONFIG, patch);
  const pricedAs = config.tool_result_pricing_model ?? o.model;
  const price = resolveModel(pricedAs);
  if (price === null)
    throw bad(
      `no price for model ${JSON.stringify(pricedAs)}: the eval cannot bound its spend (nor would the gate offload for it); set tool_result_pricing_model in the config to the model it bills as`,
      "model",
    );
  const judgePrice = o.judge === undefined ? null : resolveModel(o.judge);
  if (o.judge !== undefined && judgePrice === null)
    throw bad(`no price for the judge model ${JSON.stringify(o.judge)}`, "judge");
  const client = o.client ?? DEFAULTS.client;
  if (client !== "cached" && client !== "uncached")
    throw bad("client must be cached or uncached", "client");
  const maxTokens = whole(o.maxTokens, DEFAULTS.maxTokens, 1, 200_000, "maxTokens");
  const maxHops = whole(o.maxHops, DEFAULT_MAX_HOPS, 0, 16, "maxHops");
  if (o.maxUsd !== undefined && !(typeof o.maxUsd === "number" && o.maxUsd > 0))
    throw bad("maxUsd must be a positive number of dollars", "maxUsd");
  if (o.sessions.length === 0) throw bad(`${o.input ?? "the input"} holds no sessions`, "sessions");
  const settings: EvalSettings = {
    input: o.input ?? "sessions",
    provider: o.provider,
    model: o.model,
    endpoint: endpointOf(o.provider, o.baseUrl),
    config: { ...RECOMMENDED_CONFIG, ...patch },
    sample: whole(o.sample, DEFAULTS.sample, 1, 1000, "sample"),
    seed: whole(o.seed, DEFAULTS.seed, 0, 2 ** 32 - 1, "seed"),
    aa_share: share(o.aaShare, DEFAULTS.aaShare, "aaShare"),
    judge: o.judge ?? null,
    similarity: share(o.similarity, DEFAULTS.similarity, "similarity"),
    client,
    max_tokens: maxTokens,
    max_hops: maxHops,
  };
  try {
    new URL(settings.endpoint);
  } catch {
    throw bad(`the base URL ${JSON.stringify(o.baseUrl)} is not a URL`, "baseUrl");
  }
  return {
    settings,
    config,
    cost: {
      provider: o.provider,
      client,
      price,
      judge: judgePrice,
      recallProbability: config.tool_result_offload_recall_probability,
    },
    turn: {
      request: { provider: o.provider, model: o.model, client, maxTokens, temperature: 0 },
      config,
      secret: SECRET,
      extractor: attachmentExtractor(),
    },
    concurrency: whole(o.concurrency, DEFAULTS.concurrency, 1, 64, "concurrency"),
  };
}

/**
 * Draws the sample and estimates what the eval will cost, without calling the provider: every
 * session is replayed through `compact` to find the calls the config changes.
 */
export async function planEval(options: EvalOptions): Promise<EvalPlan> {
  const r = resolve(options);
  const report = (done: number, total: number) =>
    options.onProgress?.({ phase: "sampling", done, total, spent_usd: 0 });
  const candidates = await candidateCalls(options.sessions, r.turn, report);
  const calls = options.sessions.reduce((n, s) => n + s.calls.length, 0);
  if (candidates.length === 0)
    throw new OffloadError(
      "unprocessable",
      `the config changes none of the ${calls} calls in ${r.settings.input} (no result stubbed, shortened or extracted): there is nothing to compare`,
      { path: "sessions" },
    );
  const sample = drawSample(candidates, r.settings.sample, r.settings.seed, r.settings.aa_share);
  const expected = sample.reduce((sum, c) => sum + estimateCall(c, r.cost), 0);
  const { endpoint: _, input: __, similarity: ___, ...sent } = r.settings;
  const fingerprint = await digest(
    JSON.stringify({
      sent,
      config: r.config,
      sessions: await digest(JSON.stringify(options.sessions)),
    }),
  );
  return {
    settings: r.settings,
    sessions: options.sessions.length,
    calls,
    candidates: candidates.length,
    sample,
    estimate: {
      expected_usd: expected,
      provider_calls: sample.reduce((n, c) => n + (c.aa ? 3 : 2), 0),
    },
    fingerprint,
  };
}

/**
 * Runs the eval: A, B (and A/A) for each sampled call, at most `concurrency` at once, each result
 * appended to the log as it comes; then the report. Runs only with `yes` or under `maxUsd`.
 *
 * @example
 * const report = await evaluate({
 *   sessions: parseSessions(text), provider: "anthropic", model: "claude-sonnet-4-6",
 *   apiKey: process.env.ANTHROPIC_API_KEY!, sample: 20, seed: 1, maxUsd: 2,
 * });
 * if (report.verdict === "regression") process.exitCode = 1;
 */
export async function evaluate(options: EvalOptions): Promise<EvalReport> {
  const r = resolve(options);
  const plan = options.plan ?? (await planEval(options));
  if (options.yes !== true && options.maxUsd === undefined)
    throw new OffloadError(
      "invalid_argument",
      `the eval would spend about $${plan.estimate.expected_usd.toFixed(2)}: confirm with yes, or set a maxUsd ceiling`,
      { path: "yes" },
    );
  const { results, append } = await openLog(options.log ?? memoryLog(), plan.fingerprint);
  const budget = new Budget(results.spent, options.maxUsd ?? null);
  const controller = new AbortController();
  const onAbort = () => controller.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) controller.abort();
  const retrying = retryingFetch({
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    sleep: options.sleep ?? ((ms) => new Promise((done) => setTimeout(done, ms))),
    signal: controller.signal,
  });
  const metered = (price: ModelPrice, cap: number) =>
    meteredFetch(retrying, budget, options.provider, price, cap);
  const ctx: CallContext = {
    provider: options.provider,
    endpoint: plan.settings.endpoint,
    headers: providerHeaders(options.provider, options.apiKey),
    fetch: metered(r.cost.price, r.settings.max_tokens),
    turn: r.turn,
    price: r.cost.price,
    maxHops: r.settings.max_hops,
    temperatures: new Temperatures(),
    judge:
      options.judge === undefined
        ? null
        : {
            model: options.judge,
            price: r.cost.judge!,
            fetch: metered(r.cost.judge!, JUDGE_MAX_TOKENS),
          },
  };
  const run = new Run(ctx, options.sessions, results, append, controller);
  const progress = (done: number) =>
    options.onProgress?.({
      phase: "calling",
      done,
      total: plan.sample.length,
      spent_usd: budget.spent,
    });
  let next = 0;
  let done = 0;
  progress(0);
  const worker = async () => {
    while (next < plan.sample.length && run.fatal === null && run.stopped === null) {
      if (controller.signal.aborted) {
        run.stopped ??= "aborted";
        break;
      }
      await run.call(plan.sample[next++]!);
      progress(++done);
    }
  };
  try {
    await Promise.all(Array.from({ length: r.concurrency }, worker));
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    // Calls whose arm failed were billed all the same: the log keeps the sum, so a resumed run's
    // ceiling counts it.
    const unlogged = budget.spent - results.spent - run.logged;
    if (unlogged > 1e-9) await append({ kind: "unlogged", usd: unlogged });
  }
  if (run.fatal !== null)
    throw new OffloadError(
      "upstream_error",
      `the provider refused the eval's calls: ${run.fatal.message}`,
    );
  if (run.succeeded === 0 && run.failures.length > 0)
    throw new OffloadError(
      "upstream_error",
      `every call to the provider failed; the first: ${run.failures[0]!.message}`,
    );
  return summarise({
    settings: plan.settings,
    sessions: plan.sessions,
    calls: plan.calls,
    candidates: plan.candidates,
    sample: plan.sample,
    results,
    failures: run.failures,
    stopped: run.stopped,
    estimate: plan.estimate,
  });
}

/** The calls of one run: what succeeded goes to the log, what failed to `failures`. */
class Run {
  readonly failures: Failure[] = [];
  fatal: ProviderFailure | null = null;
  stopped: EvalReport["stopped"] = null;
  succeeded = 0;
  /** Dollars of the records this run appended. */
  logged = 0;
  readonly ctx: CallContext;
  readonly sessions: readonly ReplaySession[];
  readonly results: LoggedResults;
  readonly append: (record: ArmRecord | JudgeRecord) => Promise<void>;
  readonly controller: AbortController;

  constructor(
    ctx: CallContext,
    sessions: readonly ReplaySession[],
    results: LoggedResults,
    append: (record: ArmRecord | JudgeRecord) => Promise<void>,
    controller: AbortController,
  ) {
    this.ctx = ctx;
    this.sessions = sessions;
    this.results = results;
    this.append = append;
    this.controller = controller;
  }

  /** A, B, A2 (on the A/A share) and the judge's verdicts of one sampled call, skipping what the log has. */
  async call(c: SampledCall): Promise<void> {
    const session = this.sessions[c.session_index]!;
    const a = await this.arm(c, "A", () => runA(this.ctx, session, c, "A"));
    if (a === null) return;
    const b = await this.arm(c, "B", () => runB(this.ctx, session, c));
    const a2 = c.aa ? await this.arm(c, "A2", () => runA(this.ctx, session, c, "A2")) : null;
    if (this.ctx.judge === null) return;
    const question = lastUserText(session, c.call);
    for (const [pair, second] of [
      ["AB", b],
      ["AA", a2],
    ] as const) {
      if (second === null || !isTextPair(a.answer, second.answer)) continue;
      if (normaliseText(a.answer.text) === normaliseText(second.answer.text)) continue;
      const key = judgeKey(c.id, pair);
      if (this.results.judges.has(key)) continue;
      const out = await this.guard(c, `judge ${pair}`, () =>
        runJudge(this.ctx, c.id, pair, question, a.answer, second.answer),
      );
      if (out !== null) this.results.judges.set(key, out);
    }
  }

  async arm(c: SampledCall, arm: Arm, send: () => Promise<Outcome<ArmRecord>>) {
    const key = armKey(c.id, arm);
    const logged = this.results.arms.get(key);
    if (logged !== undefined) return logged;
    const out = await this.guard(c, arm, send);
    if (out !== null) this.results.arms.set(key, out);
    return out;
  }

  /** One arm or verdict: its record logged, or why it failed kept (or the run stopped). */
  async guard<T extends ArmRecord | JudgeRecord>(
    c: SampledCall,
    what: string,
    send: () => Promise<Outcome<T>>,
  ): Promise<T | null> {
    if (this.fatal !== null || this.stopped !== null || this.controller.signal.aborted) return null;
    const out = await send();
    if (!out.ok) {
      if (out.failure.ceiling === true) this.stopped ??= "max_usd";
      else if (this.controller.signal.aborted) this.stopped ??= "aborted";
      else {
        this.failures.push({ id: c.id, what, message: out.failure.message });
        if (isFatal(out.failure) || (this.succeeded === 0 && this.failures.length >= FAIL_FAST)) {
          this.fatal ??= out.failure;
          this.controller.abort();
        }
      }
      return null;
    }
    this.succeeded++;
    this.logged += out.value.usd;
    await this.append(out.value);
    return out.value;
  }
}

/**
 * The provider calls of one sampled call. A: the request as the client sent it. B: the session's
 * earlier calls replayed through `compact` (so its stubs are the sticky ones a deployment would
 * show), then this call through `offloadFetch`, the proxy's own turn and recall loop in this
 * process: B's recall_tool_result calls are answered from the store and the provider called again,
 * and the answer compared is the one the user would get. The judge: one question per pair.
 *
 * Every call asks for temperature 0; a model that refuses it (reasoning models take only their
 * default) is asked again without, and from then on every call to it goes without.
 */

import { addUsageTokens, NO_USAGE, type UsageTokens, usageUsd } from "../core/billing.ts";
import { adapterFor } from "../core/compact.ts";
import { decodeString, parseJsonSpans } from "../core/json/scan.ts";
import type { ModelPrice } from "../core/pricing.ts";
import { offloadFetch } from "../integrations/fetch.ts";
import type { OffloadCallReport } from "../integrations/options.ts";
import { hostOf } from "../proxy/upstream.ts";
import type { ReplaySession } from "../replay/types.ts";
import { readAnswer, usageOf } from "./answers.ts";
import { CEILING, JUDGE_MAX_TOKENS } from "./cost.ts";
import { judgePrompt, judgeRequest, parseVerdict } from "./judge.ts";
import { DIALECTS, type ProviderFailure, providerFailure, refusesTemperature } from "./provider.ts";
import { callRequest } from "./requests.ts";
import { SessionReplay, type TurnSettings } from "./session-replay.ts";
import type {
  AnswerView,
  ArmRecord,
  EvalProvider,
  JudgeRecord,
  RecallCall,
  SampledCall,
  ShownResult,
} from "./types.ts";

/** Chars of a stubbed result's text, and of a recall call's arguments, the report keeps. */
const SHOWN_CHARS = 2000;
const ARGUMENTS_CHARS = 500;

/** Temperature 0 per model until the model refuses it. */
export class Temperatures {
  readonly #refused = new Set<string>();
  of(model: string): number | null {
    return this.#refused.has(model) ? null : 0;
  }
  refuse(model: string): void {
    this.#refused.add(model);
  }
}

export interface CallContext {
  provider: EvalProvider;
  endpoint: string;
  headers: Headers;
  /** The fetch every call to the model goes through (retried, metered). */
  fetch: typeof fetch;
  turn: TurnSettings;
  price: ModelPrice;
  maxHops: number;
  temperatures: Temperatures;
  /** The judge, its price and its own metered fetch. */
  judge: { model: string; price: ModelPrice; fetch: typeof fetch } | null;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; failure: ProviderFailure };

type Sent = Outcome<unknown>;

async function post(fetcher: typeof fetch, ctx: CallContext, body: string): Promise<Sent> {
  let res: Response;
  try {
    res = await fetcher(ctx.endpoint, { method: "POST", headers: ctx.headers, body });
  } catch (e) {
    if (e === CEILING)
      return {
        ok: false,
        failure: { status: null, message: CEILING.message, param: null, ceiling: true },
      };
    const why = e instanceof Error ? e.message : String(e);
    return {
      ok: false,
      failure: {
        status: null,
        message: `cannot reach ${hostOf(ctx.endpoint)}: ${why}`,
        param: null,
      },
    };
  }
  if (!res.ok) return { ok: false, failure: await providerFailure(res) };
  const text = await res.text();
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    const failure = {
      status: res.status,
      message: `the answer from ${hostOf(ctx.endpoint)} is not JSON`,
      param: null,
    };
    return { ok: false, failure };
  }
}

/** `send(temperature)`; once more without a temperature when the model refuses it. */
async function withTemperature<T>(
  ctx: CallContext,
  model: string,
  send: (temperature: number | null) => Promise<Outcome<T>>,
): Promise<Outcome<T> & { temperature: number | null }> {
  const t = ctx.temperatures.of(model);
  const first = await send(t);
  if (first.ok || t === null || !refusesTemperature(first.failure))
    return { ...first, temperature: t };
  ctx.temperatures.refuse(model);
  return { ...(await send(null)), temperature: null };
}

/** A, or its repeat A2: the request as the client sent it. */
export async function runA(
  ctx: CallContext,
  session: ReplaySession,
  c: SampledCall,
  arm: "A" | "A2",
): Promise<Outcome<ArmRecord>> {
  const model = ctx.turn.request.model;
  const out = await withTemperature(ctx, model, (temperature) =>
    post(
      ctx.fetch,
      ctx,
      callRequest(session, session.calls[c.call]!, { ...ctx.turn.request, temperature }),
    ),
  );
  if (!out.ok) return out;
  const usage = usageOf(ctx.provider, out.value);
  return {
    ok: true,
    value: {
      kind: "call",
      id: c.id,
      arm,
      ok: true,
      answer: readAnswer(ctx.provider, out.value),
      provider_calls: 1,
      hops: 0,
      recalls: [],
      ending: null,
      usage,
      usd: usageUsd(ctx.price, usage),
      temperature: out.temperature,
    },
  };
}

interface Hop {
  request: string;
  answer: unknown;
}

/** B: this call through the proxy's loop, after the session's earlier calls. */
export async function runB(
  ctx: CallContext,
  session: ReplaySession,
  c: SampledCall,
): Promise<Outcome<ArmRecord>> {
  const model = ctx.turn.request.model;
  let hops: Hop[] = [];
  let report: OffloadCallReport | null = null;
  let problems: string[] = [];
  const out = await withTemperature(ctx, model, async (temperature): Promise<Sent> => {
    hops = [];
    problems = [];
    const request = { ...ctx.turn.request, temperature };
    const replay = new SessionReplay(session, { ...ctx.turn, request });
    for (let j = 0; j < c.call; j++) await replay.compactCall(j);
    const body = replay.request(c.call);
    // Each provider call of the loop (the first, then one per hop), as sent and as answered.
    const capture = (async (url: RequestInfo | URL, init?: RequestInit) => {
      const res = await ctx.fetch(url, init);
      const text = await res.text();
      if (res.ok) {
        let answer: unknown = null;
        try {
          answer = JSON.parse(text);
        } catch {
          // the loop passes it on as it is
        }
        hops.push({ request: String(init?.body ?? ""), answer });
      }
      return new Response(text, {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
      });
    }) as typeof fetch;
    const proxied = offloadFetch({
      store: replay.store,
      session: replay.ref,
      secret: ctx.turn.secret,
      // The provider's token counts price the reports' billed saving; the eval compares answers, and
      // must not spend the user's rate limit (or show in its request log) on them.
      config: { ...ctx.turn.config, tool_result_count_unsent: false },
      extractor: ctx.turn.extractor,
      maxHops: ctx.maxHops,
      fetch: capture,
      onReport: (r) => {
        report = r;
      },
      onProblem: (p) => {
        problems.push(`${p.code}: ${p.message}`);
      },
      log: () => {},
    });
    return post(proxied, ctx, body);
  });
  if (!out.ok) return out;
  const answer = readAnswer(ctx.provider, out.value);
  // The text compared is that of the call after which the model stopped: what it said while it
  // looked a stub up is shown in the report, not compared (A had no reason to say it).
  const last = hops[hops.length - 1];
  const lastText = last === undefined ? "" : readAnswer(ctx.provider, last.answer).text;
  if (lastText !== "") answer.text = lastText;
  const usages = hops.map((h) => usageOf(ctx.provider, h.answer));
  const usage = usages.reduce<UsageTokens>(addUsageTokens, { ...NO_USAGE });
  const recalls: RecallCall[] = hops.flatMap((h, i) =>
    DIALECTS[ctx.provider]
      .inspect((h.answer ?? {}) as Record<string, unknown>)
      .recalls.map((r) => ({ hop: i, arguments: r.arguments.slice(0, ARGUMENTS_CHARS) })),
  );
  const summary = (report as OffloadCallReport | null)?.summary;
  return {
    ok: true,
    value: {
      kind: "call",
      id: c.id,
      arm: "B",
      ok: true,
      answer,
      provider_calls: hops.length,
      hops: Math.max(0, hops.length - 1),
      recalls,
      ending: summary?.proxy?.ending ?? null,
      usage,
      usd: usages.reduce((s, u) => s + usageUsd(ctx.price, u), 0),
      temperature: out.temperature,
      shown: shownResults(ctx.provider, hops[0]?.request ?? "", c),
      ...(problems.length === 0 ? {} : { problems }),
    },
  };
}

/** The changed results as B's first request shows them. */
function shownResults(provider: EvalProvider, raw: string, c: SampledCall): ShownResult[] {
  const texts = new Map<string, string>();
  try {
    for (const site of adapterFor(provider).analyze(raw, parseJsonSpans(raw)).sites) {
      const text =
        site.json_text !== undefined
          ? raw.slice(site.json_text.start, site.json_text.end)
          : site.texts.map((t) => decodeString(raw, t)).join("\n");
      texts.set(site.tool_use_id, text);
    }
  } catch {
    // B's request could not be read: the report shows no text
  }
  return c.changed.map((r) => {
    const text = texts.get(r.tool_use_id) ?? "";
    return { ...r, shown: text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text };
  });
}

/** The judge's verdict on two text answers. */
export async function runJudge(
  ctx: CallContext,
  id: string,
  pair: "AB" | "AA",
  question: string,
  a: AnswerView,
  b: AnswerView,
): Promise<Outcome<JudgeRecord>> {
  const judge = ctx.judge!;
  const prompt = judgePrompt(question, a.text, b.text);
  const out = await withTemperature(ctx, judge.model, (t) =>
    post(judge.fetch, ctx, judgeRequest(ctx.provider, judge.model, prompt, JUDGE_MAX_TOKENS, t)),
  );
  if (!out.ok) return out;
  const usage = usageOf(ctx.provider, out.value);
  const verdict = parseVerdict(readAnswer(ctx.provider, out.value).text);
  return {
    ok: true,
    value: { kind: "judge", id, pair, ...verdict, usage, usd: usageUsd(judge.price, usage) },
  };
}

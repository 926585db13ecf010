/**
 * `offloadMiddleware`: edge-offload for the AI SDK, on its provider-neutral prompt, so it serves
 * every provider the AI SDK speaks (Anthropic, OpenAI, Google, Mistral, Bedrock, OpenAI-compatible
 * servers…). Each call: splice back the recall answers the session remembers, compact the prompt
 * with the session's state (stubs in place, our recall tool added when an offload needs it), call the
 * model, and while the model asks for recall_tool_result alone, answer it from the ledger and call
 * the model again (up to the hop limit). The caller gets one result, or one stream, in which our tool
 * never appears; usage is summed over the hops.
 *
 * Prices come from the model's id (`model.modelId`); a model the price table does not know never
 * offloads (the report's `priced_as` is null) unless `tool_result_pricing_model` names one to price
 * it as. A store that fails, a session that cannot be named or a prompt the adapter cannot read
 * leaves the call as the app made it, and the app hears why (`onProblem`, `onReport`).
 */
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4Middleware,
} from "@ai-sdk/provider";
import { adapterFor, compact } from "../core/compact.ts";
import { anthropicPackage } from "../core/formats/ai-sdk.ts";
import type { Turn, TurnAsk } from "../core/ports.ts";
import { type PreparedRequest, prepareRequest, turnKeys } from "../core/prepare.ts";
import type { SessionRef } from "../core/types.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import { passThroughSummary, proxyPart, type Summary, summaryOf } from "../http/summary.ts";
import { type Ending, noticeText } from "../proxy/dialect.ts";
import { memoAnswers } from "../proxy/memo-answers.ts";
import type { ProxyMemo, ProxyStore, RecallParams } from "../proxy/port.ts";
import { countUnsent } from "../proxy/token-count.ts";
import { addUsage } from "../proxy/usage.ts";
import { signatureAnchors, spliceHops } from "./ai-sdk-hops.ts";
import { isOurCall, nextParams, rebuild, spliceRecalls, wireOf } from "./ai-sdk-prompt.ts";
import { streamTurn } from "./ai-sdk-stream.ts";
import {
  type Counter,
  decide,
  execute,
  finish,
  finishReasonOf,
  type Hop,
  inspect,
  type ModelCall,
  memosOf,
  type Prepared,
} from "./ai-sdk-turn.ts";
import {
  type InProcessOptions,
  passedThrough,
  resolveSession,
  type Settings,
  settingsOf,
} from "./options.ts";

/**
 * Where the middleware asks the provider's free token count of the results it stubs as they arrive
 * (Anthropic's `messages/count_tokens`, OpenAI's `responses/input_tokens`). Such a result is never sent,
 * so without a count its tokens, and the report's billed saving, rest on a character estimate.
 */
export interface TokenCounting {
  provider: "anthropic" | "openai";
  apiKey: string;
  /** The provider's base URL as the AI SDK's provider takes it (default `https://api.anthropic.com/v1`, `https://api.openai.com/v1`). */
  baseURL?: string;
  /** default: globalThis.fetch */
  fetch?: typeof fetch;
}

export interface OffloadMiddlewareOptions extends InProcessOptions<ModelCall> {
  /** The provider's token count of results stubbed on arrival (absent: estimated, and the report says so). */
  count?: TokenCounting;
}

const COUNT_BASE: Record<TokenCounting["provider"], string> = {
  anthropic: "https://api.anthropic.com/v1",
  openai: "https://api.openai.com/v1",
};

/** The counting endpoint and its headers, checked once (a wrong option is the app's setup: it throws). */
function counterOf(count: TokenCounting | undefined): Counter | null {
  if (count === undefined) return null;
  if (count.provider !== "anthropic" && count.provider !== "openai")
    throw new OffloadError("invalid_argument", 'count.provider must be "anthropic" or "openai"', {
      path: "count.provider",
    });
  if (typeof count.apiKey !== "string" || count.apiKey.trim() === "")
    throw new OffloadError("invalid_argument", "count.apiKey must be a non-empty string", {
      path: "count.apiKey",
    });
  const base = (count.baseURL ?? COUNT_BASE[count.provider]).replace(/\/+$/, "");
  const headers = new Headers({ "content-type": "application/json" });
  if (count.provider === "anthropic") {
    headers.set("x-api-key", count.apiKey);
    headers.set("anthropic-version", "2023-06-01");
  } else headers.set("authorization", `Bearer ${count.apiKey}`);
  const path =
    count.provider === "anthropic" ? "/messages/count_tokens" : "/responses/input_tokens";
  return {
    provider: count.provider,
    url: `${base}${path}`,
    headers,
    fetch: count.fetch ?? ((input, init) => globalThis.fetch(input, init)),
  };
}

/**
 * AI SDK middleware (`wrapLanguageModel({ model, middleware })`) that runs edge-offload on every
 * call of the model: compaction, the recall loop, sticky decisions in `store`.
 *
 * @example
 * const model = wrapLanguageModel({
 *   model: anthropic("claude-sonnet-4-6"),
 *   middleware: offloadMiddleware({
 *     store, session: chatId, secret: process.env.OFFLOAD_SECRET!,
 *     config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
 *   }),
 * });
 * const { text } = await generateText({ model, messages, tools });
 */
export function offloadMiddleware(options: OffloadMiddlewareOptions): LanguageModelV4Middleware {
  const settings = settingsOf(options);
  const counter = counterOf(options.count);
  return {
    specificationVersion: "v4",
    async wrapGenerate({ doGenerate, params, model }) {
      const prepared = await prepare(settings, counter, params, model, false);
      if (prepared === null) return doGenerate();
      return generateTurn(prepared);
    },
    async wrapStream({ doStream, params, model }) {
      const prepared = await prepare(settings, counter, params, model, true);
      if (prepared === null) return doStream();
      return streamTurn(prepared);
    },
  };
}

/** The call compacted, or null when it goes as the app made it (reported already). */
async function prepare(
  settings: Settings<ModelCall>,
  counter: Counter | null,
  params: LanguageModelV4CallOptions,
  model: LanguageModelV4,
  stream: boolean,
): Promise<Prepared | null> {
  const ref = await resolveSession(settings.session, () => ({ params, model }));
  if (ref instanceof OffloadError) {
    settings.problem(passedThrough(ref, "no session"), null);
    return null;
  }
  const store = settings.store;
  const asIs = (summary: Summary) => {
    settings.report({
      session: ref,
      format: "ai-sdk",
      summary: { ...summary, proxy: proxyPart(stream, 0) },
    });
    return null;
  };
  try {
    // The prompt is read before the session is asked when the app's layer turns compaction on, so
    // the session answers its config, the records and the memos at once; a session that turns it
    // on by its own layer alone is asked again once the prompt is read.
    const wire = wireOf(params, model);
    const read = () => prepareRequest("ai-sdk", adapterFor("ai-sdk"), wire);
    const askOf = (prepared: PreparedRequest | null): TurnAsk =>
      prepared === null
        ? { ids: [], names: [] }
        : {
            ...turnKeys(prepared),
            anchors: [...appCallIds(params), ...signatureAnchors(params)],
          };
    let prepared = settings.config({}).tool_result_compaction_enabled ? read() : null;
    let turn: Turn;
    const begin = async (): Promise<Turn | null> => {
      try {
        return await store.beginTurn(ref, askOf(prepared));
      } catch (e) {
        if (!isOffloadError(e) || e.type !== "storage_error") throw e;
        const message = `${e.message}; call passed through unchanged`;
        asIs({
          ...passThroughSummary("ai-sdk"),
          errors: [{ code: "storage_error", message }],
          errors_total: 1,
        });
        return null;
      }
    };
    const begun = await begin();
    if (begun === null) return null;
    turn = begun;
    const config = settings.config(turn.config);
    if (!config.tool_result_compaction_enabled) return asIs(passThroughSummary("ai-sdk"));
    if (prepared === null) {
      prepared = read();
      const again = await begin();
      if (again === null) return null;
      turn = again;
    }
    const recall: RecallParams = {
      mode: config.tool_result_recall_mode,
      max_chars: config.tool_result_recall_max_chars,
      window: config.tool_result_recall_window_chars,
    };
    const spliced = await spliceMemos(settings, store, ref, params, turn.memos);
    // The Anthropic provider package takes the recall tool mid-conversation (it adds the beta itself),
    // and its hops are split back into the app's history on later calls (ai-sdk-hops.ts).
    const keeps = anthropicPackage(model.provider);
    const out = await compact({
      format: "ai-sdk",
      request: spliced.count === 0 ? wire : wireOf(spliced.params, model),
      prepared: spliced.count === 0 ? prepared : undefined,
      session: ref,
      config,
      turn,
      secret: settings.secret,
      extractor: settings.extractor,
      sendsBetas: keeps,
      // Elsewhere the middleware answers recall calls in hops the app's messages do not keep.
      hops: !keeps,
    });
    // The provider's count of what this call stubs on arrival, asked beside the call (never before it).
    const counts =
      counter === null
        ? undefined
        : countUnsent({
            provider: counter.provider,
            fetcher: counter.fetch,
            url: counter.url,
            headers: counter.headers,
            prepared,
            cut: out.report.estimate?.cut,
          });
    return {
      settings,
      ref,
      store,
      turn,
      model,
      ...(counts === undefined ? {} : { counts }),
      params: out.changed ? rebuild(spliced.params, out.request, out.decisions) : spliced.params,
      intercept: out.report.recall_tool === "added",
      recall,
      summary: {
        ...summaryOf(out.report, out.changed, turn.notes),
        proxy: proxyPart(stream, spliced.count),
      },
    };
  } catch (e) {
    const err = isOffloadError(e) ? e : new OffloadError("internal", "preparing the call failed");
    if (!isOffloadError(e))
      settings.log(`[edge-offload] offloadMiddleware: ${String(e).slice(0, 200)}`);
    settings.problem(passedThrough(err, "call sent as it was"), ref);
    return null;
  }
}

/** The ids of the tool calls in the prompt: what a memo may be anchored on. */
function appCallIds(params: LanguageModelV4CallOptions): Set<string> {
  const ids = new Set<string>();
  for (const m of params.prompt)
    if (m.role === "assistant")
      for (const p of m.content) if (p.type === "tool-call") ids.add(p.toolCallId);
  return ids;
}

/**
 * The session's remembered recalls, answered again from the ledger and spliced in: a mixed turn's beside
 * the app's calls, a turn answered in hops split back into its hops.
 */
async function spliceMemos(
  settings: Settings<ModelCall>,
  store: ProxyStore,
  ref: SessionRef,
  params: LanguageModelV4CallOptions,
  memos: readonly ProxyMemo[],
): Promise<{ params: LanguageModelV4CallOptions; count: number }> {
  const mine = memos.filter(
    (m): m is Extract<ProxyMemo, { kind: "recall" | "hop" }> =>
      (m.kind === "recall" || m.kind === "hop") && m.format === "ai-sdk",
  );
  if (mine.length === 0) return { params, count: 0 };
  const ids = new Set([...appCallIds(params), ...signatureAnchors(params)]);
  const candidates = mine.filter((m) => m.anchors.some((a) => ids.has(a)));
  if (candidates.length === 0) return { params, count: 0 };
  const answers = await memoAnswers(candidates, { store, ref, log: settings.log });
  const hopped = spliceHops(params.prompt, candidates, answers);
  const recalls = candidates.filter((m) => m.kind === "recall");
  const { prompt, spliced } = spliceRecalls(hopped.prompt, recalls, answers);
  const count = hopped.spliced + spliced;
  return { params: count === 0 ? params : { ...params, prompt }, count };
}

async function generateTurn(p: Prepared): Promise<LanguageModelV4GenerateResult> {
  const first = await p.model.doGenerate(p.params);
  if (!p.intercept) {
    await finish(p, { hops: 0, recalls: 0, ending: "done", memos: [], usages: [first.usage] });
    return first;
  }
  const results: LanguageModelV4GenerateResult[] = [first];
  const hops: Hop[] = [];
  let recalls = 0;
  for (;;) {
    const last = results[results.length - 1]!;
    const ins = inspect(last.content, last.finishReason.unified === "tool-calls");
    const next = decide(ins, hops.length, p.settings.maxHops);
    if (next !== "hop") {
      if (next === "mixed") recalls += (await execute(p, ins.ours)).length;
      // Saved before the app's next step, which splices a mixed turn's recalls (and hops) back in.
      const memos = memosOf(p, ins, next, hops, last.content);
      const usages = results.map((r) => r.usage);
      await finish(p, { hops: hops.length, recalls, ending: next, memos, usages });
      return merge(results, next, p.settings.maxHops);
    }
    const answered = await execute(p, ins.ours);
    recalls += answered.length;
    hops.push({ content: last.content, calls: ins.ours, results: answered });
    try {
      results.push(await p.model.doGenerate(nextParams(p.params, hops)));
    } catch (e) {
      // A hop the provider refuses is the app's answer (retrying the call retries it all); the hops
      // that ran are still logged.
      const usages = results.map((r) => r.usage);
      await finish(p, { hops: hops.length, recalls, ending: "done", memos: [], usages });
      throw e;
    }
  }
}

/** The one result the app reads: every hop's content without our calls, usage summed. */
function merge(
  results: readonly LanguageModelV4GenerateResult[],
  ending: Ending,
  maxHops: number,
): LanguageModelV4GenerateResult {
  const first = results[0]!;
  const last = results[results.length - 1]!;
  const content = results.flatMap((r) => r.content.filter((c) => !isOurCall(c)));
  if (content.length === 0 || (ending === "exhausted" && !content.some((c) => c.type === "text")))
    content.push({ type: "text", text: noticeText(ending, maxHops) });
  return {
    ...last,
    content,
    finishReason: finishReasonOf(last.finishReason, ending, content),
    usage: results.reduce<unknown>((sum, r) => addUsage(sum, r.usage), null) as typeof last.usage,
    warnings: first.warnings,
    ...(first.request === undefined ? {} : { request: first.request }),
    ...(last.response === undefined
      ? {}
      : {
          response: {
            ...last.response,
            ...(first.response?.id === undefined ? {} : { id: first.response.id }),
          },
        }),
  };
}

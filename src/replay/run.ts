/**
 * The replay: every call of every session, under every policy, priced by the cache simulation. References
 * a policy removed cost a recall hop (one extra call: the policy's prompt, then that prompt plus the recall
 * call and its answer) or, when the policy has no way back, count as lost. By default a hop's exchange (the
 * recall call and its answer) stays in the conversation, as an agent's history keeps a tool call and its
 * result: every later request of the session carries it where it happened, the policy sees it like any other
 * part of the prompt, and a later reference whose quote is in a recalled slice still there needs no new hop
 * (`hops: "dropped"` is the proxy's hop instead, out of the client's sight).
 */

import { resolveModel } from "../core/pricing.ts";
import { OffloadError } from "../errors.ts";
import { BlockCache, textOfResult } from "./blocks.ts";
import { CacheSim } from "./cache.ts";
import { callTimes, type GapModel } from "./gaps.ts";
import { type Policy, type Recovery, resultsOf } from "./policy.ts";
import { detectReferences, type Reference } from "./references.ts";
import type {
  Block,
  CallCost,
  Client,
  KindCounts,
  Message,
  PolicyTotals,
  ReplayReport,
  ReplaySession,
  Request,
  SessionResult,
} from "./types.ts";

/** A session dearer than under `none` by more than this share (floating-point noise is not a loss). */
export const DEARER_EPSILON = 1e-9;

/** Output tokens of the call that asks for a recall (the tool_use block). */
export const RECALL_CALL_OUTPUT_TOKENS = 60;

export interface ReplayOptions {
  model: string;
  client: Client;
  policies: Policy[];
  /** Times calls of sessions that carry no timestamps (see gaps.ts); without it, all within the TTL. */
  gap?: GapModel;
  /**
   * Where a recall hop's exchange goes after the hop: `kept` (default), in the conversation from then on,
   * as an agent that runs the recall tool itself keeps it (the compact and recall API; its second call is
   * then the agent's own request, through the policy); `dropped`, gone from later prompts, as with the
   * proxy and the in-process loops, which run hops out of the client's sight (docs/proxy.md, "What the
   * next turn holds"; a mixed turn's exchange, which the proxy splices back, is not modelled).
   */
  hops?: HopExchange;
  /**
   * Each call's simulated usage told back to the policy that sent it (`PolicyRun.billed`), as a deployment
   * reports it (the proxy reads it from the answers; a compact client posts it): edge-offload then
   * calibrates its token estimates on it, as it does live (on by default since the calibration is; `false`
   * prices the raw estimates throughout, as the replay did before: docs/measure.md says what it changes).
   */
  usage?: boolean;
  /**
   * Each assistant message opens with a thinking block, as a model with preserved thinking answers (Claude
   * Code's default model does): edge-offload then keeps what precedes the latest one as it was sent
   * (core/turn/frozen.ts). Every policy sees the same blocks.
   */
  thinking?: boolean;
  /** Called after each session and policy (progress). */
  onProgress?: (done: number, total: number) => void;
  /** Called for every call charged (a recall hop's two calls each), to explain a session's cost. */
  onCall?: (e: CallEvent) => void;
}

export type HopExchange = "kept" | "dropped";

/** One charged call: which session, policy and client call (0-based), whether it is a hop, its cost. */
export interface CallEvent {
  session: string;
  policy: string;
  call: number;
  /** 0: the call as sent; 1: a recall hop's second call (the prompt with the recalled slices). */
  hop: 0 | 1;
  cost: CallCost;
}

/**
 * A recall hop's exchange: the assistant message of the recall calls and the user message of their answers,
 * which the conversation holds right after the hop's prompt, before the answer the model then wrote (the
 * recorded `messages[at]`).
 */
export interface RecallExchange {
  at: number;
  messages: [Message, Message];
}

/**
 * The request of the call whose prompt is the first `n` messages, as the client builds it, with the recall
 * exchanges of earlier hops at their places (those at or before `n`, in the order they happened).
 */
export function requestFor(
  session: ReplaySession,
  n: number,
  model: string,
  client: Client,
  exchanges: readonly RecallExchange[] = [],
  thinking = false,
): Request {
  const messages = session.messages.slice(0, n).map((m) => (thinking ? withThinking(m) : m));
  // Inserted from the last place back, so earlier places keep their indexes; a stable sort keeps two
  // exchanges at one place in the order they happened.
  const placed = exchanges.filter((e) => e.at <= n).sort((a, b) => a.at - b.at);
  for (let k = placed.length - 1; k >= 0; k--)
    messages.splice(placed[k]!.at, 0, ...placed[k]!.messages);
  if (client !== "uncached" && messages.length > 0) {
    // The client's advancing breakpoint: a cache_control marker on the last block of the prompt.
    const last = messages[messages.length - 1]!;
    const blocks: Block[] =
      typeof last.content === "string" ? [{ type: "text", text: last.content }] : last.content;
    const marked = blocks.map((b, i) =>
      i === blocks.length - 1 ? { ...b, cache_control: { type: "ephemeral" } } : b,
    );
    messages[messages.length - 1] = { ...last, content: marked };
  }
  const request: Request = { model, max_tokens: 8192, messages };
  if (session.system !== undefined) request.system = session.system;
  if (session.tools !== undefined && session.tools.length > 0) request.tools = session.tools;
  else request.tools = toolsUsed(session);
  return request;
}

/** An assistant message opened by a thinking block (`--thinking`); its signature stands for the model's. */
function withThinking(m: Message): Message {
  if (m.role !== "assistant") return m;
  const blocks: Block[] =
    typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
  return { ...m, content: [{ type: "thinking", thinking: "", signature: "replay" }, ...blocks] };
}

/** The swe/api files carry no tool definitions: declare the names their calls use. */
function toolsUsed(session: ReplaySession): unknown[] {
  const names = new Set<string>();
  for (const m of session.messages)
    if (typeof m.content !== "string")
      for (const b of m.content)
        if (b.type === "tool_use" && typeof b.name === "string") names.add(b.name);
  return [...names].map((name) => ({
    name,
    description: `the ${name} tool`,
    input_schema: { type: "object" },
  }));
}

/** A reference's quote is in one of its sources as sent (some results share an id). */
export function available(sent: Map<string, Block[]>, ref: Reference): boolean {
  return ref.sources.some((id) =>
    (sent.get(id) ?? []).some((b) => textOfResult(b.content).includes(ref.quote)),
  );
}

/**
 * The results of a request as sent, each with the recall answers read from it still in the request
 * (`recalledFrom`: recall call id → the result it read): a quote in a slice the model recalled earlier is in
 * view, however the policy left the result itself.
 */
export function resultsInView(
  sent: Request,
  recalledFrom: ReadonlyMap<string, string>,
): Map<string, Block[]> {
  const results = resultsOf(sent);
  for (const [callId, source] of recalledFrom) {
    const answers = results.get(callId);
    if (answers !== undefined) results.set(source, [...(results.get(source) ?? []), ...answers]);
  }
  return results;
}

async function replaySession(
  session: ReplaySession,
  policy: Policy,
  refs: Reference[],
  opts: ReplayOptions,
): Promise<SessionResult> {
  const price = resolveModel(opts.model)!;
  const run = policy.start({ model: opts.model, client: opts.client, session: session.id });
  const sim = new CacheSim(price, opts.client === "automatic" ? "automatic" : "breakpoints");
  const blocks = new BlockCache();
  const byTurn = new Map<number, Reference[]>();
  for (const r of refs) byTurn.set(r.turn, [...(byTurn.get(r.turn) ?? []), r]);
  const result: SessionResult = {
    session: session.id,
    calls: 0,
    usd: 0,
    prompt_tokens: 0,
    read_tokens: 0,
    recall_hops: 0,
    lost_references: 0,
    references: 0,
    references_by_kind: { corpus: 0, quote: 0, token: 0 },
    lost_by_kind: { corpus: 0, quote: 0, token: 0 },
  };
  const times = callTimes(session, opts.gap);
  const keep = opts.hops !== "dropped";
  // The hops' exchanges so far, and which result each recall call read.
  const exchanges: RecallExchange[] = [];
  const recalledFrom = new Map<string, string>();
  let at: number | undefined;
  let call = 0;
  const charge = async (request: Request, output: number, hop: 0 | 1 = 0) => {
    const c = sim.call(blocks.blocksOf(request), output, at);
    if (opts.usage !== false) await run.billed?.(c);
    opts.onCall?.({ session: session.id, policy: policy.name, call, hop, cost: c });
    result.calls++;
    result.usd += c.usd;
    result.prompt_tokens += c.prompt_tokens;
    result.read_tokens += c.read_tokens;
  };
  for (const [i, n] of session.calls.entries()) {
    at = times?.[i];
    call = i;
    const answer: Message | undefined =
      session.messages[n]?.role === "assistant" ? session.messages[n] : undefined;
    const outputTokens = blocks.tokensOf(answer);
    const sent = await run.send(
      requestFor(session, n, opts.model, opts.client, exchanges, opts.thinking),
      at,
      i,
    );
    const needs = byTurn.get(n) ?? [];
    result.references += needs.length;
    for (const ref of needs) result.references_by_kind[ref.kind]++;
    const sentResults = resultsInView(sent, recalledFrom);
    const recoveries: Recovery[] = [];
    for (const ref of needs) {
      if (available(sentResults, ref)) continue;
      const rec = await run.recover(ref.sources[0]!, ref.quote);
      if (rec === null) {
        result.lost_references++;
        result.lost_by_kind[ref.kind]++;
        continue;
      }
      if (!keep) {
        recoveries.push(rec);
        continue;
      }
      // The call's id made unique in the session (a result may be recalled again later): the exchange stays.
      const id = `${String(rec.call.id)}_${i}`;
      recalledFrom.set(id, ref.sources[0]!);
      recoveries.push({ call: { ...rec.call, id }, result: { ...rec.result, tool_use_id: id } });
    }
    if (recoveries.length === 0) {
      await charge(sent, outputTokens);
      continue;
    }
    // The hop: the model first asks for the slices (parallel tool calls), then answers with them in view.
    result.recall_hops++;
    await charge(sent, RECALL_CALL_OUTPUT_TOKENS * recoveries.length);
    const exchange: RecallExchange = {
      at: n,
      messages: [
        { role: "assistant", content: recoveries.map((r) => r.call) },
        { role: "user", content: recoveries.map((r) => r.result) },
      ],
    };
    if (!keep) {
      // The proxy's hop: its second call is the prompt as sent with the exchange appended.
      await charge(
        { ...sent, messages: [...sent.messages, ...exchange.messages] },
        outputTokens,
        1,
      );
      continue;
    }
    // The agent ran the recall itself: its next request is its own, the exchange in its history, through
    // the policy like any other (the client's breakpoint, if it sets one, now on the recall's answer).
    exchanges.push(exchange);
    const next = requestFor(session, n, opts.model, opts.client, exchanges, opts.thinking);
    await charge(await run.send(next, at, i), outputTokens, 1);
  }
  return result;
}

/**
 * Replays every session call by call under each policy, pricing each call with the model's rates and a
 * prompt-cache simulation, and counting the references each policy lost or had to recall.
 */
export async function replay(
  sessions: readonly ReplaySession[],
  opts: ReplayOptions,
): Promise<ReplayReport> {
  if (resolveModel(opts.model) === null)
    throw new OffloadError(
      "invalid_argument",
      `unknown model ${JSON.stringify(opts.model)}: the replay needs its prices`,
    );
  if (opts.client === "automatic" && resolveModel(opts.model)!.provider !== "openai")
    throw new OffloadError(
      "invalid_argument",
      `the automatic client follows OpenAI's caching rules: ${JSON.stringify(opts.model)} is not an OpenAI model`,
    );
  const perPolicy = new Map<string, SessionResult[]>(opts.policies.map((p) => [p.name, []]));
  const total = sessions.length * opts.policies.length;
  let done = 0;
  for (const session of sessions) {
    const refs = detectReferences(session);
    for (const policy of opts.policies) {
      perPolicy.get(policy.name)!.push(await replaySession(session, policy, refs, opts));
      opts.onProgress?.(++done, total);
    }
  }
  const none = perPolicy.get("none");
  const policies: PolicyTotals[] = opts.policies.map((p) => {
    const t = totals(p.name, perPolicy.get(p.name)!, none);
    const rules = p.toolRules?.();
    return rules === undefined || rules.length === 0 ? t : { ...t, tool_rules: rules };
  });
  return { model: opts.model, client: opts.client, sessions: sessions.length, policies };
}

function totals(
  name: string,
  results: SessionResult[],
  none: SessionResult[] | undefined,
): PolicyTotals {
  const sum = (f: (r: SessionResult) => number) => results.reduce((n, r) => n + f(r), 0);
  const usd = sum((r) => r.usd);
  const prompt = sum((r) => r.prompt_tokens);
  let worst: { ratio: number; session: string } | null = null;
  let dearer = 0;
  if (none !== undefined) {
    results.forEach((r, i) => {
      const base = none[i]!.usd;
      const ratio = base > 0 ? r.usd / base : 1;
      if (ratio > 1 + DEARER_EPSILON) dearer++;
      if (worst === null || ratio > worst.ratio) worst = { ratio, session: r.session };
    });
  }
  const baseTotal = none?.reduce((n, r) => n + r.usd, 0);
  const byKind = (f: (r: SessionResult) => KindCounts): KindCounts => ({
    corpus: sum((r) => f(r).corpus),
    quote: sum((r) => f(r).quote),
    token: sum((r) => f(r).token),
  });
  const w = worst as { ratio: number; session: string } | null;
  return {
    policy: name,
    total_usd: usd,
    ratio_to_none: baseTotal ? usd / baseTotal : null,
    prompt_tokens: prompt,
    cache_read_share: prompt > 0 ? sum((r) => r.read_tokens) / prompt : 0,
    recall_hops: sum((r) => r.recall_hops),
    lost_references: sum((r) => r.lost_references),
    references: sum((r) => r.references),
    references_by_kind: byKind((r) => r.references_by_kind),
    lost_by_kind: byKind((r) => r.lost_by_kind),
    worst_session_ratio: w?.ratio ?? null,
    worst_session: w?.session ?? null,
    dearer_sessions: dearer,
    sessions: results,
  };
}

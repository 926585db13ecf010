/**
 * One proxied call, after compaction: send the request, and while the model's answer asks for
 * recall_tool_result alone, answer it here and call the provider again (up to the hop limit); then
 * give the client one answer (or one event stream) in which our tool never appears. Usage is summed
 * over the hops; the hop count goes into the summary and onto the session's turn log line.
 */
import { type TurnUsage, turnUsage, usageUsd } from "../core/billing.ts";
import { resolveModel } from "../core/pricing.ts";
import type { SessionRef, TurnEstimate } from "../core/types.ts";
import { type Summary, summaryHeader } from "../http/summary.ts";
import type { Answer, Dialect, Ending, Hop, Inspection } from "./dialect.ts";
import { clientHeaders } from "./headers.ts";
import type { ProxyMemo, ProxyStore, RecallParams } from "./port.ts";
import { type RecallResult, runRecalls } from "./recalls.ts";
import { readSse, sseComment, textStream } from "./sse.ts";
import { BASE_URL_VARS, hostOf, send, unreachableMessage } from "./upstream.ts";
import { isRecord } from "./usage.ts";
import { watchStream } from "./usage-watch.ts";

export interface ProxyCall {
  dialect: Dialect;
  fetcher: typeof fetch;
  url: string;
  headers: Headers;
  /** The request as forwarded (compacted, spliced). */
  request: string;
  /**
   * Our recall tool is in the request (declared by the proxy): only then is an answer watched for
   * it.
   */
  intercept: boolean;
  maxHops: number;
  store: ProxyStore;
  ref: SessionRef;
  params: RecallParams;
  summary: Summary;
  /** The model the turn is priced as (its usage is priced so), null: the answer's. */
  model: string | null;
  /** The turn's estimates, calibrated against the usage the answers report. */
  estimate?: TurnEstimate | undefined;
}

interface TurnOutcome {
  hops: number;
  recalls: number;
  /** "failed": a hop could not be made or the provider refused it; the client got that error. */
  ending: Ending | "failed";
  memos: ProxyMemo[];
  /** Each provider call's usage object as the answer reported it, the client's call first. */
  usages: unknown[];
}

/** The provider's error shape, for a connection that could not be made or was cut (502). */
export function droppedResponse(
  dialect: Dialect,
  reason: string,
  summary: Summary | null,
): Response {
  const headers = new Headers({
    "content-type": "application/json",
    "x-offload-error": "upstream_error",
  });
  if (summary !== null) headers.set("x-offload-summary", summaryHeader(summary));
  return new Response(
    dialect.errorBody(502, unreachableMessage(dialect.provider, reason), "upstream_error"),
    { status: 502, headers },
  );
}

function responseHeaders(upstream: Response, summary: Summary): Headers {
  const headers = clientHeaders(upstream.headers);
  headers.set("x-offload-summary", summaryHeader(summary));
  return headers;
}

function isEventStream(res: Response): boolean {
  return (res.headers.get("content-type") ?? "").toLowerCase().includes("text/event-stream");
}

export async function proxyCall(call: ProxyCall): Promise<Response> {
  const first = await send(call.fetcher, call.url, call.headers, call.request);
  if (!first.ok) return droppedResponse(call.dialect, first.reason, call.summary);
  const res = first.response;
  // Errors, and answers that cannot hold our tool, go back exactly as the provider sent them.
  if (!res.ok)
    return new Response(res.body, {
      status: res.status,
      headers: responseHeaders(res, withProxy(call.summary, null, isEventStream(res))),
    });
  if (!call.intercept) return passedThrough(call, res);
  if (isEventStream(res)) return streamed(call, res);
  return buffered(call, res);
}

/**
 * An answer that cannot hold our tool: the client gets it as the provider sent it, and its usage is
 * kept on the turn's line (read on the side of a stream, or from the JSON body).
 */
async function passedThrough(call: ProxyCall, res: Response): Promise<Response> {
  const outcome = (usage: unknown): TurnOutcome => ({
    hops: 0,
    recalls: 0,
    ending: "done",
    memos: [],
    usages: [usage],
  });
  if (isEventStream(res) && res.body !== null) {
    const body = watchStream(res.body, call.dialect.format, (usage) =>
      finishTurn(call, outcome(usage), null),
    );
    return new Response(body, {
      status: res.status,
      headers: responseHeaders(res, withProxy(call.summary, null, true)),
    });
  }
  const text = await res.text();
  let usage: unknown = null;
  try {
    const answer: unknown = JSON.parse(text);
    if (isRecord(answer)) usage = answer.usage;
  } catch {
    // Not JSON: nothing to read, the client gets it as it is.
  }
  const done = outcome(usage);
  const summary = withProxy(call.summary, null, false, billedOf(call, done));
  await finishTurn(call, done, summary);
  return new Response(text, { status: res.status, headers: responseHeaders(res, summary) });
}

/**
 * A hop is another request: a client's idempotency key would make the provider replay the first
 * answer.
 */
function hopHeaders(headers: Headers, hop: number): Headers {
  const key = headers.get("idempotency-key");
  if (key === null) return headers;
  const out = new Headers(headers);
  out.set("idempotency-key", `${key}.hop${hop}`);
  return out;
}

/** Which way the loop goes after an answer. */
function decide(ins: Inspection, hops: number, maxHops: number): Ending | "hop" {
  if (ins.recalls.length === 0) return "done";
  if (ins.client_calls.length > 0) return "mixed";
  if (!ins.tool_turn) return "done";
  return hops >= maxHops ? "exhausted" : "hop";
}

async function execute(call: ProxyCall, recalls: Inspection["recalls"]): Promise<RecallResult[]> {
  return runRecalls(recalls, {
    store: call.store,
    ref: call.ref,
    params: call.params,
    count: true,
  });
}

async function buffered(call: ProxyCall, res: Response): Promise<Response> {
  const text = await res.text();
  let answer: Answer;
  try {
    answer = JSON.parse(text) as Answer;
  } catch {
    return new Response(text, { status: res.status, headers: responseHeaders(res, call.summary) });
  }
  const answers: Answer[] = [answer];
  const hops: Hop[] = [];
  let last = res;
  let recalls = 0;
  let ending: Ending;
  let inspection: Inspection;
  for (;;) {
    inspection = call.dialect.inspect(answers[answers.length - 1]!);
    const next = decide(inspection, hops.length, call.maxHops);
    if (next !== "hop") {
      ending = next;
      break;
    }
    const results = await execute(call, inspection.recalls);
    recalls += results.length;
    hops.push({ answer: answers[answers.length - 1]!, results });
    const sent = await send(
      call.fetcher,
      call.url,
      hopHeaders(call.headers, hops.length),
      call.dialect.nextRequest(call.request, hops),
    );
    // The hops that ran are logged even when one fails.
    const failed: TurnOutcome = {
      hops: hops.length,
      recalls,
      ending: "failed",
      memos: [],
      usages: answers.map((a) => a.usage),
    };
    if (!sent.ok) {
      const summary = withProxy(call.summary, failed, false);
      await finishTurn(call, failed, summary);
      return droppedResponse(call.dialect, sent.reason, summary);
    }
    last = sent.response;
    const body = await last.text();
    // A hop the provider refuses (a 429, a 500…) is the client's answer: retrying the call retries
    // it all.
    if (!last.ok) {
      const summary = withProxy(call.summary, failed, false);
      await finishTurn(call, failed, summary);
      return new Response(body, { status: last.status, headers: responseHeaders(last, summary) });
    }
    try {
      answers.push(JSON.parse(body) as Answer);
    } catch {
      return new Response(body, {
        status: last.status,
        headers: responseHeaders(last, call.summary),
      });
    }
  }
  if (ending === "mixed") recalls += (await execute(call, inspection.recalls)).length;
  const memos = call.dialect.memos({
    answers,
    inspection,
    ending,
    params: call.params,
    request: call.request,
  });
  const outcome: TurnOutcome = {
    hops: hops.length,
    recalls,
    ending,
    memos,
    usages: answers.map((a) => a.usage),
  };
  const summary = withProxy(call.summary, outcome, false, billedOf(call, outcome));
  await finishTurn(call, outcome, summary);
  if (hops.length === 0 && inspection.recalls.length === 0)
    return new Response(text, { status: res.status, headers: responseHeaders(res, summary) });
  const merged = call.dialect.merge(answers, ending, call.maxHops);
  const headers = responseHeaders(last, summary);
  headers.set("content-type", "application/json");
  return new Response(JSON.stringify(merged), { status: last.status, headers });
}

function streamed(call: ProxyCall, res: Response): Response {
  const summary = withProxy(call.summary, null, true);
  return new Response(textStream(events(call, res)), {
    status: res.status,
    headers: responseHeaders(res, summary),
  });
}

interface StreamState {
  hops: Hop[];
  answers: Answer[];
  recalls: number;
  outcome: TurnOutcome | null;
  /** The stream ended on an error event (a cut stream, a hop that failed or was refused). */
  failed: boolean;
}

async function* events(call: ProxyCall, first: Response): AsyncGenerator<string> {
  const state: StreamState = { hops: [], answers: [], recalls: 0, outcome: null, failed: false };
  try {
    yield* hopStream(call, first, state);
    const done = outcomeOf(state);
    const billed = billedOf(call, done);
    yield sseComment(
      `edge-offload ${JSON.stringify({ hops: done.hops, recalls: done.recalls, ending: done.ending, memos: done.memos.length, ...(billed === null ? {} : { usd: billed.usd, hop_usd: billed.hop_usd }) })}`,
    );
  } finally {
    // Also when the client went away mid-stream: the hops that ran are still logged.
    await finishTurn(call, outcomeOf(state), null);
  }
}

function outcomeOf(state: StreamState): TurnOutcome {
  return (
    state.outcome ?? {
      hops: state.hops.length,
      recalls: state.recalls,
      ending: state.failed ? "failed" : "done",
      memos: [],
      usages: state.answers.map((a) => a.usage),
    }
  );
}

async function* hopStream(
  call: ProxyCall,
  first: Response,
  state: StreamState,
): AsyncGenerator<string> {
  const merger = call.dialect.stream(call.maxHops);
  let res = first;
  for (;;) {
    merger.begin(state.hops.length);
    try {
      for await (const ev of readSse(res.body!)) yield merger.feed(ev);
    } catch (e) {
      state.failed = true;
      yield merger.error(
        `the ${call.dialect.provider} upstream's stream (${BASE_URL_VARS[call.dialect.provider]}) from ${hostOf(call.url)} was cut (${e instanceof Error ? e.message.slice(0, 120) : "connection lost"})`,
      );
      return;
    }
    const result = merger.result();
    if (!result.complete) {
      state.failed = true;
      // The provider's own error event already reached the client; otherwise say that the stream
      // stopped short.
      if (!result.errored) yield merger.error("the provider's stream ended before its last event");
      return;
    }
    state.answers.push(result.answer);
    const next = decide(result.inspection, state.hops.length, call.maxHops);
    if (next !== "hop") {
      const memos = call.dialect.memos({
        answers: state.answers,
        inspection: result.inspection,
        ending: next,
        params: call.params,
        request: call.request,
      });
      state.outcome = {
        hops: state.hops.length,
        recalls: state.recalls,
        ending: next,
        memos,
        usages: state.answers.map((a) => a.usage),
      };
      yield merger.finish(next);
      // A mixed turn's recalls run after the client has its answer: here they are only counted (the
      // answer is replayed when the next request is spliced).
      if (next === "mixed") {
        try {
          state.outcome.recalls += (await execute(call, result.inspection.recalls)).length;
        } catch {
          // Only the count is lost: a throw here would error the stream and drop the events still
          // queued.
        }
      }
      return;
    }
    const results = await execute(call, result.inspection.recalls);
    state.recalls += results.length;
    state.hops.push({ answer: result.answer, results });
    const sent = await send(
      call.fetcher,
      call.url,
      hopHeaders(call.headers, state.hops.length),
      call.dialect.nextRequest(call.request, state.hops),
    );
    if (!sent.ok) {
      state.failed = true;
      yield merger.error(unreachableMessage(call.dialect.provider, sent.reason));
      return;
    }
    if (!sent.response.ok || !isEventStream(sent.response)) {
      state.failed = true;
      yield merger.error(
        `the provider refused a recall hop (HTTP ${sent.response.status})`,
        await sent.response.text(),
      );
      return;
    }
    res = sent.response;
  }
}

function withProxy(
  summary: Summary,
  outcome: TurnOutcome | null,
  stream: boolean,
  billed: Billed | null = null,
): Summary {
  const proxy: NonNullable<Summary["proxy"]> = { stream, spliced: summary.proxy?.spliced ?? 0 };
  if (outcome !== null)
    Object.assign(proxy, {
      hops: outcome.hops,
      recalls: outcome.recalls,
      ending: outcome.ending,
      memos: outcome.memos.length,
    });
  if (billed === null) return { ...summary, proxy };
  // What the provider billed for this call; the recall hops' calls are a cost of offloading, so the
  // estimated saving is net of them.
  Object.assign(proxy, { usd: billed.usd, hop_usd: billed.hop_usd });
  return { ...summary, saved_usd: roundUsd(summary.saved_usd - billed.hop_usd), proxy };
}

interface Billed {
  usage: TurnUsage;
  /** Dollars for every call, and for the recall hops' calls alone (null: an unpriced model). */
  usd: number;
  hop_usd: number;
}

const roundUsd = (x: number) => Math.round(x * 1e9) / 1e9;

/** The call's measured usage (summed over hops) and its price, null when no answer carried usage. */
function billedOf(call: ProxyCall, outcome: TurnOutcome): Billed | null {
  const usage = turnUsage(call.dialect.format, outcome.usages, call.model, "proxy");
  if (usage === null) return null;
  const price = resolveModel(usage.model);
  if (price === null) return { usage, usd: 0, hop_usd: 0 };
  return {
    usage,
    usd: roundUsd(usageUsd(price, usage.tokens)),
    hop_usd: roundUsd(usageUsd(price, usage.tokens) - usageUsd(price, usage.first)),
  };
}

/**
 * Notes the hops on the turn's log line and keeps the memos. A failure loses only that (logged, and
 * said in the summary).
 */
async function finishTurn(
  call: ProxyCall,
  outcome: TurnOutcome,
  summary: Summary | null,
): Promise<void> {
  // A steady turn's line may not be written yet (its commit follows the answer): the store puts the
  // usage on it once it is there.
  const billed = billedOf(call, outcome);
  if (outcome.hops === 0 && outcome.recalls === 0 && outcome.memos.length === 0 && billed === null)
    return;
  try {
    await call.store.finishProxyTurn(call.ref, {
      turn_seq: call.store.lastTurnSeq,
      note: {
        hops: outcome.hops,
        recalls: outcome.recalls,
        exhausted: outcome.ending === "exhausted",
      },
      memos: outcome.memos,
      ...(billed === null ? {} : { usage: billed.usage }),
      ...(billed === null || call.estimate === undefined ? {} : { estimate: call.estimate }),
    });
  } catch {
    // The store logged the cause. The answer stands; a lost memo only means a later turn is sent as
    // the client holds it.
    if (summary !== null) {
      summary.errors.push({
        code: "storage_error",
        message:
          "the proxy's turn could not be saved; a mixed turn's recall answer will not be spliced into later requests",
      });
      summary.errors_total++;
    }
  }
}

/**
 * One proxied call, after compaction: send the request, and while the model's answer asks for
 * recall_tool_result alone, answer it here and call the provider again (up to the hop limit); then
 * give the client one answer (or one event stream) in which our tool never appears. Usage is summed
 * over the hops; the hop count goes into the summary and onto the session's turn log line. The
 * buffered loop is here, the streamed one in loop-stream.ts.
 */
import { type Summary, summaryHeader } from "../http/summary.ts";
import type { Answer, Dialect, Ending, Hop, Inspection } from "./dialect.ts";
import { billedOf, finishTurn, type TurnOutcome, withProxy } from "./loop-outcome.ts";
import {
  decide,
  execute,
  hopHeaders,
  isEventStream,
  type ProxyCall,
  responseHeaders,
} from "./loop-steps.ts";
import { streamed } from "./loop-stream.ts";
import { hideStreamUsage } from "./stream-usage.ts";
import { send, unreachableMessage } from "./upstream.ts";
import { isRecord } from "./usage.ts";
import { watchStream } from "./usage-watch.ts";

export type { ProxyCall } from "./loop-steps.ts";

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

export async function proxyCall(call: ProxyCall): Promise<Response> {
  const first = await send(call.fetcher, call.url, call.headers, call.request);
  const refused: TurnOutcome = { hops: 0, recalls: 0, ending: "failed", memos: [], usages: [] };
  if (!first.ok) {
    // The turn is still logged (its line, when the commit left it to the finish).
    await finishTurn(call, refused, null);
    return droppedResponse(call.dialect, first.reason, call.summary);
  }
  const res = first.response;
  // Errors, and answers that cannot hold our tool, go back exactly as the provider sent them.
  if (!res.ok) {
    await finishTurn(call, refused, null);
    return new Response(res.body, {
      status: res.status,
      headers: responseHeaders(res, withProxy(call.summary, null, isEventStream(res))),
    });
  }
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
    const watched = watchStream(res.body, call.dialect.format, (usage) =>
      finishTurn(call, outcome(usage), null),
    );
    const body = call.hideUsage === true ? hideStreamUsage(watched) : watched;
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
  // Buffered, the call's ending is known: no hop was made (the answer could not hold our tool).
  const summary = withProxy(call.summary, done, false, billedOf(call, done));
  await finishTurn(call, done, summary);
  return new Response(text, { status: res.status, headers: responseHeaders(res, summary) });
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

/**
 * A proxied call's streamed answer: the provider's event streams merged over the hops into one for
 * the client, in which our tool never appears; the hops that ran are logged even when the client
 * goes away mid-stream.
 */
import type { Answer, Hop } from "./dialect.ts";
import { billedOf, finishTurn, type TurnOutcome, withProxy } from "./loop-outcome.ts";
import {
  decide,
  execute,
  hopHeaders,
  isEventStream,
  type ProxyCall,
  responseHeaders,
} from "./loop-steps.ts";
import { readSse, sseComment, textStream } from "./sse.ts";
import { hideStreamUsage } from "./stream-usage.ts";
import { BASE_URL_VARS, hostOf, send, unreachableMessage } from "./upstream.ts";

/** The client's answer as one event stream, merged over the hops as they run. */
export function streamed(call: ProxyCall, res: Response): Response {
  const summary = withProxy(call.summary, null, true);
  const body = textStream(events(call, res));
  return new Response(call.hideUsage === true ? hideStreamUsage(body) : body, {
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

/**
 * What the proxy needs from one provider API: read an answer (our recall calls, the client's
 * calls), build the next hop's request, merge the hops into the one answer the client sees, do the
 * same on an event stream, splice remembered recalls into a later request, and speak the provider's
 * error shape. One dialect per format; the loop in loop.ts is format-blind.
 */
import type { JsonNode } from "../core/json/scan.ts";
import type { Format } from "../core/types.ts";
import type { ProxyMemo, RecallParams, RememberedCall } from "./port.ts";
import type { RecallResult } from "./recalls.ts";
import type { SseEvent } from "./sse.ts";
import type { Provider } from "./upstream.ts";

/** A parsed provider answer (JSON object). */
export type Answer = Record<string, unknown>;

export interface Inspection {
  /** Our recall_tool_result calls, in order. */
  recalls: RememberedCall[];
  /** Ids of the client's own tool calls in the same answer. */
  client_calls: string[];
  /**
   * The answer stopped to have its tools run (so a hop can continue it), rather than for length or
   * a refusal.
   */
  tool_turn: boolean;
}

/** One hop: the answer that asked for recalls, and their results. */
export interface Hop {
  answer: Answer;
  results: RecallResult[];
}

/**
 * How the client's answer ends:
 * - "done": no recall call is left (or one was cut short, e.g. by max_tokens: it is dropped);
 * - "mixed": the model called our tool and the client's tools together; the client gets its own
 *   calls, and our calls and their answers are remembered for the next request;
 * - "exhausted": the hop limit was reached while the model still asked for recalls only.
 */
export type Ending = "done" | "mixed" | "exhausted";

export interface StreamResult {
  /**
   * The hop's answer as a non-streamed one would read (for the next hop's request and the memos).
   */
  answer: Answer;
  inspection: Inspection;
  /** The stream reached its end event (message_stop, [DONE], response.completed…). */
  complete: boolean;
  /** The provider sent an error event (already forwarded to the client). */
  errored: boolean;
}

/** Turns the upstream event streams of every hop into the one stream the client reads. */
export interface StreamMerger {
  /** A hop's upstream stream starts (0 for the client's own call). */
  begin(hop: number): void;
  /** One upstream event → the text to send the client now ("" holds or drops it). */
  feed(event: SseEvent): string;
  result(): StreamResult;
  /** The closing events (held until the proxy knew no hop follows). */
  finish(ending: Ending): string;
  /**
   * An error event in the provider's stream shape; `body` is a provider error body when there is
   * one.
   */
  error(message: string, body?: string): string;
}

export interface MemoInput {
  /** Every hop's answer, the client's call's first. */
  answers: readonly Answer[];
  inspection: Inspection;
  ending: Ending;
  params: RecallParams;
  /** The request as forwarded (its text), for flags like Responses' `store`. */
  request: string;
}

export interface Dialect {
  readonly format: Format;
  readonly provider: Provider;
  /** Path under the provider's base URL. */
  readonly path: string;
  /** The provider's error body for an error of ours or a failed connection. */
  errorBody(status: number, message: string, code: string, param?: string): string;
  inspect(answer: Answer): Inspection;
  /** The request for the next hop: the forwarded request continued with every hop so far. */
  nextRequest(request: string, hops: readonly Hop[]): string;
  /** The one answer the client gets: the hops' answers merged, our calls left out. */
  merge(answers: readonly Answer[], ending: Ending, maxHops: number): Answer;
  /** What to remember for later requests of the session. */
  memos(input: MemoInput): ProxyMemo[];
  stream(maxHops: number): StreamMerger;
  /**
   * An API whose streams report usage only when asked (Chat Completions): the insertion into a
   * streamed request that asks, or null when there is nothing to ask (stream-usage.ts).
   */
  askStreamUsage?(root: JsonNode): { at: number; text: string } | null;
  /**
   * Edits that splice remembered recalls (and for Responses, aliases) into a client request.
   * `answers` holds the replayed answer of every remembered call id; a memo whose answers are
   * missing is left out.
   */
  splice(
    raw: string,
    memos: readonly ProxyMemo[],
    answers: ReadonlyMap<string, RecallResult>,
  ): { edits: { start: number; end: number; text: string }[]; spliced: number };
}

/**
 * What the client reads when the proxy had to stop and the model's answer has no text of its own.
 */
export function noticeText(ending: Ending, maxHops: number): string {
  return ending === "exhausted"
    ? `[edge-offload] The model asked to read offloaded tool results more than ${maxHops} times in a row, so the proxy stopped here. Ask again to continue.`
    : "[edge-offload] The model's answer was cut short while it was reading an offloaded tool result.";
}

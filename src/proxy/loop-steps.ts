/**
 * A proxied call as the loop gets it, and the steps the buffered and the streamed loops share: the
 * way the loop goes after an answer, the recalls run here, a hop's headers, the client's headers.
 */
import type { Turn } from "../core/ports.ts";
import type { SessionRef, TurnEstimate } from "../core/types.ts";
import { type Summary, summaryHeader } from "../http/summary.ts";
import type { Dialect, Ending, Inspection } from "./dialect.ts";
import { clientHeaders } from "./headers.ts";
import type { ProxyStore, RecallParams } from "./port.ts";
import { type RecallResult, runRecalls } from "./recalls.ts";

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
  /** Where recalls are read and counted. */
  store: ProxyStore;
  /** The call's turn: finished with its hops, usage and memos once the answer is known. */
  turn: Turn;
  ref: SessionRef;
  params: RecallParams;
  summary: Summary;
  /** The model the turn is priced as (its usage is priced so), null: the answer's. */
  model: string | null;
  /** The turn's estimates, calibrated against the usage the answers report. */
  estimate?: TurnEstimate | undefined;
  /** Usage was asked for upstream on the client's behalf: its stream gets none (stream-usage.ts). */
  hideUsage?: boolean;
}

/** The provider's headers as the client may see them, with the call's summary. */
export function responseHeaders(upstream: Response, summary: Summary): Headers {
  const headers = clientHeaders(upstream.headers);
  headers.set("x-offload-summary", summaryHeader(summary));
  return headers;
}

/** The answer is an event stream (the streamed loop), not one JSON body. */
export function isEventStream(res: Response): boolean {
  return (res.headers.get("content-type") ?? "").toLowerCase().includes("text/event-stream");
}

/**
 * A hop is another request: a client's idempotency key would make the provider replay the first
 * answer.
 */
export function hopHeaders(headers: Headers, hop: number): Headers {
  const key = headers.get("idempotency-key");
  if (key === null) return headers;
  const out = new Headers(headers);
  out.set("idempotency-key", `${key}.hop${hop}`);
  return out;
}

/** Which way the loop goes after an answer. */
export function decide(ins: Inspection, hops: number, maxHops: number): Ending | "hop" {
  if (ins.recalls.length === 0) return "done";
  if (ins.client_calls.length > 0) return "mixed";
  if (!ins.tool_turn) return "done";
  return hops >= maxHops ? "exhausted" : "hop";
}

/** The model's recalls answered here (counted on the session, as a client's would be). */
export async function execute(
  call: ProxyCall,
  recalls: Inspection["recalls"],
): Promise<RecallResult[]> {
  return runRecalls(recalls, {
    store: call.store,
    ref: call.ref,
    params: call.params,
    count: true,
  });
}

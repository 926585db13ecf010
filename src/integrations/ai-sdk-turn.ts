/**
 * What the middleware's generated and streamed calls share: the prepared call, how the loop reads an
 * answer and decides (the proxy's rule: recalls alone are answered here, a mixed answer goes to the
 * app with our calls remembered), and how a call is finished (its hops noted, its memos kept, the
 * app told).
 */
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4ToolCall,
} from "@ai-sdk/provider";
import type { Turn } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import type { Summary } from "../http/summary.ts";
import type { Ending } from "../proxy/dialect.ts";
import { billedFrom, countsWithin, finishOf, withProxy } from "../proxy/loop-outcome.ts";
import type { ProxyMemo, ProxyStore, RecallParams, RememberedCall } from "../proxy/port.ts";
import { type RecallResult, runRecalls } from "../proxy/recalls.ts";
import { hopMemo } from "./ai-sdk-hops.ts";
import { isOurCall } from "./ai-sdk-prompt.ts";
import type { Settings } from "./options.ts";

/** What a session function reads: the call's options and the model it goes to. */
export interface ModelCall {
  params: LanguageModelV4CallOptions;
  model: LanguageModelV4;
}

/** A call edge-offload takes part in: compacted, with what its loop needs. */
export interface Prepared {
  settings: Settings<ModelCall>;
  ref: SessionRef;
  store: ProxyStore;
  /** The call's turn: finished once the app has its answer. */
  turn: Turn;
  model: LanguageModelV4;
  /** The call as sent (compacted, recalls spliced). */
  params: LanguageModelV4CallOptions;
  /** Our recall tool is in the call (declared by us): only then are answers watched for it. */
  intercept: boolean;
  recall: RecallParams;
  summary: Summary;
  /** The provider's counts of the results this call stubbed on arrival, asked beside it. */
  counts?: Promise<Record<string, number>>;
}

/** The middleware's counting endpoint (its `count` option, checked). */
export interface Counter {
  provider: "anthropic" | "openai";
  url: string;
  headers: Headers;
  fetch: typeof fetch;
}

export interface Outcome {
  hops: number;
  recalls: number;
  ending: Ending;
  memos: ProxyMemo[];
  /** Each model call's usage (LanguageModelV4Usage), the app's call first: the turn's billed figures. */
  usages: unknown[];
}

/** Our calls and the app's in an answer, and whether it stopped to have tools run. */
export function inspect(content: readonly LanguageModelV4Content[], toolTurn: boolean) {
  const calls = content.filter((c): c is LanguageModelV4ToolCall => c.type === "tool-call");
  return {
    ours: calls
      .filter(isOurCall)
      .map((c): RememberedCall => ({ id: c.toolCallId, arguments: c.input })),
    app: calls.filter((c) => !isOurCall(c) && c.providerExecuted !== true).map((c) => c.toolCallId),
    toolTurn,
  };
}

/** Which way the loop goes after an answer (the proxy's rule). */
export function decide(
  ins: ReturnType<typeof inspect>,
  hops: number,
  maxHops: number,
): Ending | "hop" {
  if (ins.ours.length === 0) return "done";
  if (ins.app.length > 0) return "mixed";
  if (!ins.toolTurn) return "done";
  return hops >= maxHops ? "exhausted" : "hop";
}

export function execute(p: Prepared, calls: readonly RememberedCall[]): Promise<RecallResult[]> {
  return runRecalls(calls, { store: p.store, ref: p.ref, params: p.recall, count: true });
}

/** One hop of a call: the model's answer, our calls in it and their answers. */
export interface Hop {
  content: LanguageModelV4Content[];
  calls: RememberedCall[];
  results: RecallResult[];
}

/**
 * What the call leaves for later calls: a mixed answer's recalls (spliced beside the app's calls), and
 * where the model checks its thinking, the hops the call was answered in (split back into the history).
 */
export function memosOf(
  p: Prepared,
  ins: ReturnType<typeof inspect>,
  ending: Ending,
  hops: readonly Hop[],
  final: readonly LanguageModelV4Content[],
): ProxyMemo[] {
  const memos: ProxyMemo[] = [];
  const hop = hopMemo(p.model, hops, final, p.recall);
  if (hop !== null) memos.push(hop);
  if (ending === "mixed")
    memos.push({
      kind: "recall",
      format: "ai-sdk",
      anchors: ins.app,
      calls: ins.ours,
      params: p.recall,
    });
  return memos;
}

/** An answer whose only calls were ours did not stop for the app's tools. */
export function finishReasonOf(
  reason: LanguageModelV4GenerateResult["finishReason"],
  ending: Ending,
  content: readonly { type: string }[],
): LanguageModelV4GenerateResult["finishReason"] {
  if (ending === "exhausted") return { unified: "stop", raw: reason.raw };
  if (reason.unified === "tool-calls" && !content.some((c) => c.type === "tool-call"))
    return { unified: "stop", raw: reason.raw };
  return reason;
}

/**
 * Notes the hops on the turn's log line, keeps the memos, and reports the call. Runs after the app
 * has its answer; a failure loses only the note (said in the report).
 */
export async function finish(p: Prepared, outcome: Outcome): Promise<void> {
  const billed = billedFrom("ai-sdk", outcome.usages, p.model.modelId);
  // The proxy's summary: the hops, and what the provider billed (the hops' calls a cost of offloading).
  const summary = withProxy(
    { ...p.summary, errors: [...p.summary.errors] },
    outcome,
    p.summary.proxy!.stream,
    billed,
  );
  const report = () => p.settings.report({ session: p.ref, format: "ai-sdk", summary });
  const counted = await countsWithin(p.counts);
  return p.turn
    .finish({
      ...finishOf(outcome, billed?.usage),
      ...(Object.keys(counted).length === 0 ? {} : { counted }),
    })
    .catch(() => {
      summary.errors.push({
        code: "storage_error",
        message:
          "the turn could not be saved; a mixed turn's recall answer will not be spliced into later calls",
      });
      summary.errors_total++;
    })
    .then(report);
}

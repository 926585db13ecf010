/**
 * The eval's vocabulary: what is sampled, what one provider call of an arm came to, how two answers
 * compare, and the report (docs/measure.md, "Does the model still answer the same?").
 */
import type { UsageTokens } from "../core/billing.ts";
import type { Action } from "../core/types.ts";

/** The provider API the eval calls (and the request format it builds). */
export type EvalProvider = "anthropic" | "openai-chat" | "openai-responses";
export const EVAL_PROVIDERS: readonly EvalProvider[] = [
  "anthropic",
  "openai-chat",
  "openai-responses",
];

/**
 * The arms of one sampled call: A is the request as the client sent it (offload off), B the same
 * request through the proxy's loop with the config under test, A2 a second A (the noise floor).
 */
export type Arm = "A" | "B" | "A2";

/** A tool result the config changed in B's request, as the candidate pass decided it. */
export interface ChangedResult {
  tool_use_id: string;
  tool_name: string;
  action: Exclude<Action, "kept">;
  mem_id: string | null;
  /** Chars of the result as the client sent it. */
  chars: number;
}

/** One sampled call: a model call of a session whose request the config changes. */
export interface SampledCall {
  /** `<session index>:<session id>#<call index>`: stable for a given input. */
  id: string;
  session: string;
  /** Index of the session in the input, and of the call in the session. */
  session_index: number;
  call: number;
  /** The session's calls in all. */
  calls: number;
  /** This call is also sent a second time with offload off (A/A). */
  aa: boolean;
  /** Estimated prompt tokens of A and of B (the turn transform's estimates). */
  tokens_a: number;
  tokens_b: number;
  /** Estimated output tokens (the recorded answer's, capped at max_tokens). */
  tokens_out: number;
  changed: ChangedResult[];
  /** Attachments the config replaced by text in this request. */
  attachments: number;
}

/** A tool call of an answer, its arguments parsed where they are JSON. */
export interface ToolCall {
  name: string;
  args: unknown;
}

/** What an answer says, read provider-neutrally. */
export interface AnswerView {
  /** The answer's text (for B: the text of its last hop, see answers.ts). */
  text: string;
  /** The tool calls the client gets (never recall_tool_result). */
  calls: ToolCall[];
  /** Why the model stopped, as the provider says it. */
  stop: string | null;
}

/** A recall_tool_result call B's loop answered. */
export interface RecallCall {
  hop: number;
  /** The call's arguments as the model wrote them (JSON text, clipped). */
  arguments: string;
}

/** A stubbed or shortened result as B's model saw it. */
export interface ShownResult extends ChangedResult {
  /** The result's text in B's request (clipped). */
  shown: string;
}

/** One arm of one sampled call, as the results file keeps it. */
export interface ArmRecord {
  kind: "call";
  id: string;
  arm: Arm;
  ok: true;
  answer: AnswerView;
  /** Provider calls made (1, plus B's recall hops). */
  provider_calls: number;
  hops: number;
  recalls: RecallCall[];
  /** B: how its loop ended (done, mixed, exhausted, failed), null for A. */
  ending: string | null;
  usage: UsageTokens;
  usd: number;
  /** The temperature sent (null: the model refused 0 and got its default). */
  temperature: number | null;
  /** B: the results the config changed, as shown. */
  shown?: ShownResult[];
  /** B: problems the proxy reported (a store fault, a request passed through). */
  problems?: string[];
}

/** A judge's verdict on one pair, as the results file keeps it. */
export interface JudgeRecord {
  kind: "judge";
  id: string;
  pair: "AB" | "AA";
  /** null: the judge's reply had no verdict (the similarity decides). */
  equivalent: boolean | null;
  reason: string;
  usage: UsageTokens;
  usd: number;
}

/** An arm or judge call that failed this run (not kept in the file: a resumed run tries again). */
export interface Failure {
  id: string;
  what: string;
  message: string;
}

/** How two answers of one sampled call compare. */
export interface PairComparison {
  id: string;
  pair: "AB" | "AA";
  /** Same tool calls (names and normalised arguments), or both none. */
  action: boolean;
  /** Normalised texts equal. */
  text_exact: boolean;
  /** Word-level similarity of the normalised texts, 0…1. */
  similarity: number;
  judge: boolean | null;
  /** The verdict: same action and, for text answers, the same text (exact, similar or judged). */
  agree: boolean;
  /** What decided a disagreement, in words. */
  why: string;
}

/** A proportion with its 95% Wilson score interval. */
export interface Proportion {
  agree: number;
  n: number;
  /** null when n is 0. */
  rate: number | null;
  low: number | null;
  high: number | null;
}

/** Tokens and dollars of some provider calls. */
export interface Spend {
  /** Answers (an arm of a sampled call, a judge's verdict). */
  answers: number;
  /** Provider calls (B's recall hops each add one). */
  calls: number;
  prompt_tokens: number;
  output_tokens: number;
  usd: number;
}

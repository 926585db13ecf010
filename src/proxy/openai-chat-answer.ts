/**
 * Reading a Chat Completions answer (its first choice): our recall calls and the client's own, the
 * one completion the client gets from the hops (the first id and `created`, the text joined, the
 * last hop's client calls and finish reason, the usage summed), and the OpenAI error shapes, which
 * the Responses API shares.
 */
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import { type Answer, type Ending, type Inspection, noticeText } from "./dialect.ts";
import { addUsage, isRecord } from "./usage.ts";

type Call = Record<string, unknown>;

function isRecallCall(call: unknown): boolean {
  return (
    isRecord(call) &&
    (call.type === undefined || call.type === "function") &&
    isRecord(call.function) &&
    call.function.name === RECALL_TOOL_NAME
  );
}

function firstChoice(answer: Answer): Record<string, unknown> {
  const choices = Array.isArray(answer.choices) ? answer.choices : [];
  const c = choices.find((x) => isRecord(x) && (x.index ?? 0) === 0);
  return isRecord(c) ? c : {};
}

export function messageOf(answer: Answer): Record<string, unknown> {
  const m = firstChoice(answer).message;
  return isRecord(m) ? m : {};
}

export function callsOf(message: Record<string, unknown>): Call[] {
  return Array.isArray(message.tool_calls) ? (message.tool_calls.filter(isRecord) as Call[]) : [];
}

const ERROR_TYPES: Record<number, string> = {
  401: "invalid_request_error",
  404: "invalid_request_error",
  413: "invalid_request_error",
  429: "rate_limit_exceeded",
};

export function openaiErrorBody(
  status: number,
  message: string,
  code: string,
  param?: string,
): string {
  return JSON.stringify({
    error: {
      message,
      type: ERROR_TYPES[status] ?? (status >= 500 ? "server_error" : "invalid_request_error"),
      param: param ?? null,
      code,
    },
  });
}

/** A stream error as the OpenAI SDKs read it: the provider's own error object when there is one. */
export function openaiStreamError(
  message: string,
  body: string | undefined,
): Record<string, unknown> {
  if (body !== undefined) {
    try {
      const parsed: unknown = JSON.parse(body);
      if (isRecord(parsed) && isRecord(parsed.error)) return parsed.error;
    } catch {
      // not the provider's error shape: ours
    }
  }
  return JSON.parse(openaiErrorBody(502, message, "upstream_error")).error as Record<
    string,
    unknown
  >;
}

export function inspect(answer: Answer): Inspection {
  const calls = callsOf(messageOf(answer));
  return {
    recalls: calls
      .filter(isRecallCall)
      .map((c) => ({ id: String(c.id), arguments: String((c.function as Call).arguments ?? "") })),
    client_calls: calls.filter((c) => !isRecallCall(c)).map((c) => String(c.id)),
    tool_turn: firstChoice(answer).finish_reason === "tool_calls",
  };
}

export function merge(answers: readonly Answer[], ending: Ending, maxHops: number): Answer {
  const first = answers[0]!;
  const last = answers[answers.length - 1]!;
  const texts = answers
    .map((a) => messageOf(a).content)
    .filter((t): t is string => typeof t === "string");
  let content: string | null = texts.length === 0 ? null : texts.join("");
  const calls = callsOf(messageOf(last)).filter((c) => !isRecallCall(c));
  const choice = firstChoice(last);
  let finish = ending === "exhausted" ? "stop" : choice.finish_reason;
  if (finish === "tool_calls" && calls.length === 0) finish = "stop";
  if ((content === null || content === "") && calls.length === 0)
    content = noticeText(ending, maxHops);
  const { tool_calls: _, ...rest } = messageOf(last);
  const message = { ...rest, content, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
  const others = (Array.isArray(last.choices) ? last.choices : []).filter((c) => c !== choice);
  const usage = answers.reduce<unknown>((sum, a) => addUsage(sum, a.usage), null);
  return {
    ...last,
    id: first.id,
    created: first.created,
    choices: [{ ...choice, message, finish_reason: finish }, ...others],
    ...(usage === null ? {} : { usage }),
  };
}

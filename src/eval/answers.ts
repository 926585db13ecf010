/**
 * A provider's answer read provider-neutrally: its text and the tool calls the client gets
 * (recall_tool_result, which the proxy's loop answers, is never one of them), and its usage.
 */
import { NO_USAGE, type UsageTokens, usageTokens } from "../core/billing.ts";
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import type { AnswerView, EvalProvider, ToolCall } from "./types.ts";

type Rec = Record<string, unknown>;

function isRecord(v: unknown): v is Rec {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function records(v: unknown): Rec[] {
  return Array.isArray(v) ? v.filter(isRecord) : [];
}

/** Arguments sent as JSON text are compared as the value they encode. */
function parsedArgs(raw: unknown): unknown {
  if (typeof raw !== "string") return raw ?? {};
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function call(name: unknown, args: unknown): ToolCall[] {
  if (typeof name !== "string" || name === RECALL_TOOL_NAME) return [];
  return [{ name, args }];
}

/** The text and client tool calls of an answer in the provider's shape. */
export function readAnswer(provider: EvalProvider, answer: unknown): AnswerView {
  const a = isRecord(answer) ? answer : {};
  if (provider === "anthropic") {
    const blocks = records(a.content);
    return {
      text: blocks
        .filter((b) => b.type === "text" && typeof b.text === "string")
        .map((b) => b.text as string)
        .join(""),
      calls: blocks
        .filter((b) => b.type === "tool_use")
        .flatMap((b) => call(b.name, b.input ?? {})),
      stop: typeof a.stop_reason === "string" ? a.stop_reason : null,
    };
  }
  if (provider === "openai-chat") {
    const choice = records(a.choices).find((c) => (c.index ?? 0) === 0) ?? {};
    const message = isRecord(choice.message) ? choice.message : {};
    const content = message.content;
    const text =
      typeof content === "string"
        ? content
        : records(content)
            .filter((p) => typeof p.text === "string")
            .map((p) => p.text as string)
            .join("");
    return {
      text,
      calls: records(message.tool_calls).flatMap((c) => {
        const fn = isRecord(c.function) ? c.function : {};
        return call(fn.name, parsedArgs(fn.arguments));
      }),
      stop: typeof choice.finish_reason === "string" ? choice.finish_reason : null,
    };
  }
  const items = records(a.output);
  const incomplete = isRecord(a.incomplete_details) ? a.incomplete_details.reason : undefined;
  return {
    text: items
      .filter((i) => i.type === "message")
      .flatMap((i) => records(i.content))
      .filter((p) => p.type === "output_text" && typeof p.text === "string")
      .map((p) => p.text as string)
      .join(""),
    calls: items
      .filter((i) => i.type === "function_call")
      .flatMap((i) => call(i.name, parsedArgs(i.arguments))),
    stop:
      typeof incomplete === "string" ? incomplete : typeof a.status === "string" ? a.status : null,
  };
}

/** The answer's usage in the neutral shape (zeros when it reported none). */
export function usageOf(provider: EvalProvider, answer: unknown): UsageTokens {
  const u = usageTokens(provider, isRecord(answer) ? answer.usage : undefined);
  return u ?? { ...NO_USAGE };
}

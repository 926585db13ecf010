/**
 * Reading a Messages API answer: our recall calls and the client's own in it, the one answer the
 * client gets from the hops (their blocks without ours, the first id, the last stop reason, the
 * usage summed), and the API's error shape.
 */
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import { type Answer, type Ending, type Inspection, noticeText } from "./dialect.ts";
import { addUsage, isRecord } from "./usage.ts";

export type Block = Record<string, unknown>;

export function isRecallUse(block: unknown): boolean {
  return isRecord(block) && block.type === "tool_use" && block.name === RECALL_TOOL_NAME;
}

/** An answer's content blocks (objects only, as the merge reads them). */
export function contentOf(answer: Answer): Block[] {
  return Array.isArray(answer.content) ? (answer.content.filter(isRecord) as Block[]) : [];
}

/** The error `type` the API uses for a status. */
function errorType(status: number): string {
  const byStatus: Record<number, string> = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
  };
  return byStatus[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
}

export function errorBody(status: number, message: string): string {
  return JSON.stringify({ type: "error", error: { type: errorType(status), message } });
}

export function inspect(answer: Answer): Inspection {
  const content = contentOf(answer);
  return {
    recalls: content
      .filter(isRecallUse)
      .map((b) => ({ id: String(b.id), arguments: JSON.stringify(b.input ?? {}) })),
    client_calls: content
      .filter((b) => b.type === "tool_use" && !isRecallUse(b))
      .map((b) => String(b.id)),
    tool_turn: answer.stop_reason === "tool_use",
  };
}

export function merge(answers: readonly Answer[], ending: Ending, maxHops: number): Answer {
  const first = answers[0]!;
  const last = answers[answers.length - 1]!;
  const content = answers.flatMap((a) => contentOf(a).filter((b) => !isRecallUse(b)));
  let stop = ending === "exhausted" ? "end_turn" : last.stop_reason;
  if (content.length === 0 || (ending === "exhausted" && !content.some((b) => b.type === "text")))
    content.push({ type: "text", text: noticeText(ending, maxHops) });
  if (stop === "tool_use" && !content.some((b) => b.type === "tool_use")) stop = "end_turn";
  return {
    ...last,
    id: first.id,
    content,
    stop_reason: stop,
    usage: answers.reduce<unknown>((sum, a) => addUsage(sum, a.usage), null),
  };
}

/**
 * Reading a Responses answer: our recall calls and the client's own among its output items, and the
 * one response the client gets from the hops (the first id, the output items in order without ours,
 * a notice when the hop limit ended the turn, the usage summed).
 */
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import { type Answer, type Ending, type Inspection, noticeText } from "./dialect.ts";
import { addUsage, isRecord } from "./usage.ts";

export type Item = Record<string, unknown>;

export function isRecallItem(item: unknown): boolean {
  return isRecord(item) && item.type === "function_call" && item.name === RECALL_TOOL_NAME;
}

export function outputOf(answer: Answer): Item[] {
  return Array.isArray(answer.output) ? (answer.output.filter(isRecord) as Item[]) : [];
}

/**
 * The answer's items the client sees: without our calls, nor a reasoning item directly before one.
 */
export function visibleItems(items: readonly Item[]): Item[] {
  return items.filter(
    (item, i) => !isRecallItem(item) && !(item.type === "reasoning" && isRecallItem(items[i + 1])),
  );
}

export function inspect(answer: Answer): Inspection {
  const output = outputOf(answer);
  return {
    recalls: output
      .filter(isRecallItem)
      .map((i) => ({ id: String(i.call_id), arguments: String(i.arguments ?? "") })),
    // Any call the client answers carries a call_id (function, custom, computer, shell… calls).
    client_calls: output
      .filter(
        (i) =>
          !isRecallItem(i) && typeof i.call_id === "string" && !String(i.type).endsWith("_output"),
      )
      .map((i) => String(i.call_id)),
    tool_turn: answer.status === "completed",
  };
}

export function notice(ending: Ending, maxHops: number): Item {
  return {
    type: "message",
    id: "msg_edgeoffload_notice",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: noticeText(ending, maxHops), annotations: [] }],
  };
}

export function needsNotice(items: readonly Item[], ending: Ending): boolean {
  const hasMessage = items.some((i) => i.type === "message");
  return ending === "exhausted"
    ? !hasMessage
    : !hasMessage && !items.some((i) => typeof i.call_id === "string");
}

export function merge(answers: readonly Answer[], ending: Ending, maxHops: number): Answer {
  const first = answers[0]!;
  const last = answers[answers.length - 1]!;
  const items = answers.flatMap((a) => visibleItems(outputOf(a)));
  if (needsNotice(items, ending)) items.push(notice(ending, maxHops));
  return {
    ...last,
    id: first.id,
    created_at: first.created_at,
    previous_response_id: first.previous_response_id ?? null,
    output: items,
    usage: answers.reduce<unknown>((sum, a) => addUsage(sum, a.usage), null),
  };
}

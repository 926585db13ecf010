/**
 * Remembered recalls spliced back into a history of `messages` (Messages, Chat Completions): after the
 * assistant message whose client calls a memo is anchored to, our calls join the client's, and our answers
 * go right after the last answer to them, so the prompt reads as the model saw it on the first turn. A memo
 * whose place is not found, or whose calls the client already sent, is left out.
 */
import {
  type JsonArray,
  type JsonNode,
  type JsonObject,
  parseJsonSpans,
} from "../core/json/scan.ts";
import type { Format } from "../core/types.ts";
import { appendItems, arrayMember, type Edit, insertAfter, memberString } from "./json-edit.ts";
import type { ProxyMemo, RememberedCall } from "./port.ts";
import type { RecallResult } from "./recalls.ts";

/**
 * A thinking block's anchor: its signature's last 64 chars (signatures are long and unique; an id-sized
 * key is all a store's anchor index needs).
 */
export function signatureAnchor(signature: string): string {
  return `sig:${signature.slice(-64)}`;
}

/** A remembered recall: our calls, answered again and spliced back after the client's `anchors`. */
export type RecallMemo = Extract<ProxyMemo, { kind: "recall" }>;

/** What differs between the formats: where an assistant message holds its calls, and where answers go. */
export interface MessagesPlaces {
  format: Format;
  /** The array of calls ours join, and the ids of the client's calls in it (undefined: none there). */
  calls(raw: string, message: JsonObject): { list: JsonArray; ids: string[] } | undefined;
  /**
   * The node our answers go right after: the last answer to the client's calls of message `i`
   * (undefined when there is none, or when ours are already there).
   */
  lastAnswer(raw: string, messages: JsonArray, i: number, memo: RecallMemo): JsonNode | undefined;
  /** Our call, as the assistant message holds it. */
  call(call: RememberedCall): string;
  /** Its answer, as the history holds it. */
  answer(result: RecallResult): string;
}

/** The edits that splice the format's memos back (each memo whose calls all have answers). */
export function spliceMemos(
  raw: string,
  list: readonly ProxyMemo[],
  answers: ReadonlyMap<string, RecallResult>,
  places: MessagesPlaces,
): { edits: Edit[]; spliced: number } {
  const mine = list.filter(
    (m): m is RecallMemo => m.kind === "recall" && m.format === places.format,
  );
  const edits: Edit[] = [];
  let spliced = 0;
  if (mine.length === 0) return { edits, spliced };
  const messages = arrayMember(parseJsonSpans(raw), "messages");
  if (messages === undefined) return { edits, spliced };
  messages.items.forEach((message, i) => {
    if (message.kind !== "object" || memberString(raw, message, "role") !== "assistant") return;
    const calls = places.calls(raw, message);
    if (calls === undefined) return;
    const memo = mine.find((m) => m.anchors.some((a) => calls.ids.includes(a)));
    if (
      memo === undefined ||
      memo.calls.some((c) => calls.ids.includes(c.id) || !answers.has(c.id))
    )
      return;
    const after = places.lastAnswer(raw, messages, i, memo);
    if (after === undefined) return;
    edits.push(appendItems(calls.list, memo.calls.map(places.call)));
    edits.push(
      insertAfter(
        after,
        memo.calls.map((c) => places.answer(answers.get(c.id)!)),
      ),
    );
    spliced += memo.calls.length;
  });
  return { edits, spliced };
}

/**
 * Hops kept in the history, for a model with preserved thinking (core/turn/frozen.ts). The client gets
 * one message for a turn the proxy answered in hops, but the model produced each hop's thinking after
 * the hops before it: sent back as one message, the later thinking blocks no longer follow what they
 * were produced after, and such a model rejects the request. So the turn leaves a memo (`kind: "hop"`),
 * found again by its first thinking block's signature, and every later request has that message split
 * back into the hops' messages: each hop's blocks (as the client sends them back) with our calls, and a
 * user message with their answers (computed again from the ledger, so they come out the same).
 */
import { getMember, type JsonNode, parseJsonSpans } from "../core/json/scan.ts";
import { preservedThinkingModel } from "../core/turn/frozen.ts";
import { contentOf, inspect, isRecallUse } from "./anthropic-answer.ts";
import type { MemoInput } from "./dialect.ts";
import { arrayMember, type Edit, memberString } from "./json-edit.ts";
import { signatureAnchor } from "./memo-splice.ts";
import type { ProxyMemo, RememberedCall } from "./port.ts";
import type { RecallResult } from "./recalls.ts";

type HopMemo = Extract<ProxyMemo, { kind: "hop" }>;

/** The memo of a turn answered in hops, where the model checks its thinking blocks' prefixes. */
export function hopMemo(input: MemoInput): HopMemo | null {
  const { answers } = input;
  if (answers.length < 2) return null;
  const kept = answers.map((a) => contentOf(a).filter((b) => !isRecallUse(b)));
  const first = kept
    .flat()
    .find((b) => b.type === "thinking" && typeof b.signature === "string" && b.signature !== "");
  // No thinking block: nothing a later request could fail on (known before the request is read again).
  if (first === undefined) return null;
  const root = parseJsonSpans(input.request);
  const model = root.kind === "object" ? memberString(input.request, root, "model") : undefined;
  if (!preservedThinkingModel(model)) return null;
  const recalls = answers.slice(0, -1).map((a) => inspect(a).recalls);
  return {
    kind: "hop",
    format: "anthropic",
    anchors: [signatureAnchor(first.signature as string)],
    calls: recalls.flat(),
    hops: recalls.map((r, i) => ({ kept: kept[i]!.length, calls: r.length })),
    params: input.params,
  };
}

/**
 * The request with each message a hop memo is anchored on split back into its hops (`spliced`: our
 * calls put back). A message whose blocks do not add up, or whose answers are missing, stays as it is.
 */
export function spliceHops(
  raw: string,
  memos: readonly ProxyMemo[],
  answers: ReadonlyMap<string, RecallResult>,
  render: { call(call: RememberedCall): string; answer(result: RecallResult): string },
): { edits: Edit[]; spliced: number } {
  const mine = memos.filter((m): m is HopMemo => m.kind === "hop" && m.format === "anthropic");
  const edits: Edit[] = [];
  let spliced = 0;
  if (mine.length === 0) return { edits, spliced };
  const messages = arrayMember(parseJsonSpans(raw), "messages");
  if (messages === undefined) return { edits, spliced };
  const text = (n: JsonNode) => raw.slice(n.start, n.end);
  for (const message of messages.items) {
    if (message.kind !== "object" || memberString(raw, message, "role") !== "assistant") continue;
    const content = getMember(message, "content");
    if (content?.kind !== "array") continue;
    const first = content.items.find((b) => memberString(raw, b, "type") === "thinking");
    const signature = first === undefined ? undefined : memberString(raw, first, "signature");
    if (signature === undefined) continue;
    const anchor = signatureAnchor(signature);
    const memo = mine.find((m) => m.anchors.includes(anchor));
    if (memo === undefined) continue;
    const blocks = memo.hops.reduce((n, h) => n + h.kept, 0);
    const called = memo.hops.reduce((n, h) => n + h.calls, 0);
    if (
      blocks >= content.items.length ||
      called !== memo.calls.length ||
      memo.calls.some((c) => !answers.has(c.id))
    )
      continue;
    const out: string[] = [];
    let at = 0;
    let c = 0;
    for (const hop of memo.hops) {
      const own = content.items.slice(at, at + hop.kept).map(text);
      const calls = memo.calls.slice(c, c + hop.calls);
      at += hop.kept;
      c += hop.calls;
      out.push(`{"role":"assistant","content":[${[...own, ...calls.map(render.call)].join(",")}]}`);
      out.push(
        `{"role":"user","content":[${calls.map((x) => render.answer(answers.get(x.id)!)).join(",")}]}`,
      );
    }
    out.push(`{"role":"assistant","content":[${content.items.slice(at).map(text).join(",")}]}`);
    edits.push({ start: message.start, end: message.end, text: out.join(",") });
    spliced += memo.calls.length;
  }
  return { edits, spliced };
}

/**
 * Hops kept in the app's history, for a model with preserved thinking (core/turn/frozen.ts), as the proxy
 * keeps them for Messages requests (proxy/anthropic-hops.ts). The app gets one answer for a call the
 * middleware answered in hops, but the model produced each hop's reasoning after the hops before it: sent
 * back as one assistant message, the later reasoning no longer follows what it was produced after, and
 * such a model rejects the request. So the call leaves a memo (`kind: "hop"`, format "ai-sdk"), found
 * again by its first reasoning part's signature, and every later call has that message split back into
 * the hops' messages: each hop's parts (as the app keeps them) with our calls, and a tool message with
 * their answers (computed again from the ledger, so they come out the same).
 *
 * Only for the AI SDK's Anthropic provider (`anthropic.*`), whose reasoning parts carry the thinking
 * block's signature in `providerMetadata.anthropic.signature` (given back as `providerOptions`).
 */
import type {
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4Message,
} from "@ai-sdk/provider";
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import { preservedThinkingModel } from "../core/turn/frozen.ts";
import { signatureAnchor } from "../proxy/memo-splice.ts";
import type { ProxyMemo, RecallParams, RememberedCall } from "../proxy/port.ts";
import type { RecallResult } from "../proxy/recalls.ts";
import { assistantMessage, isOurCall, recallMessage } from "./ai-sdk-prompt.ts";

type HopMemo = Extract<ProxyMemo, { kind: "hop" }>;
type Metadata = LanguageModelV4Content["providerMetadata"];

/** The provider package whose hops can be kept: it signs reasoning and takes tools mid-conversation. */
export function keepsHops(provider: string): boolean {
  return /^anthropic\./.test(provider);
}

/** A reasoning part's thinking signature, from its metadata (an answer) or options (a prompt). */
function signatureOf(meta: Metadata): string | undefined {
  const s = (meta?.anthropic as { signature?: unknown } | undefined)?.signature;
  return typeof s === "string" && s !== "" ? s : undefined;
}

/**
 * A part of a model's answer the AI SDK keeps in the assistant message it gives the app (`ai`'s
 * response messages): not our calls, no sources, no empty text without metadata.
 */
function appKeeps(c: LanguageModelV4Content): boolean {
  if (isOurCall(c) || c.type === "source") return false;
  return !(c.type === "text" && c.text.length === 0 && c.providerMetadata === undefined);
}

/**
 * The memo of a call answered in hops (`hops`: each hop's answer and our calls in it), where the model
 * checks its thinking prefixes; null when there is nothing a later call could fail on.
 */
export function hopMemo(
  model: { modelId: string; provider: string },
  hops: readonly { content: readonly LanguageModelV4Content[]; calls: readonly RememberedCall[] }[],
  params: RecallParams,
): HopMemo | null {
  if (hops.length === 0 || !keepsHops(model.provider) || !preservedThinkingModel(model.modelId))
    return null;
  const kept = hops.map((h) => h.content.filter(appKeeps));
  const first = kept.flat().find((c) => c.type === "reasoning");
  const signature = first === undefined ? undefined : signatureOf(first.providerMetadata);
  if (signature === undefined) return null;
  return {
    kind: "hop",
    format: "ai-sdk",
    anchors: [signatureAnchor(signature)],
    calls: hops.flatMap((h) => h.calls),
    hops: hops.map((h, i) => ({ kept: kept[i]!.length, calls: h.calls.length })),
    params,
  };
}

/** The signature anchors of the prompt's reasoning parts: what a hop memo is found by. */
export function signatureAnchors(params: LanguageModelV4CallOptions): string[] {
  const out: string[] = [];
  for (const m of params.prompt)
    if (m.role === "assistant")
      for (const p of m.content)
        if (p.type === "reasoning") {
          const s = signatureOf(p.providerOptions);
          if (s !== undefined) out.push(signatureAnchor(s));
        }
  return out;
}

/**
 * The prompt with each assistant message a hop memo is anchored on split back into its hops (`spliced`:
 * our calls put back). A message whose parts do not add up, or whose answers are missing, stays as it is.
 */
export function spliceHops(
  prompt: readonly LanguageModelV4Message[],
  memos: readonly ProxyMemo[],
  answers: ReadonlyMap<string, RecallResult>,
): { prompt: LanguageModelV4Message[]; spliced: number } {
  const mine = memos.filter((m): m is HopMemo => m.kind === "hop" && m.format === "ai-sdk");
  let spliced = 0;
  const out = prompt.flatMap((message): LanguageModelV4Message[] => {
    if (mine.length === 0 || message.role !== "assistant") return [message];
    const parts = message.content;
    const first = parts.find((p) => p.type === "reasoning");
    const signature = first === undefined ? undefined : signatureOf(first.providerOptions);
    if (signature === undefined) return [message];
    const anchor = signatureAnchor(signature);
    const memo = mine.find((m) => m.anchors.includes(anchor));
    if (memo === undefined) return [message];
    const blocks = memo.hops.reduce((n, h) => n + h.kept, 0);
    const called = memo.hops.reduce((n, h) => n + h.calls, 0);
    if (
      blocks >= parts.length ||
      called !== memo.calls.length ||
      memo.calls.some((c) => !answers.has(c.id))
    )
      return [message];
    const split: LanguageModelV4Message[] = [];
    let at = 0;
    let c = 0;
    for (const hop of memo.hops) {
      const calls = memo.calls.slice(c, c + hop.calls);
      c += hop.calls;
      const ours = assistantMessage(
        calls.map((x) => ({
          type: "tool-call" as const,
          toolCallId: x.id,
          toolName: RECALL_TOOL_NAME,
          input: x.arguments,
        })),
      ).content;
      split.push({
        ...message,
        content: [...parts.slice(at, at + hop.kept), ...ours],
      } as LanguageModelV4Message);
      at += hop.kept;
      split.push(recallMessage(calls.map((x) => answers.get(x.id)!)));
    }
    split.push({ ...message, content: parts.slice(at) } as LanguageModelV4Message);
    spliced += memo.calls.length;
    return split;
  });
  return { prompt: spliced === 0 ? [...prompt] : out, spliced };
}

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
import { anthropicPackage } from "../core/formats/ai-sdk.ts";
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import { preservedThinkingModel } from "../core/turn/frozen.ts";
import { signatureAnchor } from "../proxy/memo-splice.ts";
import type { ProxyMemo, RecallParams, RememberedCall } from "../proxy/port.ts";
import type { RecallResult } from "../proxy/recalls.ts";
import { assistantMessage, isOurCall, recallMessage } from "./ai-sdk-prompt.ts";

type HopMemo = Extract<ProxyMemo, { kind: "hop" }>;
type Metadata = LanguageModelV4Content["providerMetadata"];

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

/** The anchor of the first reasoning part among `parts` that carries a signature, if any. */
function firstSig(parts: readonly LanguageModelV4Content[]): string | undefined {
  for (const c of parts)
    if (c.type === "reasoning") {
      const s = signatureOf(c.providerMetadata);
      if (s !== undefined) return signatureAnchor(s);
    }
  return undefined;
}

/**
 * The memo of a call answered in hops (`hops`: each hop's answer and our calls in it; `final`: the answer
 * the app got last), where the model checks its thinking prefixes; null when there is nothing a later
 * call could fail on. Each hop's first reasoning signature is kept too, so the split finds the hops' edges
 * where the app's message holds other parts than the `ai` package would (a UI message's, say).
 */
export function hopMemo(
  model: { modelId: string; provider: string },
  hops: readonly { content: readonly LanguageModelV4Content[]; calls: readonly RememberedCall[] }[],
  final: readonly LanguageModelV4Content[],
  params: RecallParams,
): HopMemo | null {
  if (
    hops.length === 0 ||
    !anthropicPackage(model.provider) ||
    !preservedThinkingModel(model.modelId)
  )
    return null;
  const kept = hops.map((h) => h.content.filter(appKeeps));
  const anchor = firstSig(kept.flat());
  if (anchor === undefined) return null;
  const rest = firstSig(final);
  return {
    kind: "hop",
    format: "ai-sdk",
    anchors: [anchor],
    calls: hops.flatMap((h) => h.calls),
    hops: hops.map((h, i) => {
      const sig = firstSig(kept[i]!);
      return {
        kept: kept[i]!.length,
        calls: h.calls.length,
        ...(sig === undefined ? {} : { sig }),
      };
    }),
    ...(rest === undefined ? {} : { rest_sig: rest }),
    params,
  };
}

/**
 * Where each hop of `memo` ends in the app's message `parts` (the next hop's, or the final answer's, first
 * index): at the next segment's first reasoning part where its signature is found, else by the hop's count
 * of parts; null where they do not fit.
 */
function hopEnds(
  parts: readonly { type: string; providerOptions?: Metadata }[],
  memo: HopMemo,
): number[] | null {
  const ends: number[] = [];
  let at = 0;
  memo.hops.forEach((hop, k) => {
    const next = k + 1 < memo.hops.length ? memo.hops[k + 1]!.sig : memo.rest_sig;
    const found =
      next === undefined
        ? -1
        : parts.findIndex((p, i) => {
            if (i <= at || p.type !== "reasoning") return false;
            const s = signatureOf(p.providerOptions);
            return s !== undefined && signatureAnchor(s) === next;
          });
    at = found > 0 ? found : at + hop.kept;
    ends.push(at);
  });
  return at < parts.length ? ends : null;
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
    const ends = hopEnds(parts, memo);
    const called = memo.hops.reduce((n, h) => n + h.calls, 0);
    if (ends === null || called !== memo.calls.length || memo.calls.some((c) => !answers.has(c.id)))
      return [message];
    const split: LanguageModelV4Message[] = [];
    let at = 0;
    let c = 0;
    for (const [k, hop] of memo.hops.entries()) {
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
        content: [...parts.slice(at, ends[k]), ...ours],
      } as LanguageModelV4Message);
      at = ends[k]!;
      split.push(recallMessage(calls.map((x) => answers.get(x.id)!)));
    }
    split.push({ ...message, content: parts.slice(at) } as LanguageModelV4Message);
    spliced += memo.calls.length;
    return split;
  });
  return { prompt: spliced === 0 ? [...prompt] : out, spliced };
}

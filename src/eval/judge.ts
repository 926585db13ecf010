/**
 * The optional judge (`--judge MODEL`): a model asked whether two answers given at the same point
 * of a conversation are equivalent for the user's task. Its prompt is in docs/measure.md (a test
 * keeps the two the same); it sees the user's last message and the two answers, clipped, never
 * the tool results. It is asked only about text answers whose normalised texts differ: equal
 * texts agree, and differing tool calls disagree, without it.
 */
import type { Message, ReplaySession } from "../replay/types.ts";
import type { EvalProvider } from "./types.ts";

/** Chars of the user's message and of each answer the judge reads. */
export const JUDGE_CLIP_CHARS = 4000;

export const JUDGE_PROMPT = `You compare two answers that an AI assistant gave at the same point of the same conversation. Decide whether they are equivalent for the user's task: the same facts and values, the same conclusion, the same next step. Wording, length, order and formatting do not matter. A different value, a different conclusion, a refusal, or a guess where the other answer is sure, do.

The user's last message:
<<<
{question}
>>>

Answer 1:
<<<
{answer1}
>>>

Answer 2:
<<<
{answer2}
>>>

Reply with one word on the first line, EQUIVALENT or DIFFERENT, then one sentence saying why.`;

function clip(text: string): string {
  return text.length > JUDGE_CLIP_CHARS ? `${text.slice(0, JUDGE_CLIP_CHARS)}…[clipped]` : text;
}

function textOf(m: Message): string {
  if (typeof m.content === "string") return m.content;
  return m.content
    .filter((b) => b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("\n");
}

/** The last thing the user wrote before the call (tool results are not the user's words). */
export function lastUserText(session: ReplaySession, call: number): string {
  const n = session.calls[call]!;
  for (let i = n - 1; i >= 0; i--) {
    const m = session.messages[i]!;
    if (m.role !== "user") continue;
    const text = textOf(m).trim();
    if (text !== "") return text;
  }
  return "(none)";
}

/** The judge's prompt for one pair. */
export function judgePrompt(question: string, answer1: string, answer2: string): string {
  // One pass, so a placeholder inside an answer is never filled in.
  const parts: Record<string, string> = {
    question: clip(question),
    answer1: clip(answer1),
    answer2: clip(answer2),
  };
  return JUDGE_PROMPT.replace(/\{(question|answer1|answer2)\}/g, (_, k: string) => parts[k]!);
}

/** The judge's request: one user message, in the provider's format. */
export function judgeRequest(
  provider: EvalProvider,
  model: string,
  prompt: string,
  maxTokens: number,
  temperature: number | null,
): string {
  const t = temperature === null ? {} : { temperature };
  if (provider === "anthropic")
    return JSON.stringify({
      model,
      max_tokens: maxTokens,
      ...t,
      messages: [{ role: "user", content: prompt }],
    });
  if (provider === "openai-chat")
    return JSON.stringify({
      model,
      max_completion_tokens: maxTokens,
      ...t,
      messages: [{ role: "user", content: prompt }],
    });
  return JSON.stringify({ model, max_output_tokens: maxTokens, ...t, input: prompt, store: false });
}

/** The verdict in a judge's reply (null when its first word is neither), and its reason. */
export function parseVerdict(text: string): { equivalent: boolean | null; reason: string } {
  const trimmed = text.trim();
  const m = /^[\s*_#`"'>-]*(EQUIVALENT|DIFFERENT)\b/i.exec(trimmed);
  const reason = (m === null ? trimmed : trimmed.slice(m[0].length)).replace(/^[\s*_.:,-]+/, "");
  return {
    equivalent: m === null ? null : m[1]!.toUpperCase() === "EQUIVALENT",
    reason: reason.replace(/\s+/g, " ").slice(0, 300),
  };
}

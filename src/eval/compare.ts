/**
 * How two answers at the same point of a conversation compare (docs/measure.md): first the next
 * action (the tool calls, by name and normalised JSON arguments, in any order), then, when neither
 * calls a tool, the text: normalised exact match, else a judge's verdict when there is one, else a
 * word-level similarity against a threshold. Pure and bounded: texts are compared on their first
 * MAX_WORDS words.
 */
import type { AnswerView, PairComparison, ToolCall } from "./types.ts";

/** Words of each text the similarity reads (its work is quadratic in them). */
export const MAX_WORDS = 2000;

/** Unicode-folded, lower-cased, whitespace collapsed: formatting is not a difference. */
export function normaliseText(text: string): string {
  return text.normalize("NFKC").toLowerCase().replace(/\s+/g, " ").trim();
}

/** JSON with object keys sorted at every depth: the same value gives the same text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function callKeys(calls: readonly ToolCall[]): string[] {
  return calls.map((c) => `${c.name}\u0000${canonicalJson(c.args)}`).sort();
}

/** The same tool calls (names and normalised arguments, as a multiset), or both none. */
export function sameAction(a: AnswerView, b: AnswerView): boolean {
  const x = callKeys(a.calls);
  const y = callKeys(b.calls);
  return x.length === y.length && x.every((k, i) => k === y[i]);
}

function words(text: string): string[] {
  return (normaliseText(text).match(/[\p{L}\p{N}]+(?:[.,'’-][\p{L}\p{N}]+)*/gu) ?? []).slice(
    0,
    MAX_WORDS,
  );
}

/**
 * 2·LCS / (|a| + |b|) over the texts' words (the Ratcliff/Obershelp family's measure, on words):
 * 1 for the same words in the same order, 0 for nothing in common.
 */
export function similarity(a: string, b: string): number {
  const x = words(a);
  const y = words(b);
  if (x.length === 0 && y.length === 0) return 1;
  if (x.length === 0 || y.length === 0) return 0;
  let prev = new Uint16Array(y.length + 1);
  let row = new Uint16Array(y.length + 1);
  for (let i = 1; i <= x.length; i++) {
    for (let j = 1; j <= y.length; j++)
      row[j] = x[i - 1] === y[j - 1] ? prev[j - 1]! + 1 : Math.max(prev[j]!, row[j - 1]!);
    [prev, row] = [row, prev];
  }
  return (2 * prev[y.length]!) / (x.length + y.length);
}

export interface CompareOptions {
  /** Similarity at or above which two texts count as the same answer. */
  threshold: number;
  /** The judge's verdict on the pair, when one was asked (null: none, or no verdict). */
  judge: boolean | null;
}

/** Both answers are text (neither calls a tool): the text decides, so a judge may be asked. */
export function isTextPair(a: AnswerView, b: AnswerView): boolean {
  return a.calls.length === 0 && b.calls.length === 0;
}

/** One pair's comparison: the action, then the text (see above), with why it disagrees. */
export function comparePair(
  id: string,
  pair: "AB" | "AA",
  a: AnswerView,
  b: AnswerView,
  options: CompareOptions,
): PairComparison {
  const action = sameAction(a, b);
  const textExact = normaliseText(a.text) === normaliseText(b.text);
  const sim = textExact ? 1 : similarity(a.text, b.text);
  const base = { id, pair, action, text_exact: textExact, similarity: sim, judge: options.judge };
  if (!action) {
    const why =
      a.calls.length === 0 || b.calls.length === 0
        ? "one answer calls a tool, the other does not"
        : "different tool calls";
    return { ...base, agree: false, why };
  }
  if (!isTextPair(a, b) || textExact) return { ...base, agree: true, why: "" };
  if (options.judge !== null)
    return {
      ...base,
      agree: options.judge,
      why: options.judge ? "" : "the judge found the answers different",
    };
  const agree = sim >= options.threshold;
  return {
    ...base,
    agree,
    why: agree ? "" : `texts differ (similarity ${sim.toFixed(2)} < ${options.threshold})`,
  };
}

/**
 * What every recall answer shares: its shape, the room kept for a cut notice, and the `is_error` answer a
 * model's mistake gets.
 */
import { safeCut } from "./text.ts";

export type RecallAnswerMode = "query" | "slice" | "json_path" | "head" | "error";

export interface RecallAnswer {
  /** What goes into the tool result. */
  content: string;
  is_error: boolean;
  mode: RecallAnswerMode;
  /** Length of the whole body (0 when it was not found). */
  total_chars: number;
  truncated: boolean;
  next_offset?: number;
  matches?: number;
}

/** Chars kept free for the notice that says an answer was cut. */
export const NOTICE_RESERVE = 240;

/** A model-chosen string repeated in an answer, quoted and cut: a 1 MB query must not make a 1 MB answer. */
export function echo(text: string, max = 100): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, safeCut(text, max))}…` : text);
}

/** An answer that tells the model what it got wrong and what to do instead. */
export function mistake(content: string, total = 0): RecallAnswer {
  return { content, is_error: true, mode: "error", total_chars: total, truncated: false };
}

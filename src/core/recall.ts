/**
 * recall_tool_result: read a slice of an offloaded body back. Deterministic (substring, offset, JSONPath; no
 * semantic search), capped, and forgiving: a model's mistake is an `is_error` answer that says what to do
 * instead, never an exception. A mem_id of another session or tenant reads exactly like an unknown one.
 */
import { RECALL_HARD_CAP_CHARS, type RecallMode } from "../config.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import { boundedStringify } from "./json/stringify.ts";
import type { RecallStore } from "./ports.ts";
import { echo, mistake, type RecallAnswer } from "./recall-answer.ts";
import { byJsonPath } from "./recall-json-path.ts";
import { byQuery } from "./recall-query.ts";
import { bySlice } from "./recall-slice.ts";
import { RecallWork } from "./recall-work.ts";
import { type SessionInput, sessionRef } from "./session.ts";

export type { RecallAnswer, RecallAnswerMode } from "./recall-answer.ts";
export { echo } from "./recall-answer.ts";
export { MAX_JSON_PATH_CHARS, MAX_MATCHES, normalizeJsonPath } from "./recall-json-path.ts";

export interface RecallArguments {
  mem_id: unknown;
  query?: unknown;
  window?: unknown;
  offset?: unknown;
  max_chars?: unknown;
  json_path?: unknown;
}

export interface RecallInput extends RecallArguments {
  store: RecallStore;
  session: SessionInput;
  /** Which arguments are enabled (the session's tool_result_recall_mode). */
  mode?: RecallMode;
  /** Cap on the answer, at most 50,000 chars. */
  max_answer_chars?: number;
  /** ±context for query matches when the call gives no window. */
  default_window?: number;
  /**
   * The work budget this question shares with the other questions of its call (recall-many.ts);
   * a recall without one has its own.
   */
  work?: RecallWork;
}

/** An optional integer argument ≥ `min`, or the sentence that says it is not one. */
function optionalInt(v: unknown, name: string, min: number): number | string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min)
    return `${name} must be an integer ≥ ${min} (got ${boundedStringify(v, 60).text}).`;
  return v;
}

/**
 * One question about one offloaded body: the model's arguments checked (a mistake is an `is_error` answer),
 * the body read from the store, then answered by query, json_path or slice (the head when none is given).
 * The public `recall` (recall-many.ts) sends each question of a call here.
 */
export async function recall(input: RecallInput): Promise<RecallAnswer> {
  const mode = input.mode ?? "both";
  const cap = Math.min(
    RECALL_HARD_CAP_CHARS,
    Math.max(500, input.max_answer_chars ?? RECALL_HARD_CAP_CHARS),
  );
  const { mem_id: memId, query, json_path: jsonPath } = input;

  if (typeof memId !== "string" || memId === "")
    return mistake('mem_id is required: copy it from the stub (it looks like "trm_…").');
  const offset = optionalInt(input.offset, "offset", 0);
  const maxChars = optionalInt(input.max_chars, "max_chars", 1);
  const window = optionalInt(input.window, "window", 0);
  for (const v of [offset, maxChars, window]) if (typeof v === "string") return mistake(v);
  if (query !== undefined && query !== null && (typeof query !== "string" || query === ""))
    return mistake("query must be a non-empty string.");
  if (
    jsonPath !== undefined &&
    jsonPath !== null &&
    (typeof jsonPath !== "string" || jsonPath.trim() === "")
  )
    return mistake("json_path must be a non-empty string.");
  const hasQuery = typeof query === "string";
  const hasPath = typeof jsonPath === "string";
  if (hasQuery && hasPath) return mistake("Give either query or json_path, not both.");
  if (hasQuery && mode === "structural")
    return mistake("query is not enabled here; use json_path, or offset with max_chars.");
  if (hasPath && mode === "window")
    return mistake("json_path is not enabled here; use query, or offset with max_chars.");

  const ref = sessionRef(input.session);
  let stored;
  try {
    stored = await input.store.getBody(ref, memId);
  } catch (cause) {
    throw new OffloadError("storage_error", "the ledger could not be read", { cause });
  }
  if (stored === null) {
    const why = await input.store.whyMissing?.(ref, memId).catch(() => null);
    if (typeof why === "string")
      return mistake(
        `${echo(memId, 64)} is no longer stored: ${why}. Work from what the conversation still shows, or run the tool again.`,
      );
    return mistake(
      `No offloaded result has mem_id ${echo(memId, 64)} in this conversation. Use a mem_id exactly as shown in a stub.`,
    );
  }
  const body = stored.body;
  const work = input.work ?? new RecallWork();
  let answer: RecallAnswer;
  try {
    if (hasQuery)
      answer = byQuery(
        body,
        memId,
        query as string,
        (window as number | undefined) ?? input.default_window ?? 300,
        cap,
        work.matchLimit,
      );
    else if (hasPath) answer = byJsonPath(body, memId, jsonPath as string, cap, work);
    else
      answer = bySlice(
        body,
        memId,
        (offset as number | undefined) ?? 0,
        (maxChars as number | undefined) ?? cap,
        cap,
        offset === undefined && maxChars === undefined,
      );
  } catch (e) {
    // Whatever the body or the arguments (a depth, a size, a bug of ours), the model gets an answer it can
    // act on and the conversation goes on: a recall never fails the request that carries it.
    if (isOffloadError(e) && e.type === "storage_error") throw e;
    return mistake(
      `${memId} could not be read this way (${e instanceof Error ? e.name : "error"}). Read a slice with offset and max_chars, or use a narrower query or json_path.`,
      body.length,
    );
  }
  if (!answer.is_error) {
    try {
      await input.store.noteRecall(ref, memId);
    } catch {
      // Counting recalls feeds reports only; a failed count must not fail the model's read.
    }
  }
  return answer;
}

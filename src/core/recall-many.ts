/**
 * recall_tool_result's front door: one call may ask several exact queries (`queries`) or several JSON paths
 * (`json_paths`) of one body at once, and every answer is sized to what was asked. A thin layer over the
 * single-question `recall`: each question gets its share of the answer cap, the body is read from the store
 * once, and the call counts as one recall (one hop) for the learning statistics.
 *
 * Sizing: a query or path answers with at most QUERY_ANSWER_CHARS unless the call raises it with `max_chars`
 * (up to the session's cap); a call with n questions shares min(cap, max_chars or n·QUERY_ANSWER_CHARS)
 * between them. A slice (`offset`/`max_chars`) or the head is answered as before.
 *
 * Work: the questions of a call share one RecallWork (recall-work.ts), so however many are asked the call
 * parses the body once and does no more than a bounded multiple of one question's work.
 */
import { RECALL_HARD_CAP_CHARS } from "../config.ts";
import type { RecallStore } from "./ports.ts";
import { type RecallInput, recall } from "./recall.ts";
import { echo, type RecallAnswer } from "./recall-answer.ts";
import { RecallWork } from "./recall-work.ts";
import { formatInt } from "./text.ts";

/** Questions one call may ask. */
export const MAX_QUESTIONS = 8;
/** What one query or path answers with unless the call asks for more. */
export const QUERY_ANSWER_CHARS = 8000;
/** recall's own floor for a cap. */
const MIN_SHARE = 500;

export interface RecallManyInput extends RecallInput {
  /** Several exact substrings, each answered like `query`. */
  queries?: unknown;
  /** Several JSON paths, each answered like `json_path`. */
  json_paths?: unknown;
}

function mistake(content: string): RecallAnswer {
  return { content, is_error: true, mode: "error", total_chars: 0, truncated: false };
}

/** The questions of a `queries`/`json_paths` argument, or a mistake to tell the model. */
function questions(value: unknown, name: string): string[] | string {
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    !value.every((q) => typeof q === "string" && q !== "")
  )
    return `${name} must be a non-empty array of non-empty strings.`;
  if (value.length > MAX_QUESTIONS)
    return `${name} takes at most ${MAX_QUESTIONS} entries per call (got ${formatInt(value.length)}).`;
  return [...new Set(value as string[])];
}

/**
 * The store as one call sees it: a body is read once however many questions it answers, and only the first
 * successful answer counts as a recall.
 */
function oneCallStore(store: RecallStore): RecallStore {
  const bodies = new Map<string, ReturnType<RecallStore["getBody"]>>();
  let counted = false;
  return {
    getBody: (ref, memId) => {
      let body = bodies.get(memId);
      if (body === undefined) bodies.set(memId, (body = store.getBody(ref, memId)));
      return body;
    },
    noteRecall: async (ref, memId) => {
      if (counted) return;
      counted = true;
      await store.noteRecall(ref, memId);
    },
    ...(store.whyMissing === undefined
      ? {}
      : { whyMissing: (ref, memId) => store.whyMissing!(ref, memId) }),
  };
}

/**
 * Answers the model's `recall_tool_result` call: a slice of an offloaded body (a query's matches
 * with context, an offset and length, or a JSONPath; or several `queries` / `json_paths` in one
 * call, up to MAX_QUESTIONS, answered from one read), capped and deterministic. A model's mistake
 * (an unknown mem_id, a bad path) is an answer with `is_error: true` that says what to do, never an
 * exception. Each question goes through recall.ts (queries and paths sized by default, see above).
 * The library exports it as `recall`.
 *
 * @example
 * const answer = await recall({ store, session: "chat-42", mem_id: "trm_…", query: "timeout" });
 * const { content, is_error } = answer;
 * results.push({ type: "tool_result", tool_use_id: call.id, content, is_error });
 */
export async function recallMany(input: RecallManyInput): Promise<RecallAnswer> {
  const cap = Math.min(
    RECALL_HARD_CAP_CHARS,
    Math.max(MIN_SHARE, input.max_answer_chars ?? RECALL_HARD_CAP_CHARS),
  );
  const { queries, json_paths: paths, ...single } = input;
  const hasQueries = queries !== undefined && queries !== null;
  const hasPaths = paths !== undefined && paths !== null;
  const asked =
    typeof input.max_chars === "number" && Number.isInteger(input.max_chars) && input.max_chars > 0
      ? input.max_chars
      : undefined;
  if (!hasQueries && !hasPaths) {
    const question = typeof input.query === "string" || typeof input.json_path === "string";
    if (!question) return recall(single);
    return recall({ ...single, max_answer_chars: Math.min(cap, asked ?? QUERY_ANSWER_CHARS) });
  }
  if (hasQueries && hasPaths) return mistake("Give either queries or json_paths, not both.");
  for (const [key, v] of Object.entries({
    query: input.query,
    json_path: input.json_path,
    offset: input.offset,
  }))
    if (v !== undefined && v !== null)
      return mistake(`${key} cannot be combined with ${hasQueries ? "queries" : "json_paths"}.`);
  const list = hasQueries ? questions(queries, "queries") : questions(paths, "json_paths");
  if (typeof list === "string") return mistake(list);

  const share = Math.max(
    MIN_SHARE,
    Math.floor(Math.min(cap, asked ?? QUERY_ANSWER_CHARS * list.length) / list.length),
  );
  const store = oneCallStore(input.store);
  const work = new RecallWork(list.length);
  const answers: RecallAnswer[] = [];
  for (const q of list) {
    const answer = await recall({
      ...single,
      store,
      work,
      max_chars: undefined,
      max_answer_chars: share,
      ...(hasQueries ? { query: q } : { json_path: q }),
    });
    // An unknown mem_id or a mode that does not offer the argument: the same mistake for every question.
    if (answer.is_error && answer.total_chars === 0) return answer;
    answers.push(answer);
  }
  const kind = hasQueries ? "query" : "json_path";
  const content = [
    `${formatInt(list.length)} ${hasQueries ? "queries" : "json_paths"}, answered one by one:`,
    ...answers.map(
      (a, i) => `=== ${kind} ${i + 1} of ${list.length}: ${echo(list[i]!)} ===\n${a.content}`,
    ),
  ].join("\n");
  return {
    content,
    is_error: answers.every((a) => a.is_error),
    mode: kind,
    total_chars: answers[0]!.total_chars,
    truncated: answers.some((a) => a.truncated),
    matches: answers.reduce((n, a) => n + (a.matches ?? 0), 0),
  };
}

/**
 * recall_tool_result: read a slice of an offloaded body back. Deterministic (substring, offset, JSONPath; no
 * semantic search), capped, and forgiving: a model's mistake is an `is_error` answer that says what to do
 * instead, never an exception. A mem_id of another session or tenant reads exactly like an unknown one.
 */
import { RECALL_HARD_CAP_CHARS, type RecallMode } from "../config.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import { FILTER_HELP } from "./json/filter.ts";
import { PathSyntaxError, parsePath, pathString, type Selector, walkPath } from "./json/path.ts";
import { boundedStringify } from "./json/stringify.ts";
import type { OffloadStore } from "./ports.ts";
import { RecallWork } from "./recall-work.ts";
import { type SessionInput, sessionRef } from "./session.ts";
import { formatInt, safeCut } from "./text.ts";

export interface RecallArguments {
  mem_id: unknown;
  query?: unknown;
  window?: unknown;
  offset?: unknown;
  max_chars?: unknown;
  json_path?: unknown;
}

export interface RecallInput extends RecallArguments {
  store: OffloadStore;
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

const NOTICE_RESERVE = 240;

/**
 * A json_path with more values than this is more than any answer can show, and is told to narrow
 * (the answer's own cap bounds only what is sent; recall-work.ts bounds the rest of the work).
 */
export const MAX_MATCHES = 10_000;
/** A longer json_path is refused before it is parsed. */
export const MAX_JSON_PATH_CHARS = 1000;

/** A model-chosen string repeated in an answer, quoted and cut: a 1 MB query must not make a 1 MB answer. */
export function echo(text: string, max = 100): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, safeCut(text, max))}…` : text);
}

function mistake(content: string, total = 0): RecallAnswer {
  return { content, is_error: true, mode: "error", total_chars: total, truncated: false };
}

function optionalInt(v: unknown, name: string, min: number): number | string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min)
    return `${name} must be an integer ≥ ${min} (got ${boundedStringify(v, 60).text}).`;
  return v;
}

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

function bySlice(
  body: string,
  memId: string,
  offset: number,
  maxChars: number,
  cap: number,
  head: boolean,
): RecallAnswer {
  const total = body.length;
  if (offset >= total && !(offset === 0 && total === 0)) {
    return mistake(
      `offset ${formatInt(offset)} is past the end: ${memId} has ${formatInt(total)} chars.`,
      total,
    );
  }
  // Never split a surrogate pair: a slice starting on a low surrogate starts one unit earlier.
  const start =
    offset > 0 && offset < total && safeCut(body, offset) !== offset ? offset - 1 : offset;
  const want = Math.min(maxChars, cap - NOTICE_RESERVE);
  const end = safeCut(body, Math.min(total, start + want));
  const slice = body.slice(start, end);
  const more = end < total;
  const truncated = more && maxChars > want;
  const header = `[${memId}: chars ${formatInt(start)}–${formatInt(end)} of ${formatInt(total)}${truncated ? `, cut at the ${formatInt(cap)}-char cap` : ""}${more ? `; continue with offset=${end}` : "; end of result"}]`;
  return {
    content: `${header}\n${slice}`,
    is_error: false,
    mode: head ? "head" : "slice",
    total_chars: total,
    truncated,
    ...(more ? { next_offset: end } : {}),
  };
}

/** One excerpt of a query answer: chars start–end, covering matches first–last (1-based). */
interface Excerpt {
  start: number;
  end: number;
  first: number;
  last: number;
}

/**
 * Every match with ±window chars, overlapping windows merged into one excerpt so dense matches do not repeat
 * the same text. One pass of indexOf that keeps only what the answer shows: excerpts are written as they
 * close, the first one cut to fit when it alone is over the cap (a merged run of dense matches), and once the
 * answer is full the scan only counts, up to `countLimit` (MAX_QUERY_COUNT, or a call's share of
 * it). Work and memory are bounded by the body and the cap, not by the number of matches.
 */
function byQuery(
  body: string,
  memId: string,
  query: string,
  window: number,
  cap: number,
  countLimit: number,
): RecallAnswer {
  const total = body.length;
  const intro = ` for ${echo(query)} in ${memId} (${formatInt(total)} chars), ±${formatInt(window)} chars each:`;
  // The header's count is at most "more than 10,000 matches".
  const room = cap - NOTICE_RESERVE - (30 + intro.length);
  const pieces: string[] = [];
  let used = 0;
  let full = false;
  let shownMatches = 0;
  let next: number | undefined;
  let cur: Excerpt | null = null;
  /** Offsets of the open excerpt's matches (it is closed once it outgrows the room, so this stays small). */
  let curOffsets: number[] = [];
  let count = 0;
  let capped = false;

  const close = (e: Excerpt, offsets: readonly number[]): void => {
    const label = (first: number, last: number) =>
      first === last ? `match ${first}` : `matches ${first}–${last}`;
    const whole = `\n--- ${label(e.first, e.last)} (chars ${formatInt(e.start)}–${formatInt(e.end)}) ---\n`;
    if (used + whole.length + (e.end - e.start) <= room) {
      pieces.push(whole + body.slice(e.start, e.end));
      used += whole.length + (e.end - e.start);
      shownMatches = e.last;
      return;
    }
    full = true;
    next = offsets[0];
    if (pieces.length > 0) return;
    // Nothing shown yet: this excerpt, cut to fit, and moved forward if its first match would fall outside.
    const budget = Math.max(1, room - 60);
    const firstAt = offsets[0]!;
    let start = e.start;
    if (firstAt + query.length > start + budget)
      start = safeCut(
        body,
        Math.max(e.start, firstAt - Math.floor(Math.max(0, budget - query.length) / 2)),
      );
    const end = safeCut(body, Math.min(e.end, start + budget));
    const inside = offsets.filter((o) => o + query.length <= end);
    const last = inside.length === 0 ? e.first : e.first + inside.length - 1;
    pieces.push(
      `\n--- ${label(e.first, last)} (chars ${formatInt(start)}–${formatInt(end)}, cut) ---\n${body.slice(start, end)}`,
    );
    shownMatches = inside.length === 0 ? 0 : last;
    next = inside.length === 0 ? firstAt : offsets[inside.length];
  };

  for (
    let at = body.indexOf(query);
    at !== -1;
    at = body.indexOf(query, at + Math.max(1, query.length))
  ) {
    count++;
    if (count > countLimit) {
      capped = true;
      if (next === undefined) next = at;
      break;
    }
    if (full) {
      if (next === undefined) next = at;
      continue;
    }
    const start = Math.max(0, safeCut(body, at - window));
    const end = safeCut(body, Math.min(total, at + query.length + window));
    if (cur !== null && start <= cur.end) {
      cur.end = Math.max(cur.end, end);
      cur.last = count;
      curOffsets.push(at);
    } else {
      if (cur !== null) close(cur, curOffsets);
      if (full) {
        if (next === undefined) next = at;
        continue;
      }
      cur = { start, end, first: count, last: count };
      curOffsets = [at];
    }
    // A run of overlapping windows longer than the room can only be shown cut: close it now.
    if (cur.end - cur.start > room - used) {
      close(cur, curOffsets);
      cur = null;
      curOffsets = [];
    }
  }
  if (cur !== null && !full) {
    const capAt = next;
    next = undefined;
    close(cur, curOffsets);
    if (next === undefined) next = capAt;
  }
  if (count === 0) {
    return {
      content: `No match for ${echo(query)} in ${memId} (${formatInt(total)} chars; matching is exact and case-sensitive). Try a shorter or differently cased query, or read a slice with offset and max_chars.`,
      is_error: false,
      mode: "query",
      total_chars: total,
      truncated: false,
      matches: 0,
    };
  }
  const counted = capped ? countLimit : count;
  const many = capped
    ? `more than ${formatInt(countLimit)} matches`
    : `${formatInt(count)} match${count === 1 ? "" : "es"}`;
  let out = `${many}${intro}${pieces.join("")}`;
  const truncated = full || capped;
  if (truncated) {
    const of = capped ? `more than ${formatInt(countLimit)}` : formatInt(count);
    out += `\n[cut: showing matches 1–${formatInt(shownMatches)} of ${of} to stay under ${formatInt(cap)} chars; refine the query, lower window, or read from offset=${next ?? 0}.]`;
  }
  return {
    content: out,
    is_error: false,
    mode: "query",
    total_chars: total,
    truncated,
    matches: counted,
    ...(truncated && next !== undefined ? { next_offset: next } : {}),
  };
}

/** Accept `items[3].price`, `.items`, `[0]` and `$…` alike. */
export function normalizeJsonPath(path: string): string {
  const p = path.trim();
  if (p.startsWith("$")) return p;
  if (p.startsWith("[")) return `$${p}`;
  if (p.startsWith(".")) return `$${p}`;
  return `$.${p}`;
}

const PATH_HINT =
  "narrow the path: an index ($.items[0]), a slice ($.items[0:20]), a key ($.items[0].name) or a filter ($.items[?(@.price > 10)])";

function byJsonPath(
  body: string,
  memId: string,
  path: string,
  cap: number,
  work: RecallWork,
): RecallAnswer {
  const total = body.length;
  if (path.length > MAX_JSON_PATH_CHARS)
    return mistake(
      `json_path is ${formatInt(path.length)} chars long; at most ${formatInt(MAX_JSON_PATH_CHARS)} are read. Use a shorter path, e.g. "$.items[0].name".`,
      total,
    );
  const normalized = normalizeJsonPath(path);
  let selectors: Selector[];
  try {
    selectors = parsePath(normalized);
  } catch (e) {
    if (!(e instanceof PathSyntaxError)) throw e;
    return mistake(
      `json_path ${echo(path)} is not a JSONPath this service reads (${e.message}). Example: "$.items[0].name"; ${FILTER_HELP}.`,
      total,
    );
  }
  const parsed = work.parse(memId, body);
  if (!parsed.ok)
    return mistake(
      parsed.why === "too_large"
        ? `${memId} holds too many JSON values (about ${formatInt(Math.round(parsed.bytes / 1_048_576))} MB once parsed) for json_path here; use query, or offset with max_chars.`
        : parsed.why === "not_json"
          ? `${memId} is not JSON, so json_path does not apply; use query, or offset with max_chars.`
          : `${memId} is JSON too deeply nested to read with json_path; use query, or offset with max_chars.`,
      total,
    );
  const shown = `at ${echo(normalized)} in ${memId}`;
  // What the values may take: the cap less the cut notice and the header ("10,000 values " + shown + ":").
  const room = cap - NOTICE_RESERVE - (16 + shown.length);
  const pieces: string[] = [];
  let used = 0;
  let matches = 0;
  let truncated = false;
  const steps = work.steps(total);
  const end = walkPath(parsed.json, selectors, {
    budget: steps.budget,
    onSteps: (n) => work.spend(n),
    onMatch(value, at) {
      matches++;
      if (matches > MAX_MATCHES) return true;
      if (truncated) return false;
      const left = room - used;
      const prefix = `\n${pathString(at, left)} = `;
      const text = boundedStringify(value, Math.max(0, left - prefix.length));
      const piece = prefix + text.text;
      if (text.complete && piece.length <= left) {
        pieces.push(piece);
        used += piece.length;
        return false;
      }
      // A value too big for what is left is shown cut when it is the first; later ones are left out.
      if (pieces.length === 0) {
        pieces.push(piece.slice(0, safeCut(piece, left)));
        used = room;
      }
      truncated = true;
      return false;
    },
  });
  if (end === "stopped")
    return mistake(
      `json_path ${echo(normalized)} matches more than ${formatInt(MAX_MATCHES)} values in ${memId}: too many to answer. Please ${PATH_HINT}.`,
      total,
    );
  if (end === "budget")
    return mistake(
      steps.shared
        ? `json_path ${echo(normalized)} was not answered: this call's json_paths have used up the work one call may do on ${memId}. Ask it in a call of its own, or ${PATH_HINT}.`
        : `json_path ${echo(normalized)} walks too much of ${memId} (${formatInt(total)} chars) for one recall. Please ${PATH_HINT}.`,
      total,
    );
  if (matches === 0) {
    return {
      content: `json_path ${echo(normalized)} matched nothing in ${memId}. The stub's structure lists the top-level keys.`,
      is_error: false,
      mode: "json_path",
      total_chars: total,
      truncated: false,
      matches: 0,
    };
  }
  let out = `${formatInt(matches)} value${matches === 1 ? "" : "s"} ${shown}:${pieces.join("")}`;
  if (truncated)
    out += `\n[cut at ${formatInt(cap)} chars: showing ${formatInt(pieces.length)} of ${formatInt(matches)} values; narrow the path (e.g. an index or a slice like [0:10]).]`;
  return {
    content: out,
    is_error: false,
    mode: "json_path",
    total_chars: total,
    truncated,
    matches,
  };
}

/**
 * recall_tool_result: read a slice of an offloaded body back. Deterministic (substring, offset, JSONPath; no
 * semantic search), capped, and forgiving: a model's mistake is an `is_error` answer that says what to do
 * instead, never an exception. A mem_id of another session or tenant reads exactly like an unknown one.
 */
import { JSONPath } from "jsonpath-plus";
import { RECALL_HARD_CAP_CHARS, type RecallMode } from "../config.ts";
import { OffloadError } from "../errors.ts";
import type { OffloadStore } from "./ports.ts";
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

function mistake(content: string, total = 0): RecallAnswer {
  return { content, is_error: true, mode: "error", total_chars: total, truncated: false };
}

function optionalInt(v: unknown, name: string, min: number): number | string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min)
    return `${name} must be an integer ≥ ${min} (got ${JSON.stringify(v)}).`;
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
      `No offloaded result has mem_id ${JSON.stringify(memId)} in this conversation. Use a mem_id exactly as shown in a stub.`,
    );
  }
  const body = stored.body;
  let answer: RecallAnswer;
  if (hasQuery)
    answer = byQuery(
      body,
      memId,
      query as string,
      (window as number | undefined) ?? input.default_window ?? 300,
      cap,
    );
  else if (hasPath) answer = byJsonPath(body, memId, jsonPath as string, cap);
  else
    answer = bySlice(
      body,
      memId,
      (offset as number | undefined) ?? 0,
      (maxChars as number | undefined) ?? cap,
      cap,
      offset === undefined && maxChars === undefined,
    );
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

function byQuery(
  body: string,
  memId: string,
  query: string,
  window: number,
  cap: number,
): RecallAnswer {
  const total = body.length;
  const offsets: number[] = [];
  for (
    let i = body.indexOf(query);
    i !== -1;
    i = body.indexOf(query, i + Math.max(1, query.length))
  )
    offsets.push(i);
  if (offsets.length === 0) {
    return {
      content: `No match for ${JSON.stringify(query)} in ${memId} (${formatInt(total)} chars; matching is exact and case-sensitive). Try a shorter or differently cased query, or read a slice with offset and max_chars.`,
      is_error: false,
      mode: "query",
      total_chars: total,
      truncated: false,
      matches: 0,
    };
  }
  // Overlapping windows merge into one excerpt, so dense matches do not repeat the same text.
  const excerpts: { start: number; end: number; first: number; last: number }[] = [];
  offsets.forEach((at, n) => {
    const start = Math.max(0, safeCut(body, at - window));
    const end = safeCut(body, Math.min(total, at + query.length + window));
    const prev = excerpts[excerpts.length - 1];
    if (prev !== undefined && start <= prev.end) {
      prev.end = Math.max(prev.end, end);
      prev.last = n + 1;
    } else excerpts.push({ start, end, first: n + 1, last: n + 1 });
  });
  let out = `${formatInt(offsets.length)} match${offsets.length === 1 ? "" : "es"} for ${JSON.stringify(query)} in ${memId} (${formatInt(total)} chars), ±${formatInt(window)} chars each:`;
  let shownMatches = 0;
  let truncated = false;
  for (const e of excerpts) {
    const label = e.first === e.last ? `match ${e.first}` : `matches ${e.first}–${e.last}`;
    const piece = `\n--- ${label} (chars ${formatInt(e.start)}–${formatInt(e.end)}) ---\n${body.slice(e.start, e.end)}`;
    if (out.length + piece.length > cap - NOTICE_RESERVE) {
      truncated = true;
      break;
    }
    out += piece;
    shownMatches = e.last;
  }
  if (truncated) {
    out += `\n[cut: showing matches 1–${formatInt(shownMatches)} of ${formatInt(offsets.length)} to stay under ${formatInt(cap)} chars; refine the query, lower window, or read from offset=${offsets[shownMatches] ?? 0}.]`;
  }
  const next = truncated ? offsets[shownMatches] : undefined;
  return {
    content: out,
    is_error: false,
    mode: "query",
    total_chars: total,
    truncated,
    matches: offsets.length,
    ...(next === undefined ? {} : { next_offset: next }),
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

function byJsonPath(body: string, memId: string, path: string, cap: number): RecallAnswer {
  const total = body.length;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return mistake(
      `${memId} is not JSON, so json_path does not apply; use query, or offset with max_chars.`,
      total,
    );
  }
  const normalized = normalizeJsonPath(path);
  let results: { path: string; value: unknown }[];
  try {
    // "safe" evaluation: production Workers forbid eval/new Function, and a model's filter is untrusted input.
    const found = JSONPath({
      path: normalized,
      json: json as object,
      eval: "safe",
      wrap: true,
      resultType: "all",
    }) as { path: string; value: unknown }[];
    results = found.map((r) => ({ path: r.path, value: r.value }));
  } catch (e) {
    return mistake(
      `json_path ${JSON.stringify(path)} is not a valid JSONPath (${e instanceof Error ? e.message : "parse error"}). Example: "$.items[0].name".`,
      total,
    );
  }
  if (results.length === 0) {
    return {
      content: `json_path ${JSON.stringify(normalized)} matched nothing in ${memId}. The stub's structure lists the top-level keys.`,
      is_error: false,
      mode: "json_path",
      total_chars: total,
      truncated: false,
      matches: 0,
    };
  }
  let out = `${formatInt(results.length)} value${results.length === 1 ? "" : "s"} at ${JSON.stringify(normalized)} in ${memId}:`;
  let shown = 0;
  let truncated = false;
  for (const r of results) {
    const text = JSON.stringify(r.value, null, 1) ?? "null";
    const piece = `\n${r.path} = ${text}`;
    if (out.length + piece.length > cap - NOTICE_RESERVE) {
      // A single huge value is still shown, cut; later ones are left out.
      if (shown === 0) {
        out += piece.slice(0, safeCut(piece, cap - NOTICE_RESERVE - out.length));
        shown = 1;
      }
      truncated = true;
      break;
    }
    out += piece;
    shown++;
  }
  if (truncated)
    out += `\n[cut at ${formatInt(cap)} chars: showing ${formatInt(shown)} of ${formatInt(results.length)} values; narrow the path (e.g. an index or a slice like [0:10]).]`;
  return {
    content: out,
    is_error: false,
    mode: "json_path",
    total_chars: total,
    truncated,
    matches: results.length,
  };
}

/**
 * Recall by JSONPath: the values a path selects in a JSON body, walked with the call's step budget and
 * written only up to the answer's cap.
 */
import { FILTER_HELP } from "./json/filter.ts";
import { PathSyntaxError, parsePath, pathString, type Selector, walkPath } from "./json/path.ts";
import { boundedStringify } from "./json/stringify.ts";
import { echo, mistake, NOTICE_RESERVE, type RecallAnswer } from "./recall-answer.ts";
import type { RecallWork } from "./recall-work.ts";
import { formatInt, safeCut } from "./text.ts";

/**
 * A json_path with more values than this is more than any answer can show, and is told to narrow
 * (the answer's own cap bounds only what is sent; recall-work.ts bounds the rest of the work).
 */
export const MAX_MATCHES = 10_000;
/** A longer json_path is refused before it is parsed. */
export const MAX_JSON_PATH_CHARS = 1000;

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

/** The values `path` selects in the body, or the mistake that says why none can be shown. */
export function byJsonPath(
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

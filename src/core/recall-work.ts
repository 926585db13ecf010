/**
 * The work a recall may do, bounded whatever the model asks. One question (a query, a json_path) has
 * its own bounds; a recall_tool_result call that asks several at once (`queries`, `json_paths`:
 * recall-many.ts) shares one `RecallWork` between them, so eight dense questions do not do eight
 * times the work of one: json_path steps come from one pool for the call, each query counts its
 * matches up to its share of one count, and the body is parsed once for every path.
 */

/** A query counts its matches up to this (a call of several queries shares it), then says "more than". */
export const MAX_QUERY_COUNT = 100_000;
/** json_path steps allowed on any body; each char of the body adds two more, up to MAX_PATH_STEPS. */
const PATH_STEP_BASE = 200_000;
/** A step (a node visited, a selector applied, a filter term evaluated) costs about 0.1–0.25 µs. */
export const MAX_PATH_STEPS = 2_000_000;
/** The steps one call's json_paths may take in all, in units of what one path may take. */
export const CALL_PATH_STEPS_FACTOR = 2;

/**
 * Memory a JSON.parse of the body would take, estimated in one pass over the text (strings
 * skipped): about 56 bytes per array or object and 10 per value in V8. Ordinary records parse to
 * ~3× their text, but `[[],[],…]` or 40,000 levels of `[` parse to 15–30×: a 10 MB body of them
 * would take an isolate's whole 128 MB. json_path refuses a body over MAX_PARSED_BYTES instead of
 * parsing it.
 */
export function parsedSize(body: string): number {
  let containers = 0;
  let values = 1;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    if (c === 34 /* " */) {
      for (i++; i < body.length; i++) {
        const d = body.charCodeAt(i);
        if (d === 92 /* \ */) i++;
        else if (d === 34) break;
      }
    } else if (c === 91 /* [ */ || c === 123 /* { */) containers++;
    else if (c === 44 /* , */) values++;
  }
  return 56 * containers + 10 * (values + containers) + body.length;
}

/**
 * The largest parse json_path makes (see parsedSize): a 10 MB body of ordinary records is about
 * 30 MB.
 */
export const MAX_PARSED_BYTES = 48 * 1_048_576;

/** A body as json_path reads it: its parsed value, or why it cannot be read so. */
export type ParsedBody =
  | { ok: true; json: unknown }
  | { ok: false; why: "too_large"; bytes: number }
  | { ok: false; why: "not_json" | "too_deep" };

/** Steps one json_path may take on a body of `chars`. */
function pathSteps(chars: number): number {
  // Enough for a one-pass path (`$..name`) over a body of some MB, not for paths that multiply the
  // walk (`$..*..*`) on a large one; and never more than about half a second of CPU.
  return Math.min(PATH_STEP_BASE + 2 * chars, MAX_PATH_STEPS);
}

/**
 * The work budget of one recall_tool_result call: `questions` questions of one body. A recall
 * without one gets its own (a single question).
 */
export class RecallWork {
  readonly #questions: number;
  #stepsLeft: number | undefined;
  #parsed: { memId: string; body: ParsedBody } | undefined;

  constructor(questions = 1) {
    this.#questions = Math.max(1, Math.floor(questions));
  }

  /**
   * Matches the next query counts before it says "more than": MAX_QUERY_COUNT shared evenly, so a
   * call's queries count no more than one query alone.
   */
  get matchLimit(): number {
    return Math.max(1, Math.floor(MAX_QUERY_COUNT / this.#questions));
  }

  /**
   * Steps the next json_path on a body of `chars` may take: its own bound, within what the call
   * has left (`shared`: the call's pool, not the path's own bound, is what limits it).
   */
  steps(chars: number): { budget: number; shared: boolean } {
    const own = pathSteps(chars);
    this.#stepsLeft ??= this.#questions === 1 ? own : CALL_PATH_STEPS_FACTOR * own;
    return { budget: Math.min(own, this.#stepsLeft), shared: this.#stepsLeft < own };
  }

  /** Records the steps a json_path took. */
  spend(steps: number): void {
    if (this.#stepsLeft !== undefined) this.#stepsLeft = Math.max(0, this.#stepsLeft - steps);
  }

  /** The body parsed for json_path (or why it cannot be), once per call whatever its paths. */
  parse(memId: string, body: string): ParsedBody {
    if (this.#parsed?.memId === memId) return this.#parsed.body;
    const parsed = parseBody(body);
    this.#parsed = { memId, body: parsed };
    return parsed;
  }
}

function parseBody(body: string): ParsedBody {
  const bytes = parsedSize(body);
  if (bytes > MAX_PARSED_BYTES) return { ok: false, why: "too_large", bytes };
  try {
    return { ok: true, json: JSON.parse(body) };
  } catch (e) {
    // A RangeError: nesting deeper than the engine's parser goes.
    return { ok: false, why: e instanceof SyntaxError ? "not_json" : "too_deep" };
  }
}

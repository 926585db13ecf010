/** Recall by substring: every match with context, in one bounded pass over the body. */
import { echo, NOTICE_RESERVE, type RecallAnswer } from "./recall-answer.ts";
import { formatInt, safeCut } from "./text.ts";

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
export function byQuery(
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

/** Recall by offset and length: a slice of the body, never splitting a surrogate pair. */
import { mistake, NOTICE_RESERVE, type RecallAnswer } from "./recall-answer.ts";
import { formatInt, safeCut } from "./text.ts";

/** `maxChars` chars from `offset` (`head`: no offset or length was asked for), under the cap. */
export function bySlice(
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

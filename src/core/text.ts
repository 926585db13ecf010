/** Small deterministic text helpers shared by stubs, previews and recall (no locale, no clock). */

/** 1234567 → "1,234,567" without Intl (whose output depends on the runtime's locale data). */
export function formatInt(n: number): string {
  const s = String(Math.trunc(Math.abs(n)));
  let out = "";
  for (let i = 0; i < s.length; i++) {
    if (i > 0 && (s.length - i) % 3 === 0) out += ",";
    out += s[i];
  }
  return n < 0 ? `-${out}` : out;
}

/** "1 line", "2,048 lines". */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${formatInt(n)} ${n === 1 ? word : many}`;
}

function isHigh(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
function isLow(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** Move `index` back by one if it would split a surrogate pair (so text.slice(0, index) stays well formed). */
export function safeCut(text: string, index: number): number {
  if (index <= 0 || index >= text.length) return Math.max(0, Math.min(index, text.length));
  return isHigh(text.charCodeAt(index - 1)) && isLow(text.charCodeAt(index)) ? index - 1 : index;
}

/**
 * The head of `text` in at most `max` units: cut at the last line break in the second half of the window
 * when there is one (previews read better whole-lined), never inside a surrogate pair.
 */
export function headOf(text: string, max: number): { head: string; cut: boolean } {
  if (text.length <= max) return { head: text, cut: false };
  let end = safeCut(text, max);
  const nl = text.lastIndexOf("\n", end - 1);
  if (nl >= max / 2) end = nl;
  return { head: text.slice(0, end), cut: true };
}

/** Number of lines (a trailing newline does not start a new one). */
export function countLines(text: string): number {
  if (text.length === 0) return 0;
  let n = 1;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return text.endsWith("\n") ? n - 1 : n;
}

/**
 * Distinctive tokens: the short things agents carry forward from a tool result (order ids, reservation codes,
 * SHAs, file paths, long numbers). A token is a run of letters, digits and `_ - . /` with the punctuation
 * trimmed from its ends; it is distinctive when it is at least 6 chars long and holds a digit, mixed case
 * (an upper-case letter after the first char, next to lower-case ones) or one of `_ - . /`, or when it is a
 * number with at least 4 significant digits that is not a calendar year (years are written from the model's
 * own knowledge as often as from a result).
 */

const TOKEN = /[A-Za-z0-9_./-]+/g;
const EDGE = /^[./-]+|[./-]+$/g;
/** Longer runs are blobs (base64, minified code), not identifiers anyone retypes. */
export const MAX_TOKEN_CHARS = 120;
const MIN_TOKEN_CHARS = 6;
const MIN_SIGNIFICANT_DIGITS = 4;

function significantDigits(number: string): number {
  const digits = number.replace(".", "").replace(/^0+/, "");
  // Trailing zeros of an integer are not significant (10000 is one digit); after a decimal point they are.
  return (number.includes(".") ? digits : digits.replace(/0+$/, "")).length;
}

/** Whether a (trimmed) token is distinctive enough to be evidence of having read the text it came from. */
export function isDistinctive(token: string): boolean {
  if (token.length > MAX_TOKEN_CHARS) return false;
  if (/^\d+(\.\d+)?$/.test(token)) {
    if (/^(19|20)\d\d$/.test(token)) return false;
    return significantDigits(token) >= MIN_SIGNIFICANT_DIGITS;
  }
  if (token.length < MIN_TOKEN_CHARS || !/[A-Za-z0-9]/.test(token)) return false;
  if (/\d/.test(token) || /[_./-]/.test(token)) return true;
  return /[a-z]/.test(token) && /[A-Z]/.test(token.slice(1));
}

/** The trimmed tokens of a text, each once, in order of first appearance. */
export function tokensOf(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(TOKEN)) {
    const t = m[0].replace(EDGE, "");
    if (t !== "" && t.length <= MAX_TOKEN_CHARS) out.add(t);
  }
  return [...out];
}

/** The distinctive tokens of a text. */
export function distinctiveTokens(text: string): string[] {
  return tokensOf(text).filter(isDistinctive);
}

/**
 * Every token of a body and, for paths, each part after a `/` and before one (`/data/a/b.ts` also holds
 * `a/b.ts`, `b.ts`, `data/a`, `data`), so a model citing part of a path is seen as citing the body. Calls
 * `visit` once per (body, token); `visit` returning nothing keeps it cheap for multi-MB bodies.
 */
export function forEachBodyToken(body: string, visit: (token: string) => void): void {
  const seen = new Set<string>();
  const emit = (t: string) => {
    const trimmed = t.replace(EDGE, "");
    if (trimmed === "" || seen.has(trimmed)) return;
    seen.add(trimmed);
    visit(trimmed);
  };
  for (const m of body.matchAll(TOKEN)) {
    const t = m[0];
    if (t.length > MAX_TOKEN_CHARS) continue;
    emit(t);
    if (!t.includes("/")) continue;
    for (let i = t.indexOf("/"); i !== -1; i = t.indexOf("/", i + 1)) {
      emit(t.slice(i + 1));
      emit(t.slice(0, i));
    }
  }
}

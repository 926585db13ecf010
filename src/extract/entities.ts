/** Character references for XML (the five predefined + numeric) and the HTML names that occur in practice. */

export const XML_ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
};

export const HTML_ENTITIES: Record<string, string> = {
  ...XML_ENTITIES,
  nbsp: "\u00a0",
  ensp: "\u2002",
  emsp: "\u2003",
  thinsp: "\u2009",
  shy: "\u00ad",
  zwnj: "\u200c",
  zwj: "\u200d",
  copy: "©",
  reg: "®",
  trade: "™",
  hellip: "…",
  mdash: "—",
  ndash: "–",
  minus: "−",
  lsquo: "‘",
  rsquo: "’",
  sbquo: "‚",
  ldquo: "“",
  rdquo: "”",
  bdquo: "„",
  laquo: "«",
  raquo: "»",
  lsaquo: "‹",
  rsaquo: "›",
  bull: "•",
  middot: "·",
  para: "¶",
  sect: "§",
  deg: "°",
  plusmn: "±",
  times: "×",
  divide: "÷",
  frac12: "½",
  frac14: "¼",
  frac34: "¾",
  sup1: "¹",
  sup2: "²",
  sup3: "³",
  micro: "µ",
  euro: "€",
  pound: "£",
  yen: "¥",
  cent: "¢",
  curren: "¤",
  iexcl: "¡",
  iquest: "¿",
  dagger: "†",
  Dagger: "‡",
  permil: "‰",
  prime: "′",
  Prime: "″",
  larr: "←",
  rarr: "→",
  uarr: "↑",
  darr: "↓",
  harr: "↔",
  le: "≤",
  ge: "≥",
  ne: "≠",
  asymp: "≈",
  infin: "∞",
  check: "✓",
  Agrave: "À",
  Aacute: "Á",
  Acirc: "Â",
  Atilde: "Ã",
  Auml: "Ä",
  Aring: "Å",
  AElig: "Æ",
  Ccedil: "Ç",
  Egrave: "È",
  Eacute: "É",
  Ecirc: "Ê",
  Euml: "Ë",
  Igrave: "Ì",
  Iacute: "Í",
  Icirc: "Î",
  Iuml: "Ï",
  Ntilde: "Ñ",
  Ograve: "Ò",
  Oacute: "Ó",
  Ocirc: "Ô",
  Otilde: "Õ",
  Ouml: "Ö",
  Oslash: "Ø",
  Ugrave: "Ù",
  Uacute: "Ú",
  Ucirc: "Û",
  Uuml: "Ü",
  Yacute: "Ý",
  szlig: "ß",
  agrave: "à",
  aacute: "á",
  acirc: "â",
  atilde: "ã",
  auml: "ä",
  aring: "å",
  aelig: "æ",
  ccedil: "ç",
  egrave: "è",
  eacute: "é",
  ecirc: "ê",
  euml: "ë",
  igrave: "ì",
  iacute: "í",
  icirc: "î",
  iuml: "ï",
  ntilde: "ñ",
  ograve: "ò",
  oacute: "ó",
  ocirc: "ô",
  otilde: "õ",
  ouml: "ö",
  oslash: "ø",
  ugrave: "ù",
  uacute: "ú",
  ucirc: "û",
  uuml: "ü",
  yacute: "ý",
  yuml: "ÿ",
  OElig: "Œ",
  oelig: "œ",
  Scaron: "Š",
  scaron: "š",
};

function fromCodePoint(n: number): string | null {
  if (!Number.isFinite(n) || n <= 0 || n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return null;
  return String.fromCodePoint(n);
}

const isDigit = (c: number) => c >= 48 && c <= 57;
const isHex = (c: number) => isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/** End of the run of chars from `from` that pass `ok`, at most `max` long. */
function runEnd(text: string, from: number, max: number, ok: (c: number) => boolean): number {
  const stop = Math.min(text.length, from + max);
  let k = from;
  while (k < stop && ok(text.charCodeAt(k))) k++;
  return k;
}

const isNameChar = (c: number) => isLetter(c) || isDigit(c);

/**
 * End of the reference name starting after the "&" at `at` (before any ";"), or -1: `#x` + 1–6 hex digits,
 * `#` + 1–7 digits, or a letter and 1–31 letters or digits (each run as long as it goes, up to its cap).
 */
function referenceEnd(text: string, at: number): number {
  if (text.charCodeAt(at) === 35 /* # */) {
    const x = text.charCodeAt(at + 1);
    if (x === 120 || x === 88) {
      const end = runEnd(text, at + 2, 6, isHex);
      if (end > at + 2) return end;
    }
    const end = runEnd(text, at + 1, 7, isDigit);
    return end > at + 1 ? end : -1;
  }
  if (!isLetter(text.charCodeAt(at))) return -1;
  const end = runEnd(text, at + 1, 31, isNameChar);
  return end > at + 1 ? end : -1;
}

function referenceValue(table: Record<string, string>, ref: string): string | undefined {
  if (ref[0] !== "#") return Object.hasOwn(table, ref) ? table[ref] : undefined;
  const n =
    ref[1] === "x" || ref[1] === "X"
      ? Number.parseInt(ref.slice(2), 16)
      : Number.parseInt(ref.slice(1), 10);
  return fromCodePoint(n) ?? "\ufffd";
}

/**
 * Decodes references in one pass of indexOf. (A global replace with a callback was superlinear in V8 on a
 * few MB of dense references: seconds for a 7 MB attachment.)
 */
function decodeWith(
  table: Record<string, string>,
  text: string,
  requireSemicolon: boolean,
): string {
  let amp = text.indexOf("&");
  if (amp === -1) return text;
  let out = "";
  let copied = 0;
  while (amp !== -1) {
    const end = referenceEnd(text, amp + 1);
    if (end === -1) {
      amp = text.indexOf("&", amp + 1);
      continue;
    }
    const semi = text.charCodeAt(end) === 59; /* ; */
    const value =
      semi || !requireSemicolon ? referenceValue(table, text.slice(amp + 1, end)) : undefined;
    const next = semi ? end + 1 : end;
    if (value !== undefined) {
      out += text.slice(copied, amp) + value;
      copied = next;
    }
    amp = text.indexOf("&", next);
  }
  return copied === 0 ? text : out + text.slice(copied);
}

export function decodeXmlEntities(text: string): string {
  return decodeWith(XML_ENTITIES, text, true);
}

export function decodeHtmlEntities(text: string): string {
  return decodeWith(HTML_ENTITIES, text, false);
}

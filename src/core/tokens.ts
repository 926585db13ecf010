/**
 * Token estimates without a tokenizer. Tokenizers are megabytes of tables (too heavy for a Worker
 * bundle) and differ per provider; the gate only needs the right order of magnitude, and what it
 * needs most is that dense content (JSON, CSV, logs) is not priced like prose. Ratios are chars per
 * token, measured on typical content of each kind with provider tokenizers: dense punctuation and
 * short numbers tokenize worst, English prose best.
 */
export type ContentKind = "json" | "csv" | "tsv" | "log" | "code" | "prose" | "text";

export const CHARS_PER_TOKEN: Readonly<Record<ContentKind, number>> = {
  json: 2.7,
  csv: 2.8,
  tsv: 2.8,
  log: 3.1,
  code: 3.3,
  text: 3.6,
  prose: 4.2,
};

/**
 * Raw request JSON (escapes, keys, mixed content) averages here; used for context and distance
 * estimates.
 */
export const REQUEST_CHARS_PER_TOKEN = 3.3;

/**
 * Estimated tokens of `chars` characters of content of `kind` (JSON packs fewer chars per token
 * than prose).
 */
export function estimateTokens(chars: number, kind: ContentKind = "text"): number {
  return chars <= 0 ? 0 : Math.ceil(chars / CHARS_PER_TOKEN[kind]);
}

/** Texts up to this long are counted whole; longer ones through WS_WINDOWS windows spread over them. */
const WS_EXACT = 4_096;
const WS_WINDOWS = 32;
const WS_WINDOW = 128;

/**
 * Share of spaces, tabs and newlines in a text, to 2 decimals: runs of whitespace tokenize cheaply,
 * so the calibration learns a ratio per kind and whitespace. A longer text is read through 32
 * windows of 128 chars spread evenly over it (4K chars whatever its size, on every turn of every
 * result): the share only places the result on the calibration's whitespace slope, and windows
 * rather than a stride keep a periodic layout (fixed-width lines) from aliasing.
 */
export function whitespaceShare(text: string): number {
  const n = text.length;
  if (n === 0) return 0;
  if (n <= WS_EXACT) return Math.round((countWs(text, 0, n) / n) * 100) / 100;
  const step = (n - WS_WINDOW) / (WS_WINDOWS - 1);
  let ws = 0;
  for (let w = 0; w < WS_WINDOWS; w++) {
    const from = Math.floor(w * step);
    ws += countWs(text, from, from + WS_WINDOW);
  }
  return Math.round((ws / (WS_WINDOWS * WS_WINDOW)) * 100) / 100;
}

function countWs(text: string, from: number, to: number): number {
  let ws = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 10 || c === 9 || c === 13) ws++;
  }
  return ws;
}

/** Estimated tokens of a text, its kind detected when not given. */
export function estimateTextTokens(text: string, kind: ContentKind = detectKind(text)): number {
  return estimateTokens(text.length, kind);
}

const SAMPLE = 4096;
const LOG_LINE =
  /^(?:\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\[?\d{2}:\d{2}:\d{2}|\[?(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b)/;
const CODE_LINE =
  /(?:[;{}]\s*$|^\s*(?:import|export|from|def|class|function|const|let|var|return|if|for|while|#include|package|public|private|fn|use)\b)/;

/**
 * Classify a body from its head (at most 4 KB looked at, whatever its size). JSON is recognised by
 * shape here; `structureOf` confirms it by parsing when it needs the structure.
 */
export function detectKind(text: string): ContentKind {
  const head = text.length > SAMPLE ? text.slice(0, SAMPLE) : text;
  const trimmed = head.trimStart();
  const first = trimmed.charCodeAt(0);
  if (first === 0x7b || first === 0x5b) {
    const tail = text.trimEnd();
    const last = tail.charCodeAt(tail.length - 1);
    if ((first === 0x7b && last === 0x7d) || (first === 0x5b && last === 0x5d)) return "json";
  }
  const lines = head.split("\n");
  if (text.length > SAMPLE && lines.length > 1) lines.pop(); // a cut last line says nothing
  const nonEmpty = lines.filter((l) => l.trim() !== "");
  if (nonEmpty.length >= 3) {
    const delimited = delimiterOf(nonEmpty);
    if (delimited !== null) return delimited;
    const logs = nonEmpty.filter((l) => LOG_LINE.test(l)).length;
    if (logs / nonEmpty.length >= 0.5) return "log";
    const code = nonEmpty.filter((l) => CODE_LINE.test(l)).length;
    if (code / nonEmpty.length >= 0.3) return "code";
  }
  if (head.length <= 200) return "text";
  // Counted, not matched: a match array of every letter would be thousands of strings per result.
  let letters = 0;
  let spaces = 0;
  for (let i = 0; i < head.length; i++) {
    const c = head.charCodeAt(i);
    if (c === 0x20) spaces++;
    else if ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a) letters++; // A–Z and a–z, nothing else
  }
  return letters / head.length > 0.6 && spaces / head.length > 0.12 ? "prose" : "text";
}

/** CSV or TSV when every sampled line has the same, non-zero count of one delimiter. */
function delimiterOf(lines: readonly string[]): "csv" | "tsv" | null {
  const n = Math.min(lines.length, 20);
  for (const [kind, ch] of [
    ["tsv", 0x09],
    ["csv", 0x2c],
  ] as const) {
    const first = countOutsideQuotes(lines[0]!, ch);
    if (first === 0) continue;
    let i = 1;
    while (i < n && countOutsideQuotes(lines[i]!, ch) === first) i++;
    if (i === n) return kind;
  }
  return null;
}

function countOutsideQuotes(line: string, ch: number): number {
  let n = 0;
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 0x22) quoted = !quoted;
    else if (c === ch && !quoted) n++;
  }
  return n;
}

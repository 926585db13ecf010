/**
 * A validating JSON scanner that keeps the request as text.
 *
 * Why not JSON.parse: the edge holds requests of up to 32 MB in a 128 MB isolate. Parsing into
 * objects and stringifying back keeps three copies alive; this scanner builds a light tree of spans
 * over the original text, so a transform can splice replacements into the untouched bytes (and
 * return the very same string when nothing changes). Strings are never materialized here: a string
 * node carries its span, its decoded length in UTF-16 units and whether it has escapes;
 * `decodeString` turns one into a JS string on demand.
 */
import { formatPath, OffloadError } from "../../errors.ts";

export type JsonNode = JsonObject | JsonArray | JsonString | JsonScalar;

export interface JsonObject {
  readonly kind: "object";
  readonly start: number;
  readonly end: number;
  /**
   * Decoded keys, in source order (duplicates kept; `getMember` reads the last, like JSON.parse).
   */
  readonly keys: string[];
  readonly values: JsonNode[];
}

export interface JsonArray {
  readonly kind: "array";
  readonly start: number;
  readonly end: number;
  readonly items: JsonNode[];
}

export interface JsonString {
  readonly kind: "string";
  /** Span includes the quotes. */
  readonly start: number;
  readonly end: number;
  /**
   * Length of the decoded value in UTF-16 code units; -1 until `stringLength` computes it (escaped
   * only).
   */
  length: number;
  readonly escaped: boolean;
}

export interface JsonScalar {
  readonly kind: "number" | "true" | "false" | "null";
  readonly start: number;
  readonly end: number;
}

const FORBIDDEN_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/;
const SUSPECT_ESCAPE = /\\(?:[^"\\/bfnrtu]|u(?![0-9a-fA-F]{4}))/g;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/g;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Maximum nesting depth accepted; deeper input is rejected rather than risking the stack. */
export const MAX_DEPTH = 512;

export function parseJsonSpans(text: string): JsonNode {
  const scanner = new Scanner(text);
  scanner.skipWs();
  const root = scanner.value(0, []);
  scanner.skipWs();
  if (scanner.pos < text.length) scanner.fail("unexpected data after the JSON value", []);
  // Control characters other than tab, LF and CR are invalid anywhere in JSON (tab/LF/CR inside
  // strings were caught per string), and escapes are checked in one native search each; the path is
  // found afterwards.
  const bad = FORBIDDEN_CONTROL.exec(text);
  const at = bad !== null ? bad.index : findInvalidEscape(text);
  if (at !== -1) {
    scanner.pos = at;
    scanner.fail(
      bad !== null ? "unescaped control character" : "bad escape in string",
      pathAt(root, text, at),
    );
  }
  return root;
}

/** The path of the innermost node containing `offset` (for error messages). */
function pathAt(root: JsonNode, _text: string, offset: number): (string | number)[] {
  const path: (string | number)[] = [];
  let node: JsonNode = root;
  for (;;) {
    if (node.kind === "object") {
      const i = node.values.findIndex((v) => v.start <= offset && offset < v.end);
      if (i === -1) return path;
      path.push(node.keys[i] ?? "");
      node = node.values[i]!;
    } else if (node.kind === "array") {
      const i = node.items.findIndex((v) => v.start <= offset && offset < v.end);
      if (i === -1) return path;
      path.push(i);
      node = node.items[i]!;
    } else return path;
  }
}

class Scanner {
  pos = 0;
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }

  skipWs(): void {
    const t = this.text;
    let p = this.pos;
    for (;;) {
      const c = t.charCodeAt(p);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) p++;
      else break;
    }
    this.pos = p;
  }

  fail(what: string, path: (string | number)[]): never {
    const { line, column } = lineColumn(this.text, this.pos);
    throw new OffloadError(
      "invalid_json",
      `Invalid JSON: ${what} at line ${line} column ${column} (offset ${this.pos})`,
      {
        path: formatPath(path),
      },
    );
  }

  value(depth: number, path: (string | number)[]): JsonNode {
    const t = this.text;
    const c = t.charCodeAt(this.pos);
    if (c === 0x22) return this.string(path);
    if (c === 0x7b) return this.object(depth, path);
    if (c === 0x5b) return this.array(depth, path);
    if (c === 0x74) return this.literal("true", path);
    if (c === 0x66) return this.literal("false", path);
    if (c === 0x6e) return this.literal("null", path);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.number(path);
    if (Number.isNaN(c)) this.fail("unexpected end of input", path);
    this.fail(`unexpected character ${JSON.stringify(t[this.pos])}`, path);
  }

  literal(word: "true" | "false" | "null", path: (string | number)[]): JsonScalar {
    const start = this.pos;
    if (!this.text.startsWith(word, start)) this.fail(`expected ${word}`, path);
    this.pos = start + word.length;
    return { kind: word, start, end: this.pos };
  }

  number(path: (string | number)[]): JsonScalar {
    const start = this.pos;
    NUMBER.lastIndex = start;
    if (!NUMBER.test(this.text)) this.fail("malformed number", path);
    this.pos = NUMBER.lastIndex;
    return { kind: "number", start, end: this.pos };
  }

  // Positions of the next backslash, raw newline, carriage return and tab at or after some point.
  // Strings are scanned left to right, so each pointer only moves forward: finding them costs one
  // pass over the text in all, however many strings there are, instead of one search per string.
  private nextBackslash = -1;
  private nextLf = -1;
  private nextCr = -1;
  private nextTab = -1;

  private next(current: number, from: number, ch: string): number {
    if (current >= from || current === Infinity) return current;
    const i = this.text.indexOf(ch, from);
    return i === -1 ? Infinity : i;
  }

  string(path: (string | number)[]): JsonString {
    const t = this.text;
    const start = this.pos;
    const from = start + 1;
    // The closing quote is the first quote not preceded by an odd run of backslashes.
    let q = from;
    for (;;) {
      q = t.indexOf('"', q);
      if (q === -1) {
        this.pos = t.length;
        this.fail("unterminated string", path);
      }
      let b = q - 1;
      while (b >= from && t.charCodeAt(b) === 0x5c) b--;
      if ((q - 1 - b) % 2 === 0) break;
      q++;
    }
    this.nextLf = this.next(this.nextLf, from, "\n");
    this.nextCr = this.next(this.nextCr, from, "\r");
    this.nextTab = this.next(this.nextTab, from, "\t");
    const raw = Math.min(this.nextLf, this.nextCr, this.nextTab);
    if (raw < q) {
      this.pos = raw;
      this.fail("unescaped control character in string", path);
    }
    this.nextBackslash = this.next(this.nextBackslash, from, "\\");
    const escaped = this.nextBackslash < q;
    this.pos = q + 1;
    return { kind: "string", start, end: q + 1, length: escaped ? -1 : q - from, escaped };
  }

  /**
   * A member's key, decoded now (paths and lookups need it). The text-wide checks run only after
   * the scan, so a key they would refuse fails its decoding first: that is turned into the scan's
   * own error here, never a SyntaxError.
   */
  key(path: (string | number)[]): string {
    const node = this.string(path);
    try {
      return decodeString(this.text, node);
    } catch {
      const bad = findInvalidEscape(this.text.slice(node.start, node.end));
      this.pos = bad === -1 ? node.start : node.start + bad;
      this.fail(bad === -1 ? "unescaped control character" : "bad escape in string", path);
    }
  }

  object(depth: number, path: (string | number)[]): JsonObject {
    if (depth >= MAX_DEPTH) this.fail("nesting too deep", path);
    const t = this.text;
    const start = this.pos;
    this.pos++;
    const keys: string[] = [];
    const values: JsonNode[] = [];
    this.skipWs();
    if (t.charCodeAt(this.pos) === 0x7d) {
      this.pos++;
      return { kind: "object", start, end: this.pos, keys, values };
    }
    for (;;) {
      if (t.charCodeAt(this.pos) !== 0x22) this.fail("expected a string key", path);
      const key = this.key(path);
      this.skipWs();
      if (t.charCodeAt(this.pos) !== 0x3a) this.fail("expected ':'", path);
      this.pos++;
      this.skipWs();
      path.push(key);
      values.push(this.value(depth + 1, path));
      path.pop();
      keys.push(key);
      this.skipWs();
      const c = t.charCodeAt(this.pos);
      if (c === 0x2c) {
        this.pos++;
        this.skipWs();
        continue;
      }
      if (c === 0x7d) {
        this.pos++;
        return { kind: "object", start, end: this.pos, keys, values };
      }
      this.fail("expected ',' or '}'", path);
    }
  }

  array(depth: number, path: (string | number)[]): JsonArray {
    if (depth >= MAX_DEPTH) this.fail("nesting too deep", path);
    const t = this.text;
    const start = this.pos;
    this.pos++;
    const items: JsonNode[] = [];
    this.skipWs();
    if (t.charCodeAt(this.pos) === 0x5d) {
      this.pos++;
      return { kind: "array", start, end: this.pos, items };
    }
    for (;;) {
      path.push(items.length);
      items.push(this.value(depth + 1, path));
      path.pop();
      this.skipWs();
      const c = t.charCodeAt(this.pos);
      if (c === 0x2c) {
        this.pos++;
        this.skipWs();
        continue;
      }
      if (c === 0x5d) {
        this.pos++;
        return { kind: "array", start, end: this.pos, items };
      }
      this.fail("expected ',' or ']'", path);
    }
  }
}

/**
 * Offset of the first backslash that starts an invalid escape, or -1. Backslashes can only stand
 * inside strings (the scanner rejects them elsewhere), so one native search over the whole text
 * does; a hit that is really the second half of an escaped backslash (`\\x`) is recognised by the
 * odd run before it.
 */
function findInvalidEscape(text: string): number {
  SUSPECT_ESCAPE.lastIndex = 0;
  for (;;) {
    const m = SUSPECT_ESCAPE.exec(text);
    if (m === null) return -1;
    let b = m.index - 1;
    while (b >= 0 && text.charCodeAt(b) === 0x5c) b--;
    if ((m.index - 1 - b) % 2 === 0) return m.index;
    SUSPECT_ESCAPE.lastIndex = m.index + 1;
  }
}

/** Decoded length of a string node in UTF-16 code units, computed once for strings with escapes. */
export function stringLength(text: string, node: JsonString): number {
  if (node.length >= 0) return node.length;
  let saved = 0;
  const to = node.end - 1;
  ESCAPE.lastIndex = node.start + 1;
  for (;;) {
    const m = ESCAPE.exec(text);
    if (m === null || m.index >= to) break;
    saved += m[0].length - 1;
  }
  node.length = node.end - node.start - 2 - saved;
  return node.length;
}

/**
 * `value` as a string of its own. A slice of a long string may be a view on it (V8 makes one from 13
 * chars), so a value cut from a request and kept past its turn (an id keying a session's records, a
 * body in the ledger) would keep the whole request alive. A concatenation read back is a new flat
 * string: one copy (a JSON round trip was five times dearer on a 1 MB body).
 */
export function ownedString(value: string): string {
  return ` ${value}`.slice(1);
}

/**
 * The decoded value of a string node. Unescaped strings are a slice of the source (no JSON.parse):
 * `ownedString` before keeping one past the turn.
 */
export function decodeString(text: string, node: JsonString): string {
  return node.escaped
    ? (JSON.parse(text.slice(node.start, node.end)) as string)
    : text.slice(node.start + 1, node.end - 1);
}

/** The last member named `key` (JSON.parse semantics for duplicate keys). */
export function getMember(node: JsonObject, key: string): JsonNode | undefined {
  for (let i = node.keys.length - 1; i >= 0; i--) if (node.keys[i] === key) return node.values[i];
  return undefined;
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let last = -1;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    last = i;
  }
  return { line, column: offset - last };
}

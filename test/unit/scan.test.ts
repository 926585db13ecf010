import { describe, expect, it } from "vitest";
import {
  decodeString,
  type JsonNode,
  parseJsonSpans,
  stringLength,
} from "../../src/core/json/scan.ts";
import { OffloadError } from "../../src/errors.ts";

/** Rebuild a JS value from the span tree (to compare against JSON.parse). */
function materialize(text: string, node: JsonNode): unknown {
  switch (node.kind) {
    case "object": {
      const out: Record<string, unknown> = {};
      node.keys.forEach((k, i) => (out[k] = materialize(text, node.values[i]!)));
      return out;
    }
    case "array":
      return node.items.map((n) => materialize(text, n));
    case "string": {
      const s = decodeString(text, node);
      expect(stringLength(text, node)).toBe(s.length);
      return s;
    }
    case "number":
      return Number(text.slice(node.start, node.end));
    case "true":
      return true;
    case "false":
      return false;
    case "null":
      return null;
  }
}

// A small deterministic PRNG so failures reproduce.
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
const ALPHABET = [
  "a",
  "Z",
  " ",
  '"',
  "\\",
  "/",
  "\n",
  "\t",
  "\u0001",
  "é",
  "😀",
  "\u2028",
  "\ud800",
  "{",
  "]",
  ",",
  ":",
];
function randomValue(r: () => number, depth = 0): unknown {
  const k = r();
  if (depth > 4 || k < 0.35) {
    const len = Math.floor(r() * 12);
    let s = "";
    for (let i = 0; i < len; i++) s += ALPHABET[Math.floor(r() * ALPHABET.length)];
    return s;
  }
  if (k < 0.45) return Math.round((r() - 0.5) * 1e6) / (r() < 0.5 ? 1 : 1000);
  if (k < 0.5) return [true, false, null][Math.floor(r() * 3)];
  if (k < 0.75) return Array.from({ length: Math.floor(r() * 5) }, () => randomValue(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(r() * 5); i > 0; i--)
    o[String(randomValue(r, 9))] = randomValue(r, depth + 1);
  return o;
}

describe("parseJsonSpans", () => {
  it("agrees with JSON.parse on random documents, compact and pretty, with escaped unicode", () => {
    const r = rng(42);
    for (let i = 0; i < 500; i++) {
      const value = randomValue(r);
      for (const text of [
        JSON.stringify(value),
        JSON.stringify(value, null, 2),
        JSON.stringify(value).replace(/[é😀]/gu, (c) => (c === "é" ? "\\u00e9" : "\\ud83d\\ude00")),
      ]) {
        expect(materialize(text, parseJsonSpans(text))).toEqual(JSON.parse(text));
      }
    }
  });

  it("keeps spans that point into the original text", () => {
    const text = ' { "a" : [1, "two", {"b": null}] } ';
    const root = parseJsonSpans(text);
    expect(root.kind).toBe("object");
    if (root.kind !== "object") return;
    const arr = root.values[0]!;
    expect(text.slice(arr.start, arr.end)).toBe('[1, "two", {"b": null}]');
  });

  it("reads the last of duplicate keys like JSON.parse", () => {
    const text = '{"k":1,"k":2}';
    expect(materialize(text, parseJsonSpans(text))).toEqual(JSON.parse(text));
  });

  const invalid = [
    "",
    " ",
    "{",
    "[1,]",
    '{"a":1,}',
    '{"a" 1}',
    "[1 2]",
    '"unterminated',
    '"bad \\x escape"',
    '"bad \\u12g4"',
    '"\\\\\\x"',
    '"\\u12"',
    '"abc\\',
    '"\\"',
    '{"\\q":1}',
    '["ok", "\\uZZZZ"]',
    '"raw\nnewline"',
    '"raw\ttab"',
    '"\u0001"',
    "01",
    "-",
    "1.",
    ".5",
    "1e",
    "NaN",
    "tru",
    "nul",
    "{} {}",
    "[\u0000]",
    "\ufeff{}",
    "'single'",
    "{a:1}",
  ];
  it.each(invalid)("rejects %j like JSON.parse does", (text) => {
    expect(() => JSON.parse(text)).toThrow();
    expect(() => parseJsonSpans(text)).toThrow(OffloadError);
  });

  it("reports line, column and the path of the problem", () => {
    try {
      parseJsonSpans('{\n  "messages": [\n    {"content": "a\\qb"}\n  ]\n}');
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(OffloadError);
      const err = e as OffloadError;
      expect(err.type).toBe("invalid_json");
      expect(err.path).toBe("messages[0].content");
      expect(err.message).toMatch(/line 3 column \d+/);
    }
  });

  it("refuses pathological nesting instead of overflowing the stack", () => {
    expect(() => parseJsonSpans("[".repeat(10_000) + "]".repeat(10_000))).toThrow(
      /nesting too deep/,
    );
  });

  it("accepts escaped backslashes before quotes and lone surrogates (as JSON.parse does)", () => {
    for (const text of [
      '"\\\\"',
      '"a\\\\\\"b"',
      '"\\ud800"',
      '["\\\\", "\\""]',
      '{"\\u0041":"\\/"}',
      '"\\u00e9\\u00E9\\b\\f\\n\\r\\t"',
      '["\\"\\"", "\\\\\\"x"]',
    ]) {
      expect(materialize(text, parseJsonSpans(text))).toEqual(JSON.parse(text));
    }
  });
});

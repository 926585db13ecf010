/**
 * The bounded JSONPath walker and serializer against the reference they replace: on random documents and
 * random paths of the forms both read, the same results (paths and values) in the same order as
 * jsonpath-plus, and the same text as JSON.stringify(value, null, 1) whenever the value fits.
 */
import fc from "fast-check";
import { JSONPath } from "jsonpath-plus";
import { describe, expect, it } from "vitest";
import { parsePath, pathString, walkPath } from "../../src/core/json/path.ts";
import { boundedStringify } from "../../src/core/json/stringify.ts";

const KEYS = ["a", "b", "c", "0", "1", "price", "x y"];

const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(null, true, false, 0, -1.5, 7, 12, "x", "", "item-1", "é😀"),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie("value"), { maxKeys: 4 }),
  ),
})).value;

const name = fc.constantFrom(...KEYS.filter((k) => /^\w+$/.test(k)));
const index = fc.integer({ min: 0, max: 4 });
const bound = fc.option(fc.integer({ min: -4, max: 5 }), { nil: undefined });
const segment = fc.oneof(
  name.map((n) => `.${n}`),
  fc.constantFrom(...KEYS).map((k) => `['${k}']`),
  index.map((i) => `[${i}]`),
  fc.constant("[*]"),
  fc.constant(".*"),
  fc
    .tuple(bound, bound, fc.option(fc.constantFrom(1, 2, -1, 3), { nil: undefined }))
    .map(([a, b, s]) => `[${a ?? ""}:${b ?? ""}${s === undefined ? "" : `:${s}`}]`),
  fc.tuple(index, index).map(([a, b]) => `[${a},${b}]`),
  fc.tuple(name, name).map(([a, b]) => `['${a}','${b}']`),
  name.map((n) => `..${n}`),
  fc.constant("..*"),
  index.map((i) => `..[${i}]`),
  // Loose and relational operators differ on purpose where an operand is an array or object (see below).
  fc
    .tuple(name, fc.constantFrom("===", "!=="), fc.constantFrom("7", "0", "'x'", "null"))
    .map(([n, op, lit]) => `[?(@.${n} ${op} ${lit})]`),
  fc.tuple(name, name).map(([a, b]) => `[?(@.${a} && !@.${b})]`),
);
const jsonPath = fc.array(segment, { maxLength: 4 }).map((s) => `$${s.join("")}`);

function ours(doc: unknown, path: string): [string, unknown][] {
  const out: [string, unknown][] = [];
  const end = walkPath(doc, parsePath(path), {
    budget: 1e7,
    onMatch: (value, at) => {
      out.push([pathString(at), value]);
      return false;
    },
  });
  expect(end).toBe("done");
  return out;
}

function reference(doc: unknown, path: string): [string, unknown][] | null {
  try {
    const found = JSONPath({
      path,
      json: doc as object,
      eval: "safe",
      wrap: true,
      resultType: "all",
    });
    return (found as { path: string; value: unknown }[]).map((r) => [r.path, r.value]);
  } catch {
    return null; // jsonpath-plus throws where a filter reads a member of null; ours reads undefined
  }
}

describe("walkPath", () => {
  it("finds what jsonpath-plus finds, in the same order, with the same paths", () => {
    fc.assert(
      fc.property(jsonValue, jsonPath, (doc, path) => {
        const ref = reference(doc, path);
        if (ref !== null) expect(ours(doc, path)).toEqual(ref);
      }),
      { numRuns: 600, seed: 11 },
    );
  });

  it("counts negative indexes from the end, as RFC 9535 does", () => {
    expect(ours({ a: [1, 2, 3] }, "$.a[-1]")).toEqual([["$['a'][2]", 3]]);
    expect(ours({ a: [1, 2, 3] }, "$.a[-4]")).toEqual([]);
    expect(ours({ a: [1, 2, 3] }, "$.a[(@.length-1)]")).toEqual([["$['a'][2]", 3]]);
  });

  it("compares arrays and objects by identity, never by their text", () => {
    // JavaScript would turn [] into "" and then 0; a 10 MB array would be rendered on every comparison.
    expect(ours([{ b: [] }, { b: 0 }], "$[?(@.b != 0)]")).toEqual([["$[0]", { b: [] }]]);
    expect(ours([{ b: [1] }], "$[?(@.b < 7)]")).toEqual([]);
    expect(ours([{ b: 3 }, { b: "12" }], "$[?(@.b < 7)].b")).toEqual([["$[0]['b']", 3]]);
  });

  it("evaluates filters without reaching prototypes or calling anything but a few methods", () => {
    const doc = { items: [{ n: "Apple" }, { n: "pear" }, { n: 3 }] };
    expect(ours(doc, "$.items[?(@.n.toLowerCase().startsWith('a'))].n")).toEqual([
      ["$['items'][0]['n']", "Apple"],
    ]);
    expect(ours(doc, "$.items[?(@.constructor)]")).toEqual([]);
    expect(ours(doc, "$.items[?(@.__proto__)]")).toEqual([]);
    for (const bad of [
      "$.items[?(@.n.constructor.constructor('return 1')())]",
      "$.items[?(@.n.repeat(1e9))]",
      "$.items[?(@.n.match(/(a+)+$/))]",
      "$.items[?(@.n = 1)]",
      `$.items[?(${"(".repeat(200)}1${")".repeat(200)})]`,
    ])
      expect(() => parsePath(bad), bad).toThrow();
  });

  it("walks 40,000 levels of nesting without recursion, and stops when told", () => {
    const deep = JSON.parse(`${"[".repeat(40_000)}${"]".repeat(40_000)}`);
    let n = 0;
    const end = walkPath(deep, parsePath("$..*"), { budget: 1e7, onMatch: () => ++n >= 5 });
    expect(end).toBe("stopped");
    expect(n).toBe(5);
    expect(walkPath(deep, parsePath("$..[0]"), { budget: 1000, onMatch: () => false })).toBe(
      "budget",
    );
  });

  it("writes a deep path only as far as asked", () => {
    const node = Array.from({ length: 50_000 }).reduce<{ up: unknown; key: number } | null>(
      (up) => ({ up, key: 0 }),
      null,
    );
    expect(pathString(node as never, 40)).toHaveLength(40);
    expect(pathString({ up: null, key: "it's" })).toBe("$['it\\'s']");
  });
});

describe("boundedStringify", () => {
  it("writes what JSON.stringify(value, null, 1) writes when it fits", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const ref = JSON.stringify(v, null, 1);
        expect(boundedStringify(v, ref.length)).toEqual({ text: ref, complete: true });
        const cut = boundedStringify(v, Math.floor(ref.length / 2));
        if (ref.length > 1) expect(cut.complete).toBe(false);
        expect(ref.startsWith(cut.text)).toBe(true);
      }),
      { numRuns: 300, seed: 11 },
    );
  });

  it("cuts deep nesting and huge strings without building them", () => {
    const deep = JSON.parse(`${"[".repeat(40_000)}${"]".repeat(40_000)}`);
    const a = boundedStringify(deep, 1000);
    expect(a.complete).toBe(false);
    expect(a.text.length).toBeLessThanOrEqual(1000);
    const b = boundedStringify({ s: "x".repeat(5_000_000) }, 100);
    expect(b.text).toHaveLength(100);
  });
});

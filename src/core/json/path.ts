/**
 * JSONPath over a parsed value, walked with a budget. The forms and the order of results are jsonpath-plus's
 * (`$.a.b`, `['a','b']`, `[0]`, `[*]`, `.*`, `[1:9:2]`, unions, `..`, `[?(…)]`, `[(…)]`), and so is the path
 * of each result (`$['items'][0]`); negative indexes count from the end as RFC 9535 says. What differs is the
 * cost: jsonpath-plus recurses (a RangeError on deep nesting), copies the path at every step (quadratic on
 * deep values) and collects every result before the caller can stop it. This walker keeps its own stack,
 * shares path prefixes, hands each result to the caller as it is found, and stops when the caller or the
 * step budget says so. Filters are evaluated by ./filter.ts, never by eval.
 */
import { BudgetSpent, type Expr, evaluate, FilterError, parseFilter } from "./filter.ts";

export type Selector =
  | { k: "name"; name: string }
  | { k: "index"; index: number }
  | { k: "wild" }
  | { k: "slice"; start: number | null; end: number | null; step: number | null }
  | { k: "union"; items: Selector[] }
  | { k: "filter"; expr: Expr }
  | { k: "script"; expr: Expr }
  | { k: "descend" };

export class PathSyntaxError extends Error {
  override name = "PathSyntaxError";
}

const INT = /^-?\d+$/;
const SLICE = /^(-?\d*):(-?\d*)(?::(-?\d*))?$/;

function num(s: string | undefined): number | null {
  return s === undefined || s === "" ? null : Number(s);
}

/** One union member: a quoted name, an index, a slice or `*`. */
function member(raw: string): Selector {
  const s = raw.trim();
  if (s === "*") return { k: "wild" };
  if (INT.test(s)) return { k: "index", index: Number(s) };
  const slice = SLICE.exec(s);
  if (slice !== null)
    return { k: "slice", start: num(slice[1]), end: num(slice[2]), step: num(slice[3]) };
  const q = s[0];
  if ((q === "'" || q === '"') && s.length >= 2 && s[s.length - 1] === q)
    return { k: "name", name: s.slice(1, -1).replace(/\\(['"\\])/g, "$1") };
  throw new PathSyntaxError(`${JSON.stringify(s.slice(0, 40))} is not a name, index, slice or *`);
}

/** Index of the `)` that closes the `(` at `open`, skipping quoted strings. */
function closeParen(path: string, open: number): number {
  let depth = 0;
  for (let i = open; i < path.length; i++) {
    const c = path[i];
    if (c === "'" || c === '"') {
      for (i++; i < path.length && path[i] !== c; i++) if (path[i] === "\\") i++;
    } else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  throw new PathSyntaxError("a ( is never closed");
}

/** Index of the `]` that closes a bracket of names, skipping quoted strings. */
function closeBracket(path: string, open: number): number {
  for (let i = open + 1; i < path.length; i++) {
    const c = path[i];
    if (c === "'" || c === '"') {
      for (i++; i < path.length && path[i] !== c; i++) if (path[i] === "\\") i++;
    } else if (c === "]") return i;
  }
  throw new PathSyntaxError("a [ is never closed");
}

/** Splits a union on commas outside quotes. */
function splitUnion(s: string): string[] {
  const parts: string[] = [];
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "'" || c === '"') {
      for (i++; i < s.length && s[i] !== c; i++) if (s[i] === "\\") i++;
    } else if (c === ",") {
      parts.push(s.slice(from, i));
      from = i + 1;
    }
  }
  parts.push(s.slice(from));
  return parts;
}

function expression(src: string): Expr {
  try {
    return parseFilter(src);
  } catch (e) {
    if (e instanceof FilterError)
      throw new PathSyntaxError(`the expression ${JSON.stringify(src.slice(0, 80))}: ${e.message}`);
    throw e;
  }
}

/** Parses a path that starts with `$`. Throws PathSyntaxError saying what is wrong. */
export function parsePath(path: string): Selector[] {
  if (path[0] !== "$") throw new PathSyntaxError("a path starts with $");
  const out: Selector[] = [];
  let i = 1;
  while (i < path.length) {
    const c = path[i];
    if (c === ".") {
      if (path[i + 1] === ".") {
        out.push({ k: "descend" });
        i += 2;
        if (path[i] === "[") continue;
      } else i++;
      let j = i;
      while (j < path.length && path[j] !== "." && path[j] !== "[") j++;
      const name = path.slice(i, j);
      if (name === "") throw new PathSyntaxError(`a name is missing at char ${i}`);
      out.push(name === "*" ? { k: "wild" } : { k: "name", name });
      i = j;
    } else if (c === "[") {
      if (path[i + 1] === "?" && path[i + 2] === "(") {
        const close = closeParen(path, i + 2);
        if (path[close + 1] !== "]") throw new PathSyntaxError("a filter ends with )]");
        out.push({ k: "filter", expr: expression(path.slice(i + 3, close)) });
        i = close + 2;
      } else if (path[i + 1] === "(") {
        const close = closeParen(path, i + 1);
        if (path[close + 1] !== "]") throw new PathSyntaxError("a script ends with )]");
        out.push({ k: "script", expr: expression(path.slice(i + 2, close)) });
        i = close + 2;
      } else {
        const close = closeBracket(path, i);
        const items = splitUnion(path.slice(i + 1, close)).map(member);
        out.push(items.length === 1 ? items[0]! : { k: "union", items });
        i = close + 1;
      }
    } else throw new PathSyntaxError(`unexpected ${JSON.stringify(c)} at char ${i}`);
  }
  if (out[out.length - 1]?.k === "descend") throw new PathSyntaxError("a path cannot end with ..");
  return out;
}

/** A result's location: a chain of keys shared with its siblings (no copy per step). */
export interface PathNode {
  readonly up: PathNode | null;
  readonly key: string | number;
}

/** `$['items'][0]`, as jsonpath-plus writes a result's path, at most `max` chars. */
export function pathString(node: PathNode | null, max = Number.POSITIVE_INFINITY): string {
  const keys: (string | number)[] = [];
  for (let n = node; n !== null; n = n.up) keys.push(n.key);
  let out = "$";
  for (let i = keys.length - 1; i >= 0 && out.length < max; i--) {
    const k = keys[i]!;
    if (typeof k === "number" || /^[0-9*]+$/.test(k)) out += `[${k}]`;
    else out += `['${(k.length > max ? k.slice(0, max) : k).replace(/['\\]/g, "\\$&")}']`;
  }
  return out.length > max ? out.slice(0, max) : out;
}

export type WalkEnd = "done" | "stopped" | "budget";

export interface WalkOptions {
  /** Steps the walk may take (a node visited, a selector applied, an expression evaluated). */
  budget: number;
  /** Called for each result in order; return true to stop. */
  onMatch(value: unknown, path: PathNode | null): boolean;
  /** Told the steps the walk took (at most `budget`), however it ended. */
  onSteps?(steps: number): void;
}

type Task =
  | { t: "apply"; i: number; sel: Selector | null; val: unknown; path: PathNode | null }
  | {
      t: "keys";
      i: number;
      val: unknown;
      /** Object keys, or an array's length (walked by index without a list of a million indexes). */
      keys: string[] | number;
      next: number;
      path: PathNode | null;
      test: Expr | null;
      descend: boolean;
    }
  | {
      t: "slice";
      i: number;
      val: unknown[];
      at: number;
      to: number;
      step: number;
      path: PathNode | null;
    }
  | { t: "union"; i: number; items: Selector[]; next: number; val: unknown; path: PathNode | null };

const isContainer = (v: unknown): v is object => typeof v === "object" && v !== null;

function childKeys(val: unknown): string[] | number {
  if (Array.isArray(val)) return val.length;
  return isContainer(val) ? Object.keys(val) : [];
}

/** A task over the children of `val`: each one filtered (`test`), or descended into (`descend`). */
function children(
  i: number,
  val: unknown,
  path: PathNode | null,
  test: Expr | null,
  descend: boolean,
): Task {
  return { t: "keys", i, val, keys: childKeys(val), next: 0, path, test, descend };
}

function own(val: unknown, key: string): boolean {
  // A truthy value only, as jsonpath-plus: strings have own indexes and a length, numbers nothing.
  return Boolean(val) && Object.hasOwn(val as object, key);
}

/** Walks `sels` over `root`, calling onMatch for each result in jsonpath-plus's order. */
export function walkPath(root: unknown, sels: readonly Selector[], opts: WalkOptions): WalkEnd {
  let steps = 0;
  const charge = (units: number): boolean => (steps += units) <= opts.budget;
  const stack: Task[] = [{ t: "apply", i: 0, sel: sels[0] ?? null, val: root, path: null }];
  const push = (i: number, val: unknown, path: PathNode | null) =>
    stack.push({ t: "apply", i, sel: sels[i] ?? null, val, path });
  const at = (path: PathNode | null, key: string | number): PathNode => ({ up: path, key });
  // However the walk ends (a result, the budget, a throw), its caller learns what it took.
  try {
    try {
      while (stack.length > 0) {
        if (!charge(1)) return "budget";
        const task = stack[stack.length - 1]!;
        if (task.t === "keys") {
          const n = typeof task.keys === "number" ? task.keys : task.keys.length;
          if (task.next >= n) {
            stack.pop();
            continue;
          }
          const key = typeof task.keys === "number" ? task.next : task.keys[task.next]!;
          task.next++;
          const child = (task.val as Record<string | number, unknown>)[key];
          if (task.descend) {
            if (typeof child === "object") push(task.i, child, at(task.path, key));
          } else if (
            task.test === null ||
            evaluate(task.test, { cur: child, prop: key, root, charge })
          )
            push(task.i + 1, child, at(task.path, key));
          continue;
        }
        if (task.t === "slice") {
          if (task.step > 0 ? task.at >= task.to : task.at <= task.to) {
            stack.pop();
            continue;
          }
          const k = task.at;
          task.at += task.step;
          push(task.i + 1, task.val[k], at(task.path, k));
          continue;
        }
        if (task.t === "union") {
          if (task.next >= task.items.length) {
            stack.pop();
            continue;
          }
          const sel = task.items[task.next++]!;
          stack.push({ t: "apply", i: task.i, sel, val: task.val, path: task.path });
          continue;
        }
        stack.pop();
        const { i, sel, val, path } = task;
        if (sel === null) {
          if (opts.onMatch(val, path)) return "stopped";
          continue;
        }
        switch (sel.k) {
          case "name":
            if (own(val, sel.name))
              push(i + 1, (val as Record<string, unknown>)[sel.name], at(path, sel.name));
            break;
          case "index": {
            const index = sel.index < 0 && Array.isArray(val) ? val.length + sel.index : sel.index;
            if (own(val, String(index)))
              push(
                i + 1,
                (val as Record<string, unknown>)[index],
                at(path, Array.isArray(val) ? index : String(index)),
              );
            break;
          }
          case "wild":
            stack.push(children(i, val, path, null, false));
            break;
          case "filter":
            stack.push(children(i, val, path, sel.expr, false));
            break;
          case "descend":
            // The rest of the path at this node first, then at each descendant container (jsonpath-plus's order).
            stack.push(children(i, val, path, null, true));
            push(i + 1, val, path);
            break;
          case "slice": {
            if (!Array.isArray(val)) break;
            const len = val.length;
            const step = sel.step ?? 1;
            if (step === 0) break;
            const norm = (x: number) => (x < 0 ? x + len : x);
            const start = norm(sel.start ?? (step > 0 ? 0 : len - 1));
            const end = norm(sel.end ?? (step > 0 ? len : -len - 1));
            const [from, to] =
              step > 0
                ? [Math.min(Math.max(start, 0), len), Math.min(Math.max(end, 0), len)]
                : [Math.min(Math.max(start, -1), len - 1), Math.min(Math.max(end, -1), len - 1)];
            stack.push({ t: "slice", i, val, at: from, to, step, path });
            break;
          }
          case "union":
            stack.push({ t: "union", i, items: sel.items, next: 0, val, path });
            break;
          case "script": {
            const key = evaluate(sel.expr, { cur: val, prop: path?.key ?? null, root, charge });
            if (typeof key === "number" && Number.isInteger(key))
              stack.push({ t: "apply", i, sel: { k: "index", index: key }, val, path });
            else if (typeof key === "string")
              stack.push({
                t: "apply",
                i,
                sel: key === "*" ? { k: "wild" } : { k: "name", name: key },
                val,
                path,
              });
            break;
          }
        }
      }
    } catch (e) {
      if (e instanceof BudgetSpent) return "budget";
      throw e;
    }
    return "done";
  } finally {
    opts.onSteps?.(Math.min(steps, opts.budget));
  }
}

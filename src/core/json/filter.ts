/**
 * JSONPath filter expressions (`[?(@.price < 10 && @.tags.includes('x'))]`) and scripts (`[(@.length-1)]`),
 * evaluated without eval and without any way to make the work grow beyond what the expression and the value
 * it reads: no loops, no function values, no prototype access, no regular expressions (a model-written
 * pattern is a backtracking bomb), no string building. Operators follow JavaScript on scalars; an object or
 * array compares by identity only, so a comparison never turns a 10 MB array into a string.
 */

import { BINARY, type Expr } from "./filter-parse.ts";

export type { Expr } from "./filter-parse.ts";
export { FILTER_HELP, FilterError, parseFilter } from "./filter-parse.ts";

export interface FilterScope {
  /** The node the expression is about (`@`). */
  cur: unknown;
  /** Its key in its parent (`@property`). */
  prop: string | number | null;
  root: unknown;
  /** Charged one unit per step, plus the length of what a method scans; returns false when spent. */
  charge(units: number): boolean;
}

/** Thrown when the scope's budget runs out mid-expression. */
export class BudgetSpent extends Error {
  override name = "BudgetSpent";
}

const isObject = (v: unknown): v is object => typeof v === "object" && v !== null;

function member(obj: unknown, name: unknown): unknown {
  if (obj === null || obj === undefined) return undefined;
  const key = typeof name === "number" ? String(name) : name;
  if (typeof key !== "string") return undefined;
  if (typeof obj === "string" || Array.isArray(obj)) {
    if (key === "length") return obj.length;
    return Object.hasOwn(Object(obj), key)
      ? (obj as unknown as Record<string, unknown>)[key]
      : undefined;
  }
  // Own data only: nothing on a prototype (constructor, __proto__, toString…) is reachable.
  return isObject(obj) && Object.hasOwn(obj, key)
    ? (obj as Record<string, unknown>)[key]
    : undefined;
}

function call(obj: unknown, method: string, args: unknown[], scope: FilterScope): unknown {
  const a = args[0];
  if (typeof obj === "string") {
    if (!scope.charge(1 + (obj.length >> 6))) throw new BudgetSpent();
    switch (method) {
      case "toLowerCase":
        return obj.toLowerCase();
      case "toUpperCase":
        return obj.toUpperCase();
      case "trim":
        return obj.trim();
    }
    if (typeof a !== "string") return method === "indexOf" ? -1 : false;
    if (method === "includes") return obj.includes(a);
    if (method === "startsWith") return obj.startsWith(a);
    if (method === "endsWith") return obj.endsWith(a);
    if (method === "indexOf") return obj.indexOf(a);
    return undefined;
  }
  if (Array.isArray(obj) && (method === "includes" || method === "indexOf")) {
    if (!scope.charge(1 + obj.length)) throw new BudgetSpent();
    return method === "includes" ? obj.includes(a) : obj.indexOf(a);
  }
  return undefined;
}

function truthy(v: unknown): boolean {
  return Boolean(v);
}

function compare(op: string, l: unknown, r: unknown): boolean {
  if (op === "===") return l === r;
  if (op === "!==") return l !== r;
  // Containers compare by identity: loose equality or "<" would otherwise render them as strings.
  if (isObject(l) || isObject(r)) return op === "==" ? l === r : op === "!=" ? l !== r : false;
  // biome-ignore lint/suspicious/noDoubleEquals: JSONPath filters mean JavaScript's loose comparison.
  if (op === "==") return l == r;
  // biome-ignore lint/suspicious/noDoubleEquals: as above.
  if (op === "!=") return l != r;
  const a = l as number;
  const b = r as number;
  if (op === "<") return a < b;
  if (op === "<=") return a <= b;
  if (op === ">") return a > b;
  return a >= b;
}

function arithmetic(op: string, l: unknown, r: unknown): number {
  if (typeof l !== "number" || typeof r !== "number") return Number.NaN;
  if (op === "+") return l + r;
  if (op === "-") return l - r;
  if (op === "*") return l * r;
  if (op === "/") return l / r;
  return l % r;
}

/** Evaluates a parsed expression against a scope. Throws BudgetSpent when the scope's budget runs out. */
export function evaluate(e: Expr, scope: FilterScope): unknown {
  if (!scope.charge(1)) throw new BudgetSpent();
  switch (e.k) {
    case "lit":
      return e.v;
    case "cur":
      return scope.cur;
    case "root":
      return scope.root;
    case "prop":
      return scope.prop;
    case "member":
      return member(evaluate(e.obj, scope), evaluate(e.name, scope));
    case "call":
      return call(
        evaluate(e.obj, scope),
        e.method,
        e.args.map((a) => evaluate(a, scope)),
        scope,
      );
    case "unary": {
      const v = evaluate(e.arg, scope);
      if (e.op === "!") return !truthy(v);
      const n = typeof v === "number" ? v : typeof v === "string" ? Number(v) : Number.NaN;
      return e.op === "-" ? -n : n;
    }
    case "binary": {
      const l = evaluate(e.left, scope);
      if (e.op === "&&") return truthy(l) ? evaluate(e.right, scope) : l;
      if (e.op === "||") return truthy(l) ? l : evaluate(e.right, scope);
      const r = evaluate(e.right, scope);
      if (BINARY[e.op] === 3 || BINARY[e.op] === 4) return compare(e.op, l, r);
      return arithmetic(e.op, l, r);
    }
  }
}

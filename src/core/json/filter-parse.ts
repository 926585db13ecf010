/**
 * The lexer and parser of JSONPath filter expressions (`?( )`) and scripts (`( )`): a small JavaScript subset
 * read into an `Expr` tree, nesting bounded, anything outside the subset refused with a FilterError that
 * says what is supported.
 */

export type Expr =
  | { k: "lit"; v: unknown }
  | { k: "cur" }
  | { k: "root" }
  | { k: "prop" }
  | { k: "member"; obj: Expr; name: Expr }
  | { k: "call"; obj: Expr; method: string; args: Expr[] }
  | { k: "unary"; op: string; arg: Expr }
  | { k: "binary"; op: string; left: Expr; right: Expr };

/** A filter the service does not evaluate: its message says what is supported instead. */
export class FilterError extends Error {
  override name = "FilterError";
}

export const FILTER_HELP =
  'filters support @ and @.field/@["field"] (also @property, @root), literals, == != === !== < <= > >=, && || !, + - * / % on numbers, .length, and the methods includes, startsWith, endsWith, indexOf, toLowerCase, toUpperCase, trim';

const METHODS = new Set([
  "includes",
  "startsWith",
  "endsWith",
  "indexOf",
  "toLowerCase",
  "toUpperCase",
  "trim",
]);

/** Deeper nesting than this is refused before it can exhaust the stack of the recursive parser. */
const MAX_NESTING = 64;

type Tok =
  | { t: "num"; v: number }
  | { t: "str"; v: string }
  | { t: "id"; v: string }
  | { t: "op"; v: string };

const OPS = [
  "===",
  "!==",
  "==",
  "!=",
  "<=",
  ">=",
  "&&",
  "||",
  "<",
  ">",
  "!",
  "+",
  "-",
  "*",
  "/",
  "%",
  "(",
  ")",
  "[",
  "]",
  ".",
  ",",
];

function isIdStart(c: string): boolean {
  return /[A-Za-z_$@]/.test(c);
}
function isIdPart(c: string): boolean {
  return /[A-Za-z0-9_$]/.test(c);
}

function lex(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    if (c === "'" || c === '"') {
      let v = "";
      let j = i + 1;
      for (; j < src.length && src[j] !== c; j++) {
        if (src[j] === "\\" && j + 1 < src.length) {
          const e = src[++j]!;
          if (e === "u" && /^[0-9a-fA-F]{4}$/.test(src.slice(j + 1, j + 5))) {
            v += String.fromCharCode(Number.parseInt(src.slice(j + 1, j + 5), 16));
            j += 4;
          } else
            v +=
              ({ n: "\n", t: "\t", r: "\r", b: "\b", f: "\f" } as Record<string, string>)[e] ?? e;
        } else v += src[j];
      }
      if (j >= src.length) throw new FilterError("an unterminated string");
      out.push({ t: "str", v });
      i = j + 1;
      continue;
    }
    const prev = out[out.length - 1];
    if (
      c === "." &&
      (prev?.t === "id" || (prev?.t === "op" && (prev.v === ")" || prev.v === "]")))
    ) {
      // A member after a value: `@.0` reads key "0", like `@['0']`.
      out.push({ t: "op", v: "." });
      const digits = /^\d+/.exec(src.slice(i + 1, i + 65));
      if (digits !== null) out.push({ t: "id", v: digits[0] });
      i += 1 + (digits?.[0].length ?? 0);
      continue;
    }
    const num = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i, i + 64));
    if (num !== null && (c !== "." || /\d/.test(src[i + 1] ?? ""))) {
      out.push({ t: "num", v: Number(num[0]) });
      i += num[0].length;
      continue;
    }
    if (isIdStart(c)) {
      let j = i + 1;
      while (j < src.length && isIdPart(src[j]!)) j++;
      out.push({ t: "id", v: src.slice(i, j) });
      i = j;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (op === undefined) throw new FilterError(`${JSON.stringify(c)} is not supported`);
    out.push({ t: "op", v: op });
    i += op.length;
  }
  return out;
}

/** Binary operators by precedence (3: equality, 4: order; evaluation classifies them by it too). */
export const BINARY: Record<string, number> = {
  "||": 1,
  "&&": 2,
  "==": 3,
  "!=": 3,
  "===": 3,
  "!==": 3,
  "<": 4,
  "<=": 4,
  ">": 4,
  ">=": 4,
  "+": 5,
  "-": 5,
  "*": 6,
  "/": 6,
  "%": 6,
};

class Parser {
  i = 0;
  readonly toks: Tok[];
  constructor(toks: Tok[]) {
    this.toks = toks;
  }
  peek(): Tok | undefined {
    return this.toks[this.i];
  }
  isOp(v: string): boolean {
    const t = this.peek();
    return t?.t === "op" && t.v === v;
  }
  expect(v: string): void {
    if (!this.isOp(v)) throw new FilterError(`expected "${v}"`);
    this.i++;
  }
  expr(depth: number, min = 1): Expr {
    if (depth > MAX_NESTING) throw new FilterError("the expression is nested too deeply");
    let left = this.unary(depth + 1);
    for (;;) {
      const t = this.peek();
      const prec = t?.t === "op" ? BINARY[t.v] : undefined;
      if (prec === undefined || prec < min) return left;
      this.i++;
      const right = this.expr(depth + 1, prec + 1);
      left = { k: "binary", op: (t as { v: string }).v, left, right };
    }
  }
  unary(depth: number): Expr {
    if (depth > MAX_NESTING) throw new FilterError("the expression is nested too deeply");
    for (const op of ["!", "-", "+"])
      if (this.isOp(op)) {
        this.i++;
        return { k: "unary", op, arg: this.unary(depth + 1) };
      }
    return this.postfix(depth);
  }
  postfix(depth: number): Expr {
    let e = this.primary(depth);
    for (;;) {
      if (this.isOp(".")) {
        this.i++;
        const t = this.peek();
        if (t?.t !== "id") throw new FilterError("a name after '.'");
        this.i++;
        if (this.isOp("(")) {
          if (!METHODS.has(t.v)) throw new FilterError(`the method ${t.v}() is not supported`);
          this.i++;
          const args: Expr[] = [];
          while (!this.isOp(")")) {
            args.push(this.expr(depth + 1));
            if (!this.isOp(")")) this.expect(",");
          }
          this.i++;
          e = { k: "call", obj: e, method: t.v, args };
        } else e = { k: "member", obj: e, name: { k: "lit", v: t.v } };
      } else if (this.isOp("[")) {
        this.i++;
        const name = this.expr(depth + 1);
        this.expect("]");
        e = { k: "member", obj: e, name };
      } else if (this.isOp("(")) throw new FilterError("only the listed methods can be called");
      else return e;
    }
  }
  primary(depth: number): Expr {
    const t = this.peek();
    if (t === undefined) throw new FilterError("the expression ends early");
    this.i++;
    if (t.t === "num" || t.t === "str") return { k: "lit", v: t.v };
    if (t.t === "op") {
      if (t.v !== "(") throw new FilterError(`"${t.v}" is out of place`);
      const e = this.expr(depth + 1);
      this.expect(")");
      return e;
    }
    switch (t.v) {
      case "@":
        return { k: "cur" };
      case "@root":
      case "$":
        return { k: "root" };
      case "@property":
        return { k: "prop" };
      case "true":
        return { k: "lit", v: true };
      case "false":
        return { k: "lit", v: false };
      case "null":
        return { k: "lit", v: null };
      case "undefined":
        return { k: "lit", v: undefined };
      default:
        throw new FilterError(`${t.v} is not supported`);
    }
  }
}

/** Parses a filter or script expression (the text inside `?( )` or `( )`). Throws FilterError. */
export function parseFilter(src: string): Expr {
  const p = new Parser(lex(src));
  const e = p.expr(0);
  if (p.peek() !== undefined) throw new FilterError("unexpected text after the expression");
  return e;
}

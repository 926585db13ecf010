/**
 * `JSON.stringify(value, null, 1)` that stops after `max` chars. A recall answer shows at most 50,000 chars
 * of a value, and the value may be a 10 MB array or 40,000 levels of nesting: the built-in would render all
 * of it first (time and memory of the whole) or throw RangeError on the depth. This one walks with its own
 * stack and writes no more than it returns; a value that fits comes out byte for byte as the built-in's.
 */
import { safeCut } from "../text.ts";

export interface BoundedJson {
  text: string;
  /** False when the value was cut at `max` chars. */
  complete: boolean;
}

type Frame =
  | { array: true; items: unknown[]; next: number; depth: number }
  | { array: false; obj: Record<string, unknown>; keys: string[]; next: number; depth: number };

class Writer {
  readonly parts: string[] = [];
  room: number;
  /** Something was left out. */
  cut = false;
  constructor(max: number) {
    this.room = max;
  }
  write(s: string): void {
    if (s.length <= this.room) {
      this.parts.push(s);
      this.room -= s.length;
      return;
    }
    this.parts.push(s.slice(0, safeCut(s, this.room)));
    this.room = 0;
    this.cut = true;
  }
  /** A newline and `depth` spaces, without building a 40,000-space string to keep 10 of them. */
  indent(depth: number): void {
    this.write("\n");
    this.write(" ".repeat(Math.min(depth, this.room + 1)));
  }
  /** A JSON string literal, escaping only the part of a long string that can still be shown. */
  string(s: string): void {
    this.write(JSON.stringify(s.length + 2 <= this.room ? s : s.slice(0, safeCut(s, this.room))));
  }
}

function scalar(w: Writer, v: unknown): boolean {
  if (v === null || v === undefined) w.write("null");
  else if (typeof v === "string") w.string(v);
  else if (typeof v === "number") w.write(Number.isFinite(v) ? String(v) : "null");
  else if (typeof v === "boolean") w.write(v ? "true" : "false");
  else return false;
  return true;
}

/** Opens a container (or writes `[]`/`{}`) and returns its frame, or null when it is empty. */
function open(w: Writer, v: object, depth: number): Frame | null {
  if (Array.isArray(v)) {
    if (v.length === 0) {
      w.write("[]");
      return null;
    }
    w.write("[");
    return { array: true, items: v, next: 0, depth };
  }
  const keys = Object.keys(v);
  if (keys.length === 0) {
    w.write("{}");
    return null;
  }
  w.write("{");
  return { array: false, obj: v as Record<string, unknown>, keys, next: 0, depth };
}

/** The value as `JSON.stringify(value, null, 1)` writes it (values JSON.parse produces), cut at `max` chars. */
export function boundedStringify(value: unknown, max: number): BoundedJson {
  const w = new Writer(max);
  const stack: Frame[] = [];
  const place = (v: unknown, depth: number): void => {
    if (scalar(w, v)) return;
    const frame = open(w, v as object, depth);
    if (frame !== null) stack.push(frame);
  };
  place(value, 0);
  while (stack.length > 0 && !w.cut) {
    const f = stack[stack.length - 1]!;
    const n = f.array ? f.items.length : f.keys.length;
    if (f.next >= n) {
      stack.pop();
      w.indent(f.depth);
      w.write(f.array ? "]" : "}");
      continue;
    }
    if (f.next > 0) w.write(",");
    w.indent(f.depth + 1);
    if (f.array) place(f.items[f.next++], f.depth + 1);
    else {
      const key = f.keys[f.next++]!;
      w.string(key);
      w.write(": ");
      place(f.obj[key], f.depth + 1);
    }
  }
  return { text: w.parts.join(""), complete: !w.cut && stack.length === 0 };
}

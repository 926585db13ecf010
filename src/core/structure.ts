/**
 * The structural index: what the model can learn about a body without reading it (JSON keys, types, short
 * values, array lengths and the keys of their items; CSV columns and rows; line counts), and the index of
 * its main collection (samples.ts: ids a model is likely to cite). Shown in offload stubs and, for tool
 * authors, by `previewOf`, so both read the same. Bounded, deterministic text.
 */
import { INDEX_CHARS, jsonIndex, tableIndex } from "./samples.ts";
import { countLines, formatInt, plural } from "./text.ts";
import { type ContentKind, detectKind } from "./tokens.ts";

export interface StructureIndex {
  /** The kind after checking (a body that looked like JSON but does not parse is "text"). */
  kind: ContentKind;
  chars: number;
  lines: number;
  /** Rendered outline, at most `maxChars` long. */
  outline: string;
  /** The main collection's ids or keys (samples.ts), at most INDEX_CHARS long; "" when none. */
  index: string;
  table?: { delimiter: "," | "\t"; columns: string[]; rows: number };
}

const MAX_KEYS = 24;
const MAX_ITEM_KEYS = 16;
const ITEMS_SAMPLED = 200;
const SHORT_VALUE = 48;
/** Above this many keys, an object whose values are records is outlined in one line. */
const MAP_KEYS = 8;

/**
 * The structural index of a body (JSON keys and array lengths, CSV columns, line counts) shown in a
 * stub, its outline cut to `maxChars`.
 *
 * @example
 * const { kind, outline } = structureOf(JSON.stringify({ items: [{ id: 1, name: "a" }] }));
 * // kind: "json",
 * // outline: "JSON object, 1 key:\n  $.items: array(1) of objects {id: number, name: string}"
 */
export function structureOf(
  text: string,
  kind: ContentKind = detectKind(text),
  maxChars = 600,
): StructureIndex {
  const lines = countLines(text);
  const base = { chars: text.length, lines };
  if (kind === "json") {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return structureOf(text, "text", maxChars);
    }
    return {
      ...base,
      kind,
      outline: bound(jsonOutline(value), maxChars),
      index: jsonIndex(value, INDEX_CHARS),
    };
  }
  if (kind === "csv" || kind === "tsv") {
    const delimiter = kind === "csv" ? "," : "\t";
    const nl = text.indexOf("\n");
    const header = (nl === -1 ? text : text.slice(0, nl)).replace(/\r$/, "");
    const columns = splitRow(header, delimiter);
    const rows = Math.max(0, countNonEmptyLines(text) - 1);
    const shown =
      columns.slice(0, MAX_KEYS).join(", ") +
      (columns.length > MAX_KEYS ? `, … (${columns.length - MAX_KEYS} more)` : "");
    const outline = `${kind.toUpperCase()}: ${plural(rows, "row")} × ${plural(columns.length, "column")} (header: ${shown})`;
    const table: NonNullable<StructureIndex["table"]> = { delimiter, columns, rows };
    return {
      ...base,
      kind,
      outline: bound(outline, maxChars),
      index: tableIndex(text, table, splitRow, INDEX_CHARS),
      table,
    };
  }
  return {
    ...base,
    kind,
    outline: `${kindName(kind)}: ${plural(lines, "line")}, ${plural(text.length, "char")}`,
    index: "",
  };
}

function kindName(kind: ContentKind): string {
  return kind === "log"
    ? "log output"
    : kind === "code"
      ? "source code"
      : kind === "prose"
        ? "prose"
        : "text";
}

function bound(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.lastIndexOf("\n", max - 2);
  return `${text.slice(0, cut > max / 2 ? cut : max - 2)}\n…`;
}

function countNonEmptyLines(text: string): number {
  let n = 0;
  let start = 0;
  for (;;) {
    const nl = text.indexOf("\n", start);
    const end = nl === -1 ? text.length : nl;
    if (text.slice(start, end).trim() !== "") n++;
    if (nl === -1) return n;
    start = nl + 1;
  }
}

/** RFC 4180-ish split of one row: quotes group, doubled quotes escape. */
export function splitRow(line: string, delimiter: string): string[] {
  const out: string[] = [];
  let cur = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === delimiter) {
      out.push(cur);
      cur = "";
    } else cur += c;
  }
  out.push(cur);
  return out;
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return `array(${formatInt(v.length)})`;
  return typeof v === "object" ? "object" : typeof v;
}

/** `array(10,000) of objects {id: number, name: string}` */
function describe(v: unknown): string {
  if (Array.isArray(v)) return `array(${formatInt(v.length)})${itemsOf(v)}`;
  if (v !== null && typeof v === "object") {
    const keys = Object.keys(v);
    if (keys.length === 0) return "object {}";
    if (isRecordMap(v))
      return `object(${plural(keys.length, "key")}), values${itemsOf(Object.values(v))}`;
    const shown = keys.slice(0, MAX_ITEM_KEYS).join(", ");
    return `object {${shown}${keys.length > MAX_ITEM_KEYS ? `, … ${keys.length - MAX_ITEM_KEYS} more` : ""}}`;
  }
  // Short values are shown as they are: a version, a status or a count is what a model cites.
  if (typeof v === "string")
    return v.length <= SHORT_VALUE && !/[\n\r]/.test(v)
      ? JSON.stringify(v)
      : `string(${formatInt(v.length)})`;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return typeName(v);
}

function itemsOf(items: readonly unknown[]): string {
  if (items.length === 0) return "";
  const sample = items.slice(0, ITEMS_SAMPLED);
  const types = [
    ...new Set(sample.map((x) => (x === null ? "null" : Array.isArray(x) ? "array" : typeof x))),
  ];
  if (types.length === 1 && types[0] === "object") {
    const keys = new Map<string, Set<string>>();
    for (const item of sample) {
      for (const [k, val] of Object.entries(item as Record<string, unknown>)) {
        let set = keys.get(k);
        if (set === undefined) keys.set(k, (set = new Set()));
        set.add(val === null ? "null" : Array.isArray(val) ? "array" : typeof val);
      }
    }
    const entries = [...keys.entries()];
    const shown = entries
      .slice(0, MAX_ITEM_KEYS)
      .map(([k, t]) => `${k}: ${[...t].join("|")}`)
      .join(", ");
    return ` of objects {${shown}${entries.length > MAX_ITEM_KEYS ? `, … ${entries.length - MAX_ITEM_KEYS} more keys` : ""}}`;
  }
  return types.length === 1 ? ` of ${types[0]}s` : ` of mixed (${types.join(", ")})`;
}

/** An object with many keys whose values are mostly objects: keyed records, not fields. */
function isRecordMap(value: object): boolean {
  const values = Object.values(value).slice(0, ITEMS_SAMPLED);
  return (
    Object.keys(value).length > MAP_KEYS &&
    values.filter((v) => v !== null && typeof v === "object" && !Array.isArray(v)).length * 2 >=
      values.length
  );
}

function jsonOutline(value: unknown): string {
  if (Array.isArray(value)) {
    const lines = [`JSON ${describe(value)}`];
    if (value.length > 0) lines.push(`  paths: $[0] … $[${value.length - 1}]`);
    return lines.join("\n");
  }
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    // A map of records (paths → operations, ids → rows): one line; the stub's index lists its keys.
    if (isRecordMap(value))
      return `JSON object, ${plural(keys.length, "key")}, values${itemsOf(Object.values(value))}`;
    const lines = [`JSON object, ${plural(keys.length, "key")}:`];
    for (const k of keys.slice(0, MAX_KEYS)) {
      lines.push(`  ${pathKey(k)}: ${describe((value as Record<string, unknown>)[k])}`);
    }
    if (keys.length > MAX_KEYS) lines.push(`  … ${formatInt(keys.length - MAX_KEYS)} more keys`);
    return lines.join("\n");
  }
  return `JSON ${typeName(value)}`;
}

/** How a key is written in a JSONPath: `$.name` or `$['odd key']`. */
function pathKey(k: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(k)
    ? `$.${k}`
    : `$['${k.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}']`;
}

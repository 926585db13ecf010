/**
 * What a model is likely to cite from a body it has not read: the identifiers of its main collection (the id
 * column of an array of records, the keys of a map of records with the ids found inside each one, a CSV's id
 * column). Shown in stubs beside the structural outline, so a model that needs "which endpoints", "which
 * codes" or "what was the id of …" can often answer without a recall hop. Pure, deterministic and bounded:
 * the text never exceeds its budget, and the work is bounded by the budget and a fixed sample of records.
 */
import { formatInt } from "./text.ts";

/** Chars of index a stub carries at most (~300-450 tokens). */
export const INDEX_CHARS = 1200;
const ITEMS_SAMPLED = 200;
const VALUE_CHARS = 64;
const MIN_ENTRIES = 4;

/** How much a key looks like an identifier (0: not at all). */
export function idScore(key: string): number {
  if (key === "id") return 6;
  if (/^(uuid|sha|slug|code|key|operation_?id)$/i.test(key)) return 5;
  if (/(_id|Id|_code|Code|_key|_sha)$/.test(key)) return 4;
  if (/^(name|login|username|email|path|\$ref|ref|tag|number|symbol)$/i.test(key)) return 3;
  if (/(_name|Name|_path|Path|_url|Url|href)$/.test(key)) return 2;
  if (/^(title|url|label)$/i.test(key)) return 1;
  return 0;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function scalarText(v: unknown): string | null {
  if (typeof v === "string") return v === "" ? null : cut(v);
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return null;
}

function cut(s: string): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length <= VALUE_CHARS ? one : `${one.slice(0, VALUE_CHARS - 1)}…`;
}

/** The best id-like key among records (present with a scalar in at least half of them), and a name-like second. */
function idKeys(records: readonly Record<string, unknown>[]): { id?: string; label?: string } {
  const counts = new Map<string, number>();
  for (const r of records)
    for (const [k, v] of Object.entries(r))
      if (scalarText(v) !== null) counts.set(k, (counts.get(k) ?? 0) + 1);
  const keys = [...counts.entries()]
    .filter(([k, n]) => n * 2 >= records.length && idScore(k) > 0)
    .map(([k]) => k)
    .sort((a, b) => idScore(b) - idScore(a));
  const id = keys[0];
  const label = keys.find((k) => k !== id && idScore(k) >= 1 && idScore(k) <= 3);
  return { ...(id === undefined ? {} : { id }), ...(label === undefined ? {} : { label }) };
}

/** Id-like scalars inside a record, one or two levels down (an OpenAPI path item's operationIds). */
function innerIds(record: Record<string, unknown>, max = 3): string[] {
  const out: string[] = [];
  const visit = (r: Record<string, unknown>, depth: number) => {
    const keys = Object.keys(r).slice(0, 40);
    const best = keys
      .filter((k) => idScore(k) >= 3 && scalarText(r[k]) !== null)
      .sort((a, b) => idScore(b) - idScore(a))[0];
    if (best !== undefined) {
      out.push(scalarText(r[best])!);
      return;
    }
    if (depth < 2)
      for (const k of keys) if (isRecord(r[k]) && out.length < max) visit(r[k], depth + 1);
  };
  visit(record, 1);
  return out.slice(0, max);
}

/** Entries joined until the budget is spent, with a count of the rest. */
function joinBounded(
  head: string,
  entries: Iterable<string>,
  total: number,
  budget: number,
): string {
  let out = head;
  let shown = 0;
  for (const e of entries) {
    const sep = shown === 0 ? " " : ", ";
    const rest = total - shown - 1;
    const tail = rest > 0 ? ` … (+${formatInt(rest)} more)` : "";
    if (out.length + sep.length + e.length + tail.length > budget) break;
    out += sep + e;
    shown++;
  }
  if (shown < total) out += ` … (+${formatInt(total - shown)} more)`;
  return shown === 0 ? "" : out;
}

/** A collection worth an index: an array of records, or an object whose values are records. */
interface Collection {
  path: string;
  value: unknown[] | Record<string, unknown>;
  size: number;
}

function collectionAt(path: string, v: unknown): Collection | null {
  if (Array.isArray(v)) {
    if (v.length < MIN_ENTRIES) return null;
    const sample = v.slice(0, ITEMS_SAMPLED);
    return sample.filter(isRecord).length * 2 >= sample.length
      ? { path, value: v, size: v.length }
      : null;
  }
  if (!isRecord(v)) return null;
  const keys = Object.keys(v);
  if (keys.length < MIN_ENTRIES) return null;
  const sample = keys.slice(0, ITEMS_SAMPLED);
  return sample.filter((k) => isRecord(v[k])).length * 2 >= sample.length
    ? { path, value: v, size: keys.length }
    : null;
}

function childPath(path: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key)
    ? `${path}.${key}`
    : `${path}['${key.replace(/'/g, "\\'")}']`;
}

/** The largest collection at the top or one level down (`$.items`, `$.paths`, `$.properties`). */
function mainCollection(value: unknown): Collection | null {
  let best = collectionAt("$", value);
  if (isRecord(value))
    for (const k of Object.keys(value).slice(0, 200)) {
      const c = collectionAt(childPath("$", k), value[k]);
      if (c !== null && (best === null || c.size > best.size)) best = c;
    }
  return best;
}

/** The index of a parsed JSON body ("" when it has no collection worth one). */
export function jsonIndex(value: unknown, budget = INDEX_CHARS): string {
  const c = mainCollection(value);
  if (c === null) return "";
  if (Array.isArray(c.value)) {
    const records = c.value.slice(0, ITEMS_SAMPLED).filter(isRecord);
    const { id, label } = idKeys(records);
    if (id === undefined) return "";
    const items = c.value;
    function* entries() {
      for (const item of items) {
        if (!isRecord(item)) continue;
        const v = scalarText(item[id!]);
        if (v === null) continue;
        const l = label === undefined ? null : scalarText(item[label]);
        yield l === null ? v : `${v} (${l})`;
      }
    }
    const head = `Index ${c.path}[*].${id}${label === undefined ? "" : ` (${label})`}:`;
    return joinBounded(head, entries(), items.length, budget);
  }
  const map = c.value;
  const keys = Object.keys(map);
  function* entries() {
    for (const k of keys) {
      const inner = isRecord(map[k]) ? innerIds(map[k] as Record<string, unknown>) : [];
      yield inner.length === 0 ? k : `${k} (${inner.join(", ")})`;
    }
  }
  return joinBounded(`Keys of ${c.path}:`, entries(), keys.length, budget);
}

/** The index of a CSV/TSV body: its id-like column (or first), row by row, within the budget. */
export function tableIndex(
  text: string,
  table: { delimiter: string; columns: string[]; rows: number },
  splitRow: (line: string, delimiter: string) => string[],
  budget = INDEX_CHARS,
): string {
  if (table.rows < MIN_ENTRIES || table.columns.length < 2) return "";
  const scored = table.columns
    .map((name, i) => ({ name, i, score: idScore(name.trim()) }))
    .sort((a, b) => b.score - a.score || a.i - b.i);
  const col = scored[0]!.score > 0 ? scored[0]! : { name: table.columns[0]!, i: 0 };
  function* entries() {
    let start = text.indexOf("\n") + 1;
    // Bounded by the budget: the generator stops being pulled once the line is full.
    while (start > 0 && start < text.length) {
      const nl = text.indexOf("\n", start);
      const line = text.slice(start, nl === -1 ? text.length : nl).replace(/\r$/, "");
      start = nl === -1 ? text.length : nl + 1;
      if (line.trim() === "") continue;
      const v = splitRow(line, table.delimiter)[col.i];
      if (v !== undefined && v !== "") yield cut(v);
    }
  }
  return joinBounded(`Column ${col.name}:`, entries(), table.rows, budget);
}

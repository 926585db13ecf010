/**
 * What the per-type request cases share: a base conversation per format whose first tool result is large and
 * settled (so it is offloaded), and one case per documented message role, block or item type, content part,
 * tool type and top-level field, each an edit of that base that puts the type where the API takes it.
 */
import type { Format } from "../../../src/core/types.ts";

/** The large result (~80,000 chars of lines): over the 60,000-char tier, so it is offloaded. */
export const BIG = Array.from(
  { length: 2400 },
  (_, i) => `row ${String(i).padStart(4, "0")} | price ${(i * 1.5).toFixed(2)} | in stock`,
).join("\n");

export interface TypeCase<R> {
  name: string;
  /** Puts the type into the base request (mutates it). */
  edit(req: R): void;
}

export interface FormatCases<R> {
  format: Format;
  /** A fresh base request: t1 (dump, BIG, settled), then t2 (status, "ok"). */
  base(): R;
  cases: TypeCase<R>[];
}

/** One case per entry of `table`, named `${prefix} ${key}`, whose edit `place` builds from the entry. */
export function casesOf<R, V>(
  prefix: string,
  table: Record<string, V>,
  place: (value: V) => (req: R) => void,
): TypeCase<R>[] {
  return Object.entries(table).map(([key, value]) => ({
    name: `${prefix} ${key}`,
    edit: place(value),
  }));
}

/** One case per top-level field: the field set to its value. */
export function fieldCases<R extends object>(fields: Record<string, unknown>): TypeCase<R>[] {
  return Object.entries(fields).map(([key, value]) => ({
    name: `field ${key}`,
    edit: (req: R) => Object.assign(req, { [key]: value }),
  }));
}

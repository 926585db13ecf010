/**
 * Small edits over a request's raw JSON text (spans from the core's scanner), so the proxy
 * continues or splices a request without re-serializing what it does not touch (the bytes the
 * provider has cached).
 */
import type { Edit } from "../core/formats/types.ts";
import {
  decodeString,
  getMember,
  type JsonArray,
  type JsonNode,
  type JsonObject,
} from "../core/json/scan.ts";

export type { Edit };

/** Insert `items` (JSON texts) at the end of `array`. */
export function appendItems(array: JsonArray, items: readonly string[]): Edit {
  const last = array.items[array.items.length - 1];
  if (last === undefined)
    return { start: array.start + 1, end: array.start + 1, text: items.join(",") };
  return { start: last.end, end: last.end, text: `,${items.join(",")}` };
}

/** Insert `items` right after `node` (an element of an array). */
export function insertAfter(node: JsonNode, items: readonly string[]): Edit {
  return { start: node.end, end: node.end, text: `,${items.join(",")}` };
}

/** Insert `items` at the start of `array`. */
export function prependItems(array: JsonArray, items: readonly string[]): Edit {
  return {
    start: array.start + 1,
    end: array.start + 1,
    text: `${items.join(",")}${array.items.length > 0 ? "," : ""}`,
  };
}

export function replaceNode(node: JsonNode, text: string): Edit {
  return { start: node.start, end: node.end, text };
}

/**
 * Set `key` to `value` (JSON text): replace the member's value, or add the member at the end of the
 * object.
 */
export function setMember(obj: JsonObject, key: string, value: string): Edit {
  const node = getMember(obj, key);
  if (node !== undefined) return replaceNode(node, value);
  const at = obj.end - 1;
  return {
    start: at,
    end: at,
    text: `${obj.keys.length > 0 ? "," : ""}${JSON.stringify(key)}:${value}`,
  };
}

export function stringOf(raw: string, node: JsonNode | undefined): string | undefined {
  return node?.kind === "string" ? decodeString(raw, node) : undefined;
}

export function memberString(
  raw: string,
  obj: JsonNode | undefined,
  key: string,
): string | undefined {
  return obj?.kind === "object" ? stringOf(raw, getMember(obj, key)) : undefined;
}

export function arrayMember(obj: JsonNode | undefined, key: string): JsonArray | undefined {
  if (obj?.kind !== "object") return undefined;
  const node = getMember(obj, key);
  return node?.kind === "array" ? node : undefined;
}

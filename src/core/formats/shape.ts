/**
 * Helpers every adapter uses to read a request's shape over the raw text: typed reads that fail with the
 * path of the problem (`messages[3].content[1].tool_use_id`), and the one way a result's text parts are
 * rewritten so media parts and a client's cache marker stay where they were.
 */
import { formatPath, OffloadError } from "../../errors.ts";
import {
  decodeString,
  getMember,
  type JsonArray,
  type JsonNode,
  type JsonObject,
  type JsonString,
  ownedString,
  parseJsonSpans,
} from "../json/scan.ts";

export type Path = (string | number)[];

/**
 * The longest model id, call id and tool name a request may carry. Real ones are far shorter (ids of ~30
 * chars, tool names of at most 64, model ids and ARNs of ~150); these values are echoed in response headers,
 * logs and stored records, so a 1 MB one is refused with a 400 naming it instead of being carried along.
 */
export const FIELD_LIMITS = { model: 256, id: 256, tool_name: 256 } as const;

/** Members whose value is a call id or a tool name, bounded by FIELD_LIMITS wherever an adapter reads them. */
const BOUNDED_MEMBERS: Record<string, number> = {
  id: FIELD_LIMITS.id,
  tool_use_id: FIELD_LIMITS.id,
  tool_call_id: FIELD_LIMITS.id,
  call_id: FIELD_LIMITS.id,
  previous_response_id: FIELD_LIMITS.id,
  name: FIELD_LIMITS.tool_name,
};

/**
 * The longest media type, source type and document title a media block may carry to be read: they
 * land in decisions, stored records and replacement texts. A block is never refused for them (it is
 * left alone when malformed): a longer value reads as absent.
 */
export const MEDIA_FIELD_LIMITS = { media_type: 256, source_type: 64, title: 1024 } as const;

/** A string member read where a malformed block is left alone: absent unless a string of at most `max`. */
export function shortString(
  raw: string,
  obj: JsonObject,
  key: string,
  max: number,
): string | undefined {
  const node = getMember(obj, key);
  if (node?.kind !== "string") return undefined;
  const value = decodeString(raw, node);
  return value.length > max ? undefined : ownedString(value);
}

/** An id, a name or a model: refused when too long, and its own string (it is kept: records, logs). */
function bounded(value: string, max: number | undefined, path: Path): string {
  if (max === undefined) return value;
  if (value.length > max) shapeError(`too long (${value.length} chars; at most ${max})`, path);
  return ownedString(value);
}

export function shapeError(message: string, path: Path): never {
  throw new OffloadError("invalid_request", `${message} at ${formatPath(path)}`, {
    path: formatPath(path),
  });
}

export function expectObject(node: JsonNode | undefined, path: Path, what: string): JsonObject {
  if (node?.kind !== "object") shapeError(`${what} must be an object`, path);
  return node;
}

/** A string member; absent (or, with `nullable`, null) reads as undefined unless required. */
export function stringMember(
  raw: string,
  obj: JsonObject,
  key: string,
  path: Path,
  required: boolean,
  nullable = false,
): string | undefined {
  const node = getMember(obj, key);
  if (node === undefined || (nullable && node.kind === "null")) {
    if (required) shapeError(`missing "${key}"`, path);
    return undefined;
  }
  if (node.kind !== "string") shapeError(`"${key}" must be a string`, [...path, key]);
  return bounded(decodeString(raw, node), BOUNDED_MEMBERS[key], [...path, key]);
}

/**
 * A declared tool's name (a `tools` entry, a tool added mid-conversation), bounded like every name an
 * adapter reads; anything but a string reads as undefined, as a declaration is only looked at for our
 * own tool.
 */
export function toolNameOf(raw: string, tool: JsonObject, path: Path): string | undefined {
  const node = getMember(tool, "name");
  if (node?.kind !== "string") return undefined;
  return bounded(decodeString(raw, node), FIELD_LIMITS.tool_name, [...path, "name"]);
}

/** The `model` member (optional: a request without one is priced as unknown, so nothing is offloaded). */
export function modelOf(raw: string, root: JsonObject): string | null {
  const model = stringMember(raw, root, "model", [], false);
  return model === undefined ? null : bounded(model, FIELD_LIMITS.model, ["model"]);
}

/** `tools`: absent, null (treated as absent) or an array. */
export function toolsOf(root: JsonObject): JsonArray | undefined {
  const tools = getMember(root, "tools");
  if (tools === undefined || tools.kind === "null") return undefined;
  if (tools.kind !== "array") shapeError('"tools" must be an array', ["tools"]);
  return tools;
}

export function typeOf(raw: string, obj: JsonObject): string | undefined {
  const type = getMember(obj, "type");
  return type?.kind === "string" ? decodeString(raw, type) : undefined;
}

/** Text and media pieces of a result's content: a string, or an array of parts with a string `type`. */
export function resultTexts(
  raw: string,
  content: JsonNode,
  path: Path,
  textType: string,
  what: string,
): { texts: JsonString[]; has_media: boolean } {
  if (content.kind === "string") return { texts: [content], has_media: false };
  if (content.kind !== "array")
    shapeError(`${what} must be a string or an array of content parts`, path);
  const texts: JsonString[] = [];
  let hasMedia = false;
  content.items.forEach((item, i) => {
    const ipath: Path = [...path, i];
    const obj = expectObject(item, ipath, "a content part");
    const type = stringMember(raw, obj, "type", ipath, true);
    if (type === textType) {
      const text = getMember(obj, "text");
      if (text?.kind !== "string")
        shapeError(`a ${textType} part needs a string "text"`, [...ipath, "text"]);
      texts.push(text);
    } else hasMedia = true; // images, files…: kept in place, never measured: only text is
  });
  return { texts, has_media: hasMedia };
}

/**
 * The replacement for a result's content that reads `text`: a JSON string for a string content; for an array,
 * the text parts collapse into one at the first one's place (media parts stay where they are), carrying the
 * last text part's cache marker (`markerKey`) so a client's breakpoint is not lost.
 */
export interface RenderExtras {
  /** Replacement bytes for other parts, by their start offset (attachment replacements). */
  overrides?: ReadonlyMap<number, string> | undefined;
  /** Text parts that are not the tool's own text and stay in place (earlier attachment replacements). */
  keepText?: (part: JsonObject) => boolean;
}

export function renderTextContent(
  raw: string,
  content: JsonNode | undefined,
  text: string,
  textType: string,
  markerKey: string,
  extras: RenderExtras = {},
): string {
  if (content === undefined || content.kind !== "array") return JSON.stringify(text);
  const parts: string[] = [];
  let placed = false;
  let marker: string | undefined;
  for (const part of content.items) {
    if (
      part.kind === "object" &&
      typeOf(raw, part) === textType &&
      extras.keepText?.(part) !== true
    ) {
      const m = getMember(part, markerKey);
      if (m !== undefined) marker = raw.slice(m.start, m.end);
      if (!placed) {
        parts.push("");
        placed = true;
      }
    } else parts.push(extras.overrides?.get(part.start) ?? raw.slice(part.start, part.end));
  }
  const textPart = `{"type":${JSON.stringify(textType)},"text":${JSON.stringify(text)}${marker === undefined ? "" : `,${JSON.stringify(markerKey)}:${marker}`}}`;
  const at = parts.indexOf("");
  if (at === -1) parts.unshift(textPart);
  else parts[at] = textPart;
  return `[${parts.join(",")}]`;
}

/**
 * OpenAI sends a call's arguments as a JSON-encoded string. Parsed only where the transform needs them (a
 * recall call, to name its slice): models do emit malformed arguments and the API takes them back as they are,
 * so a parse failure is not an error here, just no arguments.
 */
export function parseArguments(
  raw: string,
  node: JsonNode | undefined,
): { node: JsonNode; source: string } | undefined {
  if (node?.kind !== "string") return undefined;
  const source = decodeString(raw, node);
  try {
    return { node: parseJsonSpans(source), source };
  } catch {
    return undefined;
  }
}

/** Insert `tool` as the last element of `tools`, or add a `tools` member (a `null` one is replaced). */
export function appendTool(
  root: JsonObject,
  tool: string,
): { start: number; end: number; text: string } {
  const tools = getMember(root, "tools");
  if (tools?.kind === "array") {
    const last = tools.items[tools.items.length - 1];
    return last === undefined
      ? { start: tools.start, end: tools.end, text: `[${tool}]` }
      : { start: last.end, end: last.end, text: `,${tool}` };
  }
  if (tools !== undefined) return { start: tools.start, end: tools.end, text: `[${tool}]` };
  const at = root.end - 1;
  return { start: at, end: at, text: `${root.keys.length > 0 ? "," : ""}"tools":[${tool}]` };
}

/** The role of message `i` (undefined past the end, or where it names none). */
export function roleAt(raw: string, messages: JsonArray, i: number): string | undefined {
  const m = messages.items[i];
  if (m?.kind !== "object") return undefined;
  const r = getMember(m, "role");
  return r?.kind === "string" ? decodeString(raw, r) : undefined;
}

/**
 * The last message of the run of messages whose role is one of `roles` that holds message `from` (where a
 * message added after that run goes), or null when message `from` is not one of them.
 */
export function runEnd(
  raw: string,
  messages: JsonArray,
  from: number,
  roles: readonly string[],
): number | null {
  const inRun = (i: number) => roles.includes(roleAt(raw, messages, i) ?? "");
  if (!inRun(from)) return null;
  let i = from;
  while (inRun(i + 1)) i++;
  return i;
}

/** Index of the last assistant message (results before it are settled), or -1. */
export function lastAssistantIndex(raw: string, messages: JsonArray): number {
  for (let i = messages.items.length - 1; i >= 0; i--) {
    const msg = messages.items[i];
    if (msg?.kind !== "object") continue;
    const role = getMember(msg, "role");
    if (role?.kind === "string" && decodeString(raw, role) === "assistant") return i;
  }
  return -1;
}

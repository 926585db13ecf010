/**
 * The texts that replace a result: the offload stub, the size-only path's shortened preview, and the marker
 * for a settled recall answer. Each is a pure function of its inputs (no clock, no random id), so the same
 * body in the same session always renders the same bytes.
 */
import type { RecallMode } from "../config.ts";
import { RECALL_TOOL_NAME } from "./recall-tool.ts";
import type { StructureIndex } from "./structure.ts";
import { formatInt, headOf, plural, safeCut } from "./text.ts";

export interface ShapeInput {
  tool_name: string;
  chars: number;
  tokens: number;
  structure: StructureIndex;
  /** The body, for its head preview. */
  body: string;
  preview_chars: number;
  /**
   * Also the index of the main collection and, for logs and text, the end of the body: what a stub adds so
   * that a model that has not read the body can often cite from it without a recall hop.
   */
  extended?: boolean;
}

export interface StubInput extends ShapeInput {
  mem_id: string;
  mode: RecallMode;
  /** Offloaded on first delivery: the model has never seen the body. */
  unseen?: boolean;
}

/**
 * Size, structural index and head preview of a body: the middle of every stub, and the whole of the toolkit's
 * `previewOf`, so a tool author's preview and an offload stub are the same code and read the same.
 */
export function renderShape(input: ShapeInput): string[] {
  const { structure } = input;
  const { head, cut } = headOf(input.body, input.preview_chars);
  const lines = [
    `${input.tool_name ? `Output of ${input.tool_name}: ` : ""}${formatInt(input.chars)} chars (~${formatInt(input.tokens)} tokens), ${structure.kind}, ${plural(structure.lines, "line")}.`,
  ];
  if (structure.outline !== "") lines.push(structure.outline);
  if (input.extended === true && structure.index !== "") lines.push(structure.index);
  if (head !== "")
    lines.push(
      `Preview (first ${formatInt(head.length)} chars${cut ? "" : ", the whole result"}):`,
      head + (cut ? "\n…" : ""),
    );
  // Logs and text end with what matters most (a summary, an exit status, the error): show the end too.
  const tail =
    input.extended === true && cut && input.preview_chars > 0 && TAIL_KINDS.has(structure.kind)
      ? tailOf(input.body, head.length, TAIL_CHARS)
      : "";
  if (tail !== "") lines.push(`Last ${formatInt(tail.length)} chars:`, `…\n${tail}`);
  return lines;
}

const TAIL_KINDS = new Set(["log", "text", "prose", "code"]);
/** Chars of the end of a log or text body a stub shows, past its head preview. */
export const TAIL_CHARS = 300;

/** The last `max` chars of `text` after `from`, starting at a line break when one is in the first half. */
export function tailOf(text: string, from: number, max: number): string {
  if (text.length - from <= 0) return "";
  let start = Math.max(from, safeCut(text, text.length - max));
  const nl = text.indexOf("\n", start);
  if (nl !== -1 && nl < text.length - max / 2) start = nl + 1;
  return text.slice(start).replace(/\s+$/, "");
}

/**
 * The stub that replaces an offloaded result: size, structural index, head preview and how to
 * recall. A pure function of its input: the same body renders the same bytes on every turn.
 */
export function renderStub(input: StubInput): string {
  const { mem_id, structure } = input;
  return [
    input.unseen
      ? `[tool result offloaded on arrival by edge-offload · mem_id ${mem_id}] You have not seen this output: its size, structure and first lines follow; recall the parts you need.`
      : `[tool result offloaded by edge-offload · mem_id ${mem_id}]`,
    ...renderShape({ ...input, extended: true }),
    recallHint(mem_id, input.mode, structure.kind === "json"),
  ].join("\n");
}

function recallHint(memId: string, mode: RecallMode, json: boolean): string {
  const ways: string[] = [];
  if (mode !== "structural") ways.push('query="…" (every exact match, with context)');
  if (mode !== "window" && json) ways.push('json_path="$…" (part of the JSON)');
  ways.push("offset and max_chars (a slice)");
  return `The full result is kept. To read it, call ${RECALL_TOOL_NAME} with mem_id="${memId}" and ${ways.join(", or ")}.`;
}

export interface CompactedInput {
  mem_id: string;
  body: string;
  chars: number;
  tokens: number;
  preview_chars: number;
  /** The recall tool is declared in this session (offload on), so the model can read the rest. */
  recall_available: boolean;
}

export function renderCompacted(input: CompactedInput): string {
  const { head } = headOf(input.body, input.preview_chars);
  const more = input.recall_available
    ? ` Call ${RECALL_TOOL_NAME} with mem_id="${input.mem_id}" and offset=${head.length} to read on.`
    : "";
  return `${head}\n[… output shortened by edge-offload: showing ${formatInt(head.length)} of ${formatInt(input.chars)} chars (~${formatInt(input.tokens)} tokens). Full output kept as mem_id ${input.mem_id}.${more}]`;
}

export interface RecallArgs {
  mem_id?: unknown;
  query?: unknown;
  json_path?: unknown;
  offset?: unknown;
  max_chars?: unknown;
  window?: unknown;
}

/** A settled recall answer, shortened to a marker naming the same mem_id and slice (no new mem_id: no loops). */
export function renderRecallMarker(chars: number, args: RecallArgs): string {
  const shown: string[] = [];
  for (const key of ["mem_id", "query", "json_path", "offset", "max_chars", "window"] as const) {
    const v = args[key];
    if (typeof v === "string" || typeof v === "number") shown.push(`${key}=${JSON.stringify(v)}`);
  }
  return `[recall answer of ${formatInt(chars)} chars, shortened by edge-offload after use. To see it again, call ${RECALL_TOOL_NAME} with ${shown.join(", ") || "the same arguments"}.]`;
}

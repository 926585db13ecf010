/**
 * The recall tool's declaration. It heads the cache hierarchy (tools come first), so its bytes must never
 * change within a session: fixed key order, no interpolated values but the mode.
 */
import { RECALL_HARD_CAP_CHARS, type RecallMode } from "../config.ts";
import { formatInt } from "./text.ts";

export const RECALL_TOOL_NAME = "recall_tool_result";

export type ToolFormat = "anthropic" | "openai-chat" | "openai-responses";

type JsonSchema = { type: "object"; properties: Record<string, unknown>; required: string[]; additionalProperties: false };

export function recallInputSchema(mode: RecallMode = "both"): JsonSchema {
  const properties: Record<string, unknown> = {
    mem_id: { type: "string", description: "The mem_id shown in the stub (trm_…)." },
  };
  if (mode !== "structural") {
    properties.query = { type: "string", description: "Exact, case-sensitive substring to find; every match is returned with context around it." };
    properties.window = { type: "integer", minimum: 0, maximum: 5000, description: "Chars of context on each side of a query match." };
  }
  if (mode !== "window") {
    properties.json_path = { type: "string", description: 'JSONPath into a JSON result, e.g. "$.items[3].price" (a leading "$." may be left out).' };
  }
  properties.offset = { type: "integer", minimum: 0, description: "Start of a slice, in chars." };
  properties.max_chars = { type: "integer", minimum: 1, maximum: RECALL_HARD_CAP_CHARS, description: "Length of the slice starting at offset." };
  return { type: "object", properties, required: ["mem_id"], additionalProperties: false };
}

export function recallToolDescription(mode: RecallMode = "both"): string {
  const ways = [
    ...(mode !== "structural" ? ["query (each exact match with context)"] : []),
    ...(mode !== "window" ? ["json_path (a part of a JSON result)"] : []),
    "offset with max_chars (a slice)",
    "no other argument (the beginning)",
  ];
  return (
    "Read back a tool result that was offloaded to save context; its stub shows the mem_id, size, structure and a preview. " +
    `Give the mem_id and one of: ${ways.join(", ")}. ` +
    `Answers are capped at ${formatInt(RECALL_HARD_CAP_CHARS)} chars and say where to continue.`
  );
}

/** The tool's definition in the given provider's request format. */
export function recallToolDefinition(format: ToolFormat = "anthropic", mode: RecallMode = "both"): Record<string, unknown> {
  const description = recallToolDescription(mode);
  const schema = recallInputSchema(mode);
  switch (format) {
    case "anthropic":
      return { name: RECALL_TOOL_NAME, description, input_schema: schema };
    case "openai-chat":
      return { type: "function", function: { name: RECALL_TOOL_NAME, description, parameters: schema } };
    case "openai-responses":
      return { type: "function", name: RECALL_TOOL_NAME, description, parameters: schema, strict: false };
  }
}

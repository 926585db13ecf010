/**
 * The recall tool's declaration. It heads the cache hierarchy (tools come first), so its bytes must never
 * change within a session: fixed key order, no interpolated values but the mode.
 */
import { RECALL_HARD_CAP_CHARS, type RecallMode } from "../config.ts";
import { formatInt } from "./text.ts";

export const RECALL_TOOL_NAME = "recall_tool_result";

export type ToolFormat = "anthropic" | "openai-chat" | "openai-responses";

type JsonSchema = { type: "object"; properties: Record<string, unknown>; required: string[]; additionalProperties: false };

// Kept short on purpose: the declaration rides in every request of the session, while each stub already
// explains how to call it for that result.
export function recallInputSchema(mode: RecallMode = "both"): JsonSchema {
  const properties: Record<string, unknown> = { mem_id: { type: "string" } };
  if (mode !== "structural") {
    properties.query = { type: "string", description: "exact substring; each match with context" };
    properties.window = { type: "integer", minimum: 0, maximum: 5000 };
  }
  if (mode !== "window") properties.json_path = { type: "string", description: "e.g. $.items[3].price" };
  properties.offset = { type: "integer", minimum: 0 };
  properties.max_chars = { type: "integer", minimum: 1, maximum: RECALL_HARD_CAP_CHARS };
  return { type: "object", properties, required: ["mem_id"], additionalProperties: false };
}

export function recallToolDescription(mode: RecallMode = "both"): string {
  const ways = [...(mode !== "structural" ? ["query"] : []), ...(mode !== "window" ? ["json_path"] : []), "offset+max_chars"];
  return `Read part of an offloaded tool result back: its mem_id (from the stub) and ${ways.join(", ")}, or nothing for the head. Max ${formatInt(RECALL_HARD_CAP_CHARS)} chars per answer.`;
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

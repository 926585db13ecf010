/**
 * The recall tool's declaration. It heads the cache hierarchy (tools come first), so its bytes must
 * never change within a session: fixed key order, no interpolated values but the mode.
 */
import { RECALL_HARD_CAP_CHARS, type RecallMode } from "../config.ts";
import { appendTool } from "./formats/shape.ts";
import type { Edit, FormatAdapter } from "./formats/types.ts";
import type { JsonNode, JsonObject } from "./json/scan.ts";
import { MAX_QUESTIONS, QUERY_ANSWER_CHARS } from "./recall-many.ts";
import { formatInt } from "./text.ts";

export const RECALL_TOOL_NAME = "recall_tool_result";

export type ToolFormat = "anthropic" | "openai-chat" | "openai-responses";

/** Where the recall tool is declared: the three provider APIs, and the AI SDK's call options. */
export type RecallToolFormat = ToolFormat | "ai-sdk";

type JsonSchema = {
  type: "object";
  properties: Record<string, unknown>;
  required: string[];
  additionalProperties: false;
};

/**
 * The declaration's shape per format (type aliases, so each is also a `Record<string, unknown>`;
 * test/types checks them against the SDKs).
 */
export type RecallToolDefinitions = {
  anthropic: { name: string; description: string; input_schema: JsonSchema };
  "openai-chat": {
    type: "function";
    function: { name: string; description: string; parameters: JsonSchema };
  };
  // strict: false because the schema's arguments are optional (strict mode requires every
  // property).
  "openai-responses": {
    type: "function";
    name: string;
    description: string;
    parameters: JsonSchema;
    strict: false;
  };
  // The AI SDK's function tool (LanguageModelV4FunctionTool), as the middleware adds it to a call.
  "ai-sdk": { type: "function"; name: string; description: string; inputSchema: JsonSchema };
};

/**
 * The JSON Schema of recall_tool_result's arguments for a recall mode. Kept short on purpose: the
 * declaration rides in every request of the session, while each stub already explains how to call
 * it for that result.
 */
export function recallInputSchema(mode: RecallMode = "both"): JsonSchema {
  const properties: Record<string, unknown> = { mem_id: { type: "string" } };
  if (mode !== "structural") {
    properties.query = { type: "string", description: "exact substring; each match with context" };
    properties.queries = {
      type: "array",
      items: { type: "string" },
      maxItems: MAX_QUESTIONS,
      description: "several queries in one call",
    };
    properties.window = { type: "integer", minimum: 0, maximum: 5000 };
  }
  if (mode !== "window") {
    properties.json_path = { type: "string", description: "e.g. $.items[3].price" };
    properties.json_paths = {
      type: "array",
      items: { type: "string" },
      maxItems: MAX_QUESTIONS,
      description: "several paths in one call",
    };
  }
  properties.offset = { type: "integer", minimum: 0 };
  properties.max_chars = { type: "integer", minimum: 1, maximum: RECALL_HARD_CAP_CHARS };
  return { type: "object", properties, required: ["mem_id"], additionalProperties: false };
}

export function recallToolDescription(mode: RecallMode = "both"): string {
  const ways = [
    ...(mode !== "structural" ? ["query (or queries)"] : []),
    ...(mode !== "window" ? ["json_path (or json_paths)"] : []),
    "offset+max_chars",
  ];
  return `Read part of an offloaded tool result back: its mem_id (from the stub) and ${ways.join(", ")}, or nothing for the head. A query answers up to ${formatInt(QUERY_ANSWER_CHARS)} chars unless max_chars asks for more (max ${formatInt(RECALL_HARD_CAP_CHARS)}).`;
}

/** The tool's definition in the given provider's request format. */
export function recallToolDefinition<F extends RecallToolFormat = "anthropic">(
  format?: F,
  mode: RecallMode = "both",
): RecallToolDefinitions[F] {
  const description = recallToolDescription(mode);
  const schema = recallInputSchema(mode);
  const definitions = {
    anthropic: () => ({ name: RECALL_TOOL_NAME, description, input_schema: schema }),
    "openai-chat": () => ({
      type: "function",
      function: { name: RECALL_TOOL_NAME, description, parameters: schema },
    }),
    "openai-responses": () => ({
      type: "function",
      name: RECALL_TOOL_NAME,
      description,
      parameters: schema,
      strict: false,
    }),
    "ai-sdk": () => ({
      type: "function",
      name: RECALL_TOOL_NAME,
      description,
      inputSchema: schema,
    }),
  } satisfies { [K in RecallToolFormat]: () => RecallToolDefinitions[K] };
  return definitions[format ?? "anthropic"]() as RecallToolDefinitions[F];
}

/**
 * The `declareRecallTool` of a format adapter whose request lists its tools in a top-level `tools` array:
 * the format's declaration appended there.
 */
export function recallToolDeclaration(
  format: RecallToolFormat,
): FormatAdapter["declareRecallTool"] {
  return (_raw: string, rootNode: JsonNode, mode: RecallMode): Edit =>
    appendTool(rootNode as JsonObject, JSON.stringify(recallToolDefinition(format, mode)));
}

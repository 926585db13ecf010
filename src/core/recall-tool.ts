/**
 * The recall tool's declaration. It heads the cache hierarchy (tools come first), so its bytes must
 * never change within a session: fixed key order, no interpolated values but the mode.
 */
import type { RecallMode } from "../config.ts";
import { appendTool } from "./formats/shape.ts";
import type { Edit, FormatAdapter } from "./formats/types.ts";
import type { JsonNode, JsonObject } from "./json/scan.ts";
import { MAX_QUESTIONS } from "./recall-many.ts";

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
 * The JSON Schema of recall_tool_result's arguments for a recall mode: names and types only. The
 * declaration rides in every request of the session once made (and making it rewrites the cached
 * prompt after `tools`), so it says only what a call needs: each stub says how to call it for that
 * result, and the bounds hold where the call is answered: more than MAX_QUESTIONS is refused with a
 * message that names the limit, and no answer passes its cap, whatever window or max_chars asks (a cut
 * answer says where to continue). A schema's bounds bind no provider's model anyway: tool schemas are
 * not enforced unless strict, and these arguments are optional.
 */
export function recallInputSchema(mode: RecallMode = "both"): JsonSchema {
  const properties: Record<string, unknown> = { mem_id: { type: "string" } };
  // A fresh object each time: the schema is public (edge-offload/pricing), and a caller may edit it.
  const strings = () => ({ type: "array", items: { type: "string" } });
  if (mode !== "structural") {
    properties.query = { type: "string" };
    properties.queries = strings();
    properties.window = { type: "integer" };
  }
  if (mode !== "window") {
    properties.json_path = { type: "string" };
    properties.json_paths = strings();
  }
  properties.offset = { type: "integer" };
  properties.max_chars = { type: "integer" };
  return { type: "object", properties, required: ["mem_id"], additionalProperties: false };
}

export function recallToolDescription(mode: RecallMode = "both"): string {
  const ways = [
    ...(mode !== "structural" ? ["query: exact substring, each match with ±window chars"] : []),
    ...(mode !== "window" ? ["json_path: e.g. $.items[3]"] : []),
    "offset+max_chars: a slice",
  ];
  return `Read back part of an offloaded tool result by the mem_id in its stub. ${ways.join("; ")}; plural forms ask up to ${MAX_QUESTIONS} at once; none: the head.`;
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

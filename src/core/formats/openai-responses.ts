/**
 * OpenAI Responses: `input` is a string or an array of items. Tool results are `function_call_output` items
 * (`{call_id, output}`) answering a `function_call` item (`{call_id, name, arguments}`) earlier in `input`;
 * `custom_tool_call_output` answers `custom_tool_call` the same way. An `output` is a string or an array of
 * `input_text` / `input_image` / `input_file` parts. Tools are `{type:"function", name, …}`; `instructions`
 * is the system prompt. Prompt order is tools → instructions → input. Caching is automatic (openai-cache.ts).
 *
 * Server-side history: with `previous_response_id` (or `conversation`), the earlier turns live on OpenAI's
 * side and are not in the request. Results there cannot be rewritten from here, an output in `input` may
 * answer a call the request does not show (so pairing is not checked for it), and the results that are in
 * `input` are the newest ones, not settled yet: nothing is offloaded for such a request. Compaction works
 * for clients that send their whole history (stateless use, `store: false`).
 *
 * Other items (reasoning, built-in tool calls and their outputs, item references, compaction items, tools
 * declared in `additional_tools`…) pass through untouched; model-output items among them (reasoning,
 * assistant messages, `*_call`, programs, compaction items) count as the model answering. After an item
 * reference or a compaction item, an output may answer a call the request does not show. An output without a
 * `call_id` (the API lets programmatic callers omit it) cannot carry a sticky decision and passes through
 * untouched too. An output that answers no call it can see, a second output for one call, or a message role
 * newer than this adapter is left as it is and noted.
 */
import { formatPath } from "../../errors.ts";
import { decodeString, getMember, type JsonNode, type JsonObject } from "../json/scan.ts";
import { RECALL_TOOL_NAME, recallToolDeclaration } from "../recall-tool.ts";
import { breakpointCollector, cacheOptionsOf, openaiAnalysis } from "./openai-cache.ts";
import {
  expectObject,
  modelOf,
  type Path,
  parseArguments,
  renderTextContent,
  resultTexts,
  shapeError,
  stringMember,
  toolNameOf,
  toolsOf,
  typeOf,
} from "./shape.ts";
import type { FormatAdapter, RequestAnalysis, ShapeNote, ToolResultSite } from "./types.ts";

interface Call {
  name: string;
  input: { node: JsonNode; source: string } | undefined;
}

const MESSAGE_ROLES = new Set(["user", "assistant", "system", "developer"]);
/** Result item type → the call item type it answers. */
const ANSWERS = new Map([
  ["function_call_output", "function_call"],
  ["custom_tool_call_output", "custom_tool_call"],
]);
/**
 * Model-output items whose type does not end in `_call`: a `program` is code the model wrote, and a
 * `compaction` item stands for the model's earlier turns (the provider summarised them into it).
 */
const MODEL_ITEMS = new Set([
  "reasoning",
  "mcp_list_tools",
  "mcp_approval_request",
  "program",
  "compaction",
]);

/** Items the model produced (its answer), as opposed to what the client or a tool added. */
function isModelItem(type: string | undefined, role: string | undefined): boolean {
  if (type === undefined || type === "message") return role === "assistant";
  return MODEL_ITEMS.has(type) || type.endsWith("_call");
}

interface Pending {
  item: JsonObject;
  index: number;
  path: Path;
  id: string;
  call: Call | undefined;
  content: JsonNode;
  texts: ToolResultSite["texts"];
  has_media: boolean;
  /**
   * An item reference or a compaction item came before it: its call may be one of the referenced (stored)
   * items, or one the compaction item stands for.
   */
  after_reference: boolean;
}

/** A function tool named recall_tool_result, at the top level or inside a `namespace` tool. */
function isRecallTool(raw: string, tool: JsonObject, path: Path): boolean {
  const type = typeOf(raw, tool);
  if (type === "namespace") {
    const inner = getMember(tool, "tools");
    return (
      inner?.kind === "array" &&
      inner.items.some((t, i) => t.kind === "object" && isRecallTool(raw, t, [...path, "tools", i]))
    );
  }
  const name = toolNameOf(raw, tool, path);
  return type === "function" && name === RECALL_TOOL_NAME;
}

export const openaiResponsesAdapter: FormatAdapter = {
  format: "openai-responses",

  analyze(raw: string, rootNode: JsonNode): RequestAnalysis {
    const root = expectObject(rootNode, [], "the request");
    const model = modelOf(raw, root);
    const tools = toolsOf(root);
    const instructions = getMember(root, "instructions");
    if (
      instructions !== undefined &&
      instructions.kind !== "string" &&
      instructions.kind !== "null"
    )
      shapeError('"instructions" must be a string', ["instructions"]);
    const inputNode = getMember(root, "input");
    if (
      inputNode !== undefined &&
      inputNode.kind !== "string" &&
      inputNode.kind !== "array" &&
      inputNode.kind !== "null"
    )
      shapeError('"input" must be a string or an array of items', ["input"]);
    const input = inputNode?.kind === "null" ? undefined : inputNode;
    stringMember(raw, root, "previous_response_id", [], false, true);
    const conversation = getMember(root, "conversation");
    const serverHistory =
      getMember(root, "previous_response_id")?.kind === "string" ||
      (conversation !== undefined && conversation.kind !== "null");
    const options = cacheOptionsOf(raw, root);

    const toolsLen = tools === undefined ? 0 : tools.end - tools.start;
    const instructionsLen =
      instructions?.kind === "string" ? instructions.end - instructions.start : 0;
    const inputLen = input === undefined ? 0 : input.end - input.start;
    const base = toolsLen + instructionsLen - (input?.start ?? 0);
    const { explicit, scanParts } = breakpointCollector(raw, base, options);

    let hasRecallTool = false;
    tools?.items.forEach((tool, i) => {
      const path: Path = ["tools", i];
      const obj = expectObject(tool, path, "a tool");
      stringMember(raw, obj, "type", path, true);
      if (isRecallTool(raw, obj, path)) hasRecallTool = true;
    });
    const notes: ShapeNote[] = [];

    const pending: Pending[] = [];
    // Calls seen so far, per kind: an output answers a call earlier in `input` (not only the turn before).
    const calls: Record<string, Map<string, Call>> = {
      function_call: new Map(),
      custom_tool_call: new Map(),
    };
    const answered = new Set<string>();
    let assistantTurns = 0;
    let lastRunStart = -1;
    let lastModel = -1;
    let previousWasModel = false;
    let references = false;

    const items = input?.kind === "array" ? input.items : [];
    items.forEach((node, i) => {
      const path: Path = ["input", i];
      const item = expectObject(node, path, "an input item");
      const typeNode = getMember(item, "type");
      if (typeNode !== undefined && typeNode.kind !== "string" && typeNode.kind !== "null")
        shapeError('"type" must be a string', [...path, "type"]);
      const type = typeNode?.kind === "string" ? decodeString(raw, typeNode) : undefined;
      const roleNode = getMember(item, "role");
      const role = roleNode?.kind === "string" ? decodeString(raw, roleNode) : undefined;

      if (type === undefined && roleNode === undefined) {
        // `{id}` alone is an item reference: it may point at a call stored on the server.
        if (getMember(item, "id") === undefined)
          shapeError('an input item needs a "type" or a "role"', path);
        references = true;
      } else if (type === undefined || type === "message") {
        if (role === undefined) shapeError('missing "role"', path);
        if (!MESSAGE_ROLES.has(role))
          notes.push({
            message: `a message with role ${JSON.stringify(role.slice(0, 40))} is passed through as it is`,
            path: formatPath([...path, "role"]),
          });
        const content = getMember(item, "content");
        if (content === undefined) shapeError('missing "content"', path);
        if (content.kind !== "string" && content.kind !== "array")
          shapeError('"content" must be a string or an array of content parts', [
            ...path,
            "content",
          ]);
        scanParts(content, [...path, "content"]);
      } else if (type === "item_reference" || type === "compaction") {
        references = true;
      } else if (type === "additional_tools") {
        // Tools declared in the input (Codex declares all of its own this way).
        const list = getMember(item, "tools");
        if (list?.kind === "array")
          list.items.forEach((tool, j) => {
            if (tool.kind === "object" && isRecallTool(raw, tool, [...path, "tools", j]))
              hasRecallTool = true;
          });
      } else if (type === "function_call" || type === "custom_tool_call") {
        const id = stringMember(raw, item, "call_id", path, true)!;
        const name = stringMember(raw, item, "name", path, true)!;
        const args =
          type === "function_call" && name === RECALL_TOOL_NAME
            ? parseArguments(raw, getMember(item, "arguments"))
            : undefined;
        calls[type]!.set(id, { name, input: args });
      } else if (ANSWERS.has(type)) {
        const id = stringMember(raw, item, "call_id", path, false, true);
        const output = getMember(item, "output");
        if (output === undefined) shapeError('missing "output"', path);
        const opath: Path = [...path, "output"];
        const { texts, has_media } = resultTexts(raw, output, opath, "input_text", '"output"');
        scanParts(output, opath);
        if (id !== undefined && answered.has(id))
          // Not a result this adapter can place (the provider will judge it): it stays as it is.
          notes.push({
            message: `a second ${type} for ${JSON.stringify(id.slice(0, 64))} is passed through as it is`,
            path: formatPath([...path, "call_id"]),
          });
        else if (id !== undefined) {
          answered.add(id);
          pending.push({
            item,
            index: i,
            path,
            id,
            call: calls[ANSWERS.get(type)!]!.get(id),
            content: output,
            texts,
            has_media,
            after_reference: references,
          });
        }
      }

      const model = isModelItem(type, role);
      if (model) {
        if (!previousWasModel) {
          assistantTurns++;
          lastRunStart = i;
        }
        lastModel = i;
      }
      previousWasModel = model;
    });

    const placed = pending.filter((p) => {
      if (p.call !== undefined || serverHistory || p.after_reference) return true;
      const type = typeOf(raw, p.item)!;
      notes.push({
        message: `${type} ${JSON.stringify(p.id.slice(0, 64))} answers no ${ANSWERS.get(type)} earlier in input: passed through as it is`,
        path: formatPath([...p.path, "call_id"]),
      });
      return false;
    });
    const sites: ToolResultSite[] = placed.map((p, n) => {
      return {
        index: n,
        tool_use_id: p.id,
        // A call kept on the server (previous_response_id, item references) has no name we can see.
        tool_name: p.call?.name ?? "",
        tool_input: p.call?.input?.node,
        ...(p.call?.input === undefined ? {} : { tool_input_source: p.call.input.source }),
        message_index: p.index,
        path: formatPath(p.path),
        settled: p.index < lastModel,
        content: p.content,
        texts: p.texts,
        has_media: p.has_media,
        position: base + p.item.start,
      };
    });

    const promptChars = toolsLen + instructionsLen + inputLen;
    const seenPrefix = lastRunStart === -1 ? undefined : base + items[lastRunStart]!.start;
    return openaiAnalysis({
      model,
      sites,
      assistantTurns,
      promptChars,
      seenPrefix,
      options,
      explicit,
      hasRecallTool,
      notes,
    });
  },

  renderContent(raw: string, site: ToolResultSite, text: string): string {
    // An output takes a string or input_* parts: the input_text parts collapse into one (carrying a client's
    // prompt_cache_breakpoint), images and files stay where they were.
    return renderTextContent(raw, site.content, text, "input_text", "prompt_cache_breakpoint");
  },

  declareRecallTool: recallToolDeclaration("openai-responses"),
};

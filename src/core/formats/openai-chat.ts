/**
 * OpenAI Chat Completions: tool results are `role:"tool"` messages whose `tool_call_id` answers one of the
 * `tool_calls[].id` of the assistant message before them (only other tool messages in between, as the API
 * requires); their `content` is a string or an array of `text` parts. Tools are `{type:"function",
 * function:{name,…}}` (or `{type:"custom", custom:{name,…}}`, whose calls are answered the same way).
 * Prompt order is tools → messages. Caching is automatic (see openai-cache.ts).
 *
 * The legacy `role:"function"` messages (answers to the deprecated `function_call`) carry no call id, so no
 * decision could be sticky for them: they pass through untouched and are never compacted. A role newer than
 * this adapter, or a tool message that answers no call it can see (or answers one twice), is left as it is
 * and noted.
 */
import { formatPath } from "../../errors.ts";
import { getMember, type JsonNode, type JsonObject } from "../json/scan.ts";
import { RECALL_TOOL_NAME, recallToolDeclaration } from "../recall-tool.ts";
import { breakpointCollector, cacheOptionsOf, openaiAnalysis } from "./openai-cache.ts";
import {
  expectObject,
  lastAssistantIndex,
  modelOf,
  type Path,
  parseArguments,
  renderTextContent,
  resultTexts,
  shapeError,
  stringMember,
  toolsOf,
} from "./shape.ts";
import type { FormatAdapter, RequestAnalysis, ShapeNote, ToolResultSite } from "./types.ts";

interface Call {
  name: string;
  input: { node: JsonNode; source: string } | undefined;
}

const ROLES = new Set(["system", "developer", "user", "assistant", "tool", "function"]);

export const openaiChatAdapter: FormatAdapter = {
  format: "openai-chat",

  analyze(raw: string, rootNode: JsonNode): RequestAnalysis {
    const root = expectObject(rootNode, [], "the request");
    const model = modelOf(raw, root);
    const tools = toolsOf(root);
    const messages = getMember(root, "messages");
    if (messages === undefined) shapeError('missing "messages"', []);
    if (messages.kind !== "array") shapeError('"messages" must be an array', ["messages"]);
    const options = cacheOptionsOf(raw, root);

    const toolsLen = tools === undefined ? 0 : tools.end - tools.start;
    const base = toolsLen - messages.start;
    const { explicit, scanParts } = breakpointCollector(raw, base, options);

    let hasRecallTool = false;
    tools?.items.forEach((tool, i) => {
      const path: Path = ["tools", i];
      const obj = expectObject(tool, path, "a tool");
      const type = stringMember(raw, obj, "type", path, true);
      if (type !== "function") return; // custom tools and whatever comes next: not ours to read
      const fn = expectObject(getMember(obj, "function"), [...path, "function"], '"function"');
      if (stringMember(raw, fn, "name", [...path, "function"], true) === RECALL_TOOL_NAME)
        hasRecallTool = true;
    });

    const sites: ToolResultSite[] = [];
    // The calls of the latest assistant message, while only tool messages have followed it.
    let calls = new Map<string, Call>();
    // The ids answered since then: a second answer to one call is noted, not paired.
    let answered = new Set<string>();
    const notes: ShapeNote[] = [];
    let assistantTurns = 0;
    let lastRunStart = -1;
    let previousRole = "";
    const lastAssistant = lastAssistantIndex(raw, messages);

    messages.items.forEach((message, m) => {
      const path: Path = ["messages", m];
      const msg = expectObject(message, path, "a message");
      const role = stringMember(raw, msg, "role", path, true)!;
      const content = getMember(msg, "content");
      if (!ROLES.has(role)) {
        // A role newer than this adapter: read for its cache markers only, passed through as it is.
        notes.push({
          message: `a message with role ${JSON.stringify(role.slice(0, 40))} is passed through as it is`,
          path: formatPath([...path, "role"]),
        });
        scanParts(content, [...path, "content"]);
        return;
      }
      if (role === "assistant") {
        if (
          content !== undefined &&
          content.kind !== "string" &&
          content.kind !== "array" &&
          content.kind !== "null"
        )
          shapeError('"content" must be a string, an array of content parts or null', [
            ...path,
            "content",
          ]);
        scanParts(content, [...path, "content"]);
        assistantTurns++;
        if (previousRole !== "assistant") lastRunStart = m;
        calls = callsOf(raw, msg, path);
        answered = new Set();
      } else if (role === "tool") {
        const id = stringMember(raw, msg, "tool_call_id", path, true)!;
        if (content === undefined) shapeError('missing "content"', path);
        const cpath: Path = [...path, "content"];
        const call = calls.get(id);
        if (call === undefined) {
          // Not a result this adapter can place (the provider will judge it): it stays as it is.
          notes.push({
            message: answered.has(id)
              ? `a second tool message for ${JSON.stringify(id.slice(0, 64))} is passed through as it is`
              : `tool message ${JSON.stringify(id.slice(0, 64))} answers no tool_calls[].id of the assistant message before it: passed through as it is`,
            path: formatPath([...path, "tool_call_id"]),
          });
          scanParts(content, cpath);
          previousRole = role;
          return;
        }
        calls.delete(id);
        answered.add(id);
        const { texts, has_media } = resultTexts(
          raw,
          content,
          cpath,
          "text",
          'a tool message\'s "content"',
        );
        scanParts(content, cpath);
        sites.push({
          index: sites.length,
          tool_use_id: id,
          tool_name: call.name,
          tool_input: call.input?.node,
          ...(call.input === undefined ? {} : { tool_input_source: call.input.source }),
          message_index: m,
          path: formatPath(path),
          settled: m < lastAssistant,
          content,
          texts,
          has_media,
          position: base + message.start,
        });
      } else if (role === "function") {
        calls = new Map(); // legacy: passed through as it is (see the header)
        answered = new Set();
      } else {
        if (content === undefined) shapeError('missing "content"', path);
        if (content.kind !== "string" && content.kind !== "array")
          shapeError('"content" must be a string or an array of content parts', [
            ...path,
            "content",
          ]);
        scanParts(content, [...path, "content"]);
        calls = new Map();
        answered = new Set();
      }
      previousRole = role;
    });

    const promptChars = toolsLen + (messages.end - messages.start);
    const seenPrefix = lastRunStart === -1 ? undefined : base + messages.items[lastRunStart]!.start;
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
    // A tool message takes a string or text parts: a string stays a string; parts collapse into one text
    // part (carrying a client's prompt_cache_breakpoint), any other part kept where it was.
    return renderTextContent(raw, site.content, text, "text", "prompt_cache_breakpoint");
  },

  declareRecallTool: recallToolDeclaration("openai-chat"),
};

/** An assistant message's `tool_calls`: id → name (and, for a recall call, its parsed arguments). */
function callsOf(raw: string, msg: JsonObject, path: Path): Map<string, Call> {
  const calls = new Map<string, Call>();
  const list = getMember(msg, "tool_calls");
  if (list === undefined || list.kind === "null") return calls;
  if (list.kind !== "array") shapeError('"tool_calls" must be an array', [...path, "tool_calls"]);
  list.items.forEach((item, i) => {
    const cpath: Path = [...path, "tool_calls", i];
    const call = expectObject(item, cpath, "a tool call");
    const id = stringMember(raw, call, "id", cpath, true)!;
    const type = stringMember(raw, call, "type", cpath, false) ?? "function";
    if (type !== "function" && type !== "custom") {
      calls.set(id, { name: "", input: undefined }); // a call type this adapter does not know: still answerable by id
      return;
    }
    const body = expectObject(getMember(call, type), [...cpath, type], `"${type}"`);
    const name = stringMember(raw, body, "name", [...cpath, type], true)!;
    // Arguments are parsed for recall calls only (to name the slice in the marker): a turn must not re-parse
    // every call's arguments, which can be as large as the results.
    const input =
      name === RECALL_TOOL_NAME && type === "function"
        ? parseArguments(raw, getMember(body, "arguments"))
        : undefined;
    calls.set(id, { name, input });
  });
  return calls;
}

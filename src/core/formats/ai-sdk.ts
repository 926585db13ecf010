/**
 * The AI SDK's provider-neutral prompt (LanguageModelV4Prompt), as the middleware hands it over:
 * `{ "model": id, "provider": name, "tools": [...], "prompt": [...] }` serialized as JSON. Tool
 * results are `tool-result` parts of `role:"tool"` messages, answering a `tool-call` part of an
 * earlier assistant message (by `toolCallId`, once); their `output` is text, JSON, an error, a
 * denial, or content parts (text and files). Tools are `{type:"function", name, inputSchema}` (or
 * provider tools, left alone). Prompt order is tools → prompt.
 *
 * A `json` output reaches the provider as its value's JSON text, so that text is what is measured
 * and offloaded; its replacement is a `text` output (an error keeps its error type). Tool results
 * inside assistant messages are the provider's own (provider-executed tools): never decided.
 *
 * Caching: with an Anthropic model, the markers are `providerOptions.anthropic.cacheControl` on
 * tools, messages and parts; other providers cache prefixes on their own (OpenAI, Gemini,
 * DeepSeek…), priced as OpenAI's automatic caching (openai-cache.ts). No anchor is placed: the
 * middleware works on the app's prompt and leaves its caching to the provider package.
 */

import type { RecallMode } from "../../config.ts";
import { formatPath } from "../../errors.ts";
import {
  decodeString,
  getMember,
  type JsonNode,
  type JsonObject,
  type JsonString,
} from "../json/scan.ts";
import { resolveModel } from "../pricing.ts";
import { RECALL_TOOL_NAME, recallToolDeclaration, recallToolDefinition } from "../recall-tool.ts";
import { openaiAnalysis } from "./openai-cache.ts";
import {
  expectObject,
  lastAssistantIndex,
  modelOf,
  type Path,
  renderTextContent,
  resultTexts,
  roleAt,
  runEnd,
  shapeError,
  stringMember,
  toolsOf,
} from "./shape.ts";
import type {
  Breakpoint,
  Edit,
  FormatAdapter,
  RequestAnalysis,
  ShapeNote,
  ToolResultSite,
} from "./types.ts";

const ROLES = new Set(["system", "user", "assistant", "tool"]);
/**
 * Provider-specific (`custom`) parts a provider package sends back; every other kind (a stream's
 * `anthropic.message_start`, say) is metadata the package drops.
 */
const SENT_CUSTOM = new Set(["anthropic.fallback", "openai.compaction"]);
const OUTPUTS = new Set([
  "text",
  "json",
  "error-text",
  "error-json",
  "execution-denied",
  "content",
]);

/** `providerOptions.anthropic.cacheControl` (or `cache_control`) of a tool, message or part. */
function markerOf(raw: string, obj: JsonObject): Breakpoint["ttl"] | undefined {
  const options = getMember(obj, "providerOptions");
  if (options?.kind !== "object") return undefined;
  const anthropic = getMember(options, "anthropic");
  if (anthropic?.kind !== "object") return undefined;
  const cc = getMember(anthropic, "cacheControl") ?? getMember(anthropic, "cache_control");
  if (cc?.kind !== "object") return undefined;
  const ttl = getMember(cc, "ttl");
  return ttl?.kind === "string" && decodeString(raw, ttl) === "1h" ? "1h" : "5m";
}

interface Call {
  name: string;
  input: JsonNode | undefined;
}

/** The text pieces (or JSON value) of an output, checked with paths. */
function outputTexts(
  raw: string,
  output: JsonObject,
  path: Path,
): { texts: JsonString[]; json_text?: JsonNode; has_media: boolean; value?: JsonNode } {
  const type = stringMember(raw, output, "type", path, true)!;
  if (!OUTPUTS.has(type))
    shapeError(
      '"type" must be "text", "json", "error-text", "error-json", "execution-denied" or "content"',
      [...path, "type"],
    );
  if (type === "execution-denied") return { texts: [], has_media: false };
  const value = getMember(output, "value");
  if (value === undefined) shapeError('missing "value"', path);
  if (type === "json" || type === "error-json")
    return { texts: [], json_text: value, has_media: false };
  if (type === "content") {
    if (value.kind !== "array") shapeError('"value" must be an array of parts', [...path, "value"]);
    return { ...resultTexts(raw, value, [...path, "value"], "text", '"value"'), value };
  }
  if (value.kind !== "string") shapeError('"value" must be a string', [...path, "value"]);
  return { texts: [value], has_media: false };
}

export const aiSdkAdapter: FormatAdapter = {
  format: "ai-sdk",

  analyze(raw: string, rootNode: JsonNode): RequestAnalysis {
    const root = expectObject(rootNode, [], "the request");
    const model = modelOf(raw, root);
    const provider = stringMember(raw, root, "provider", [], false, true) ?? "";
    const tools = toolsOf(root);
    const prompt = getMember(root, "prompt");
    if (prompt === undefined) shapeError('missing "prompt"', []);
    if (prompt.kind !== "array") shapeError('"prompt" must be an array of messages', ["prompt"]);

    const toolsLen = tools === undefined ? 0 : tools.end - tools.start;
    const base = toolsLen - prompt.start;
    const explicit: Breakpoint[] = [];
    const mark = (obj: JsonObject, position: number) => {
      const ttl = markerOf(raw, obj);
      if (ttl !== undefined) explicit.push({ position, ttl });
    };

    let hasRecallTool = false;
    let lastThinking: number | undefined;
    let unsent = 0;
    tools?.items.forEach((tool, i) => {
      const path: Path = ["tools", i];
      const obj = expectObject(tool, path, "a tool");
      const type = stringMember(raw, obj, "type", path, true);
      if (type !== "function") return; // provider tools: not ours to read
      if (stringMember(raw, obj, "name", path, true) === RECALL_TOOL_NAME) hasRecallTool = true;
      mark(obj, tool.end - tools.start);
    });

    const sites: ToolResultSite[] = [];
    // Parts this adapter cannot place: left as they are, named in the report.
    const notes: ShapeNote[] = [];
    // Calls of every assistant message so far that no result has answered yet.
    const open = new Map<string, Call>();
    const answered = new Set<string>();
    let assistantTurns = 0;
    let lastRunStart = -1;
    let previousRole = "";
    const lastAssistant = lastAssistantIndex(raw, prompt);

    prompt.items.forEach((message, m) => {
      const path: Path = ["prompt", m];
      const msg = expectObject(message, path, "a message");
      const role = stringMember(raw, msg, "role", path, true)!;
      if (!ROLES.has(role)) {
        // A role newer than this adapter: passed through as it is, its markers still read.
        notes.push({
          message: `a message with role ${JSON.stringify(role.slice(0, 40))} is passed through as it is`,
          path: formatPath([...path, "role"]),
        });
        mark(msg, base + message.end);
        return;
      }
      const content = getMember(msg, "content");
      if (content === undefined) shapeError('missing "content"', path);
      mark(msg, base + message.end);
      if (role === "system") {
        if (content.kind !== "string")
          shapeError('a system message\'s "content" must be a string', [...path, "content"]);
        previousRole = role;
        return;
      }
      if (content.kind !== "array")
        shapeError('"content" must be an array of parts', [...path, "content"]);
      if (role === "assistant") {
        assistantTurns++;
        if (previousRole !== "assistant") lastRunStart = m;
      }
      content.items.forEach((part, p) => {
        const ppath: Path = [...path, "content", p];
        const obj = expectObject(part, ppath, "a part");
        const type = stringMember(raw, obj, "type", ppath, true);
        mark(obj, base + part.end);
        if (type === "reasoning" && role === "assistant") lastThinking = base + part.start;
        if (type === "custom") {
          const kind = getMember(obj, "kind");
          if (kind?.kind !== "string" || !SENT_CUSTOM.has(decodeString(raw, kind)))
            unsent += part.end - part.start;
        }
        if (type === "tool-call" && role === "assistant") {
          const id = stringMember(raw, obj, "toolCallId", ppath, true)!;
          const name = stringMember(raw, obj, "toolName", ppath, true)!;
          open.set(id, { name, input: getMember(obj, "input") });
        } else if (type === "tool-result" && role === "tool") {
          const id = stringMember(raw, obj, "toolCallId", ppath, true)!;
          const call = open.get(id);
          if (call === undefined) {
            // Not a result this adapter can place (the provider will judge it): it stays as it is.
            notes.push({
              message: answered.has(id)
                ? `a second tool-result for ${JSON.stringify(id.slice(0, 64))} is passed through as it is`
                : `tool-result ${JSON.stringify(id.slice(0, 64))} answers no tool-call of an earlier assistant message: passed through as it is`,
              path: formatPath([...ppath, "toolCallId"]),
            });
            return;
          }
          open.delete(id);
          answered.add(id);
          sites.push(
            resultSite(
              raw,
              obj,
              ppath,
              id,
              call,
              sites.length,
              m,
              m < lastAssistant,
              base + part.start,
            ),
          );
        }
      });
      previousRole = role;
    });

    const promptChars = toolsLen + (prompt.end - prompt.start);
    const seenPrefix = lastRunStart === -1 ? undefined : base + prompt.items[lastRunStart]!.start;
    if (explicitCaching(model, provider)) {
      const breakpoints = sentBreakpoints(explicit, provider, toolsLen);
      const last = prompt.items[prompt.items.length - 1];
      return {
        model,
        sites,
        assistant_turns: assistantTurns,
        prompt_chars: promptChars,
        ...(unsent === 0 ? {} : { unsent_chars: unsent }),
        breakpoints,
        client_caches: breakpoints.length > 0,
        has_recall_tool: hasRecallTool,
        auto_cache: false,
        last_message_position: last === undefined ? promptChars : base + last.start,
        ...(lastThinking === undefined ? {} : { last_thinking_position: lastThinking }),
        anchor_slots: [],
        notes,
      };
    }
    const automatic = openaiAnalysis({
      model,
      sites,
      assistantTurns,
      promptChars,
      seenPrefix,
      options: { explicit: false, ttl: "5m" },
      explicit: [],
      hasRecallTool,
      notes,
    });
    return unsent === 0 ? automatic : { ...automatic, unsent_chars: unsent };
  },

  renderContent(raw: string, site: ToolResultSite, text: string): string {
    // The output object is rewritten whole: a text output reads `text` (an error stays an error), a
    // content output keeps its file parts in place, and the output's own providerOptions stay.
    const output = site.content as JsonObject;
    const type = decodeString(raw, getMember(output, "type") as JsonString);
    const options = getMember(output, "providerOptions");
    const tail =
      options === undefined ? "" : `,"providerOptions":${raw.slice(options.start, options.end)}`;
    if (type === "content") {
      const value = renderTextContent(
        raw,
        getMember(output, "value"),
        text,
        "text",
        "providerOptions",
      );
      return `{"type":"content","value":${value}${tail}}`;
    }
    const kind = type === "error-text" || type === "error-json" ? "error-text" : "text";
    return `{"type":"${kind}","value":${JSON.stringify(text)}${tail}}`;
  },

  declareRecallTool: recallToolDeclaration("ai-sdk"),
  declareRecallToolInline: inlineRecallTool,
};

/**
 * The recall tool added mid-conversation, for the AI SDK's Anthropic provider (`anthropic.*`): a system
 * message right after the run of user and tool messages holding message `after`, whose
 * `providerOptions.anthropic.toolChanges` adds it by value. The provider package sends that as a
 * `tool_addition` in a `role: "system"` message, with its beta. The API takes one there when the next
 * message is an assistant's or there is none; where the app's own system message follows (two in a row
 * are refused), or with another provider, none fits.
 */
function inlineRecallTool(
  raw: string,
  rootNode: JsonNode,
  mode: RecallMode,
  after: number,
): Edit | null {
  if (rootNode.kind !== "object") return null;
  const provider = getMember(rootNode, "provider");
  if (provider?.kind !== "string" || !anthropicPackage(decodeString(raw, provider))) return null;
  const prompt = getMember(rootNode, "prompt");
  if (prompt?.kind !== "array") return null;
  // The provider package sends tool messages as user turns.
  const i = runEnd(raw, prompt, after, ["user", "tool"]);
  if (i === null) return null;
  if (i + 1 < prompt.items.length && roleAt(raw, prompt, i + 1) !== "assistant") return null;
  const change = { type: "tool_addition", tool: recallToolDefinition("ai-sdk", mode) };
  const at = prompt.items[i]!.end;
  return {
    start: at,
    end: at,
    text: `,{"role":"system","content":"","providerOptions":{"anthropic":{"toolChanges":[${JSON.stringify(change)}]}}}`,
  };
}

/**
 * The call goes through the AI SDK's own Anthropic package (`anthropic.messages`, …): the one whose wire
 * this adapter models beyond the prompt (its cap on markers, its tool changes, its signed reasoning).
 */
export function anthropicPackage(provider: string): boolean {
  return /^anthropic\./.test(provider);
}

/** The most cache breakpoints a request may carry (Anthropic's limit, which its AI SDK package keeps). */
const MAX_BREAKPOINTS = 4;

/**
 * The markers that reach the provider, in prompt order. The AI SDK's Anthropic package (`anthropic.*`)
 * counts the system prompt's and the messages' markers first, then the tools', and ignores every one past
 * the fourth (with a warning), so an app that marks each step's last message and keeps the marks sends
 * only its first four: the cache is modelled on those. Other packages: every marker as read.
 */
function sentBreakpoints(
  explicit: readonly Breakpoint[],
  provider: string,
  toolsEnd: number,
): Breakpoint[] {
  const sorted = [...explicit].sort((a, b) => a.position - b.position);
  if (!anthropicPackage(provider) || sorted.length <= MAX_BREAKPOINTS) return sorted;
  const prompt = sorted.filter((b) => b.position > toolsEnd).slice(0, MAX_BREAKPOINTS);
  const tools = sorted
    .filter((b) => b.position <= toolsEnd)
    .slice(0, MAX_BREAKPOINTS - prompt.length);
  return [...tools, ...prompt];
}

/** Anthropic models cache only where markers say (whatever provider package serves them). */
function explicitCaching(model: string | null, provider: string): boolean {
  return resolveModel(model)?.provider === "anthropic" || /anthropic/i.test(provider);
}

function resultSite(
  raw: string,
  part: JsonObject,
  path: Path,
  id: string,
  call: Call,
  index: number,
  messageIndex: number,
  settled: boolean,
  position: number,
): ToolResultSite {
  const output = getMember(part, "output");
  if (output === undefined) shapeError('missing "output"', path);
  const opath: Path = [...path, "output"];
  const obj = expectObject(output, opath, '"output"');
  const texts = outputTexts(raw, obj, opath);
  return {
    index,
    tool_use_id: id,
    tool_name: call.name,
    tool_input: call.input,
    message_index: messageIndex,
    path: formatPath(path),
    settled,
    content: obj,
    texts: texts.texts,
    ...(texts.json_text === undefined ? {} : { json_text: texts.json_text }),
    has_media: texts.has_media,
    position,
  };
}

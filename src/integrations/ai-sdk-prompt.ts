/**
 * The AI SDK call as the core reads it, and back. The prompt is an object (with bytes, URLs and
 * whatever the app put in providerOptions), not JSON on the wire, so the middleware:
 * - serializes `{ model, provider, tools, prompt }` once, deterministically (JSON.stringify in the
 *   prompt's own key order, bytes as base64, URLs as their text: the same prompt gives the same
 *   bytes, so decisions and stubs stay sticky across calls);
 * - compacts that text with the "ai-sdk" adapter;
 * - rebuilds the call from the original objects, replacing only the outputs the turn rewrote and
 *   appending the tools it declared: every other part keeps its identity (a Uint8Array stays one).
 * Also here: what a hop sends back (the model's answer as an assistant message, our answers as a tool
 * message) and the remembered recall calls of a mixed turn spliced into a later prompt.
 */
import type {
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
} from "@ai-sdk/provider";
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import type { Decision } from "../core/turn/context.ts";
import type { RememberedCall } from "../proxy/port.ts";
import type { RecallResult } from "../proxy/recalls.ts";

type AssistantPart = Extract<LanguageModelV4Message, { role: "assistant" }>["content"][number];
type ToolMessage = Extract<LanguageModelV4Message, { role: "tool" }>;
type ToolResultPart = Extract<ToolMessage["content"][number], { type: "tool-result" }>;

function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** Bytes as base64 (what the provider packages send), everything else as JSON has it. */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Uint8Array) return base64(value);
  if (value instanceof ArrayBuffer) return base64(new Uint8Array(value));
  return value;
}

/** The call as the "ai-sdk" format's JSON text. */
export function wireOf(
  params: LanguageModelV4CallOptions,
  model: { modelId: string; provider: string },
): string {
  return JSON.stringify(
    { model: model.modelId, provider: model.provider, tools: params.tools, prompt: params.prompt },
    replacer,
  );
}

const SITE_PATH = /^prompt\[(\d+)\]\.content\[(\d+)\]$/;

/**
 * The call with the compacted text's rewritten outputs and declared tools, everything else as it
 * was. `decisions` say which results were rewritten (a replacement is rendered for every result not
 * kept). A system message the turn inserted to declare the recall tool mid-conversation (Anthropic's
 * tool changes) goes in at its place; the app's messages after it keep their own objects.
 */
export function rebuild(
  params: LanguageModelV4CallOptions,
  compacted: string,
  decisions: readonly Decision[],
): LanguageModelV4CallOptions {
  const out = JSON.parse(compacted) as {
    tools?: LanguageModelV4CallOptions["tools"];
    prompt: LanguageModelV4Message[];
  };
  // Where each of the app's messages sits in the compacted prompt, and what the turn inserted before it.
  const at: number[] = [];
  const inserted = new Map<number, LanguageModelV4Message[]>();
  out.prompt.forEach((m, i) => {
    const j = at.length;
    const app = params.prompt[j];
    if (declaresRecallInline(m) && (app === undefined || !declaresRecallInline(app)))
      inserted.set(j, [...(inserted.get(j) ?? []), m]);
    else at.push(i);
  });
  const prompt = [...params.prompt];
  for (const d of decisions) {
    if (d.action === "kept") continue;
    const site = SITE_PATH.exec(d.path);
    if (site === null) continue;
    const [m, p] = [Number(site[1]), Number(site[2])];
    const message = prompt[m];
    const rewritten = out.prompt[at[m] ?? -1];
    const output =
      rewritten?.role === "tool"
        ? (rewritten.content[p] as { output?: LanguageModelV4ToolResultOutput } | undefined)?.output
        : undefined;
    if (message?.role !== "tool" || output === undefined) continue;
    const content = [...message.content];
    const part = content[p];
    if (part?.type !== "tool-result") continue;
    content[p] = { ...part, output: restoreFiles(part.output, output) };
    prompt[m] = { ...message, content };
  }
  const before = params.tools?.length ?? 0;
  const added = (out.tools ?? []).slice(before);
  return {
    ...params,
    prompt:
      inserted.size === 0
        ? prompt
        : [
            ...prompt.flatMap((m, j) => [...(inserted.get(j) ?? []), m]),
            ...(inserted.get(prompt.length) ?? []),
          ],
    ...(added.length === 0 ? {} : { tools: [...(params.tools ?? []), ...added] }),
  };
}

/** A system message that adds the recall tool by value (the inline declaration, ai-sdk format). */
function declaresRecallInline(m: LanguageModelV4Message): boolean {
  if (m.role !== "system") return false;
  const changes = (m.providerOptions?.anthropic as { toolChanges?: unknown } | undefined)
    ?.toolChanges;
  return (
    Array.isArray(changes) &&
    changes.some(
      (c) => (c as { tool?: { name?: unknown } } | null)?.tool?.name === RECALL_TOOL_NAME,
    )
  );
}

/** A rewritten content output keeps the app's own file parts (their bytes unserialized). */
function restoreFiles(
  was: LanguageModelV4ToolResultOutput,
  now: LanguageModelV4ToolResultOutput,
): LanguageModelV4ToolResultOutput {
  if (was.type !== "content" || now.type !== "content") return now;
  const originals = was.value.filter((p) => p.type !== "text");
  let i = 0;
  return { ...now, value: now.value.map((p) => (p.type === "text" ? p : (originals[i++] ?? p))) };
}

export function isOurCall(part: { type: string; toolName?: string; providerExecuted?: boolean }) {
  return (
    part.type === "tool-call" &&
    part.toolName === RECALL_TOOL_NAME &&
    part.providerExecuted !== true
  );
}

function inputOf(json: string): unknown {
  try {
    return JSON.parse(json === "" ? "{}" : json);
  } catch {
    return {};
  }
}

/**
 * The model's answer as the assistant message a hop sends back: its text, reasoning (with the
 * provider's metadata, e.g. a thinking signature, as the part's options), files and tool calls.
 */
export function assistantMessage(
  content: readonly LanguageModelV4Content[],
): LanguageModelV4Message {
  const parts: AssistantPart[] = [];
  for (const c of content) {
    const options = c.providerMetadata === undefined ? {} : { providerOptions: c.providerMetadata };
    if (c.type === "text" || c.type === "reasoning")
      parts.push({ type: c.type, text: c.text, ...options });
    else if (c.type === "file" || c.type === "reasoning-file")
      parts.push({ type: c.type, data: c.data, mediaType: c.mediaType, ...options });
    else if (c.type === "tool-call")
      parts.push({
        type: "tool-call",
        toolCallId: c.toolCallId,
        toolName: c.toolName,
        input: inputOf(c.input),
        ...(c.providerExecuted === undefined ? {} : { providerExecuted: c.providerExecuted }),
        ...options,
      });
    else if (c.type === "tool-result")
      parts.push({
        type: "tool-result",
        toolCallId: c.toolCallId,
        toolName: c.toolName,
        output: { type: c.isError ? "error-json" : "json", value: c.result },
        ...options,
      });
  }
  return { role: "assistant", content: parts };
}

function recallResultPart(r: RecallResult): ToolResultPart {
  return {
    type: "tool-result",
    toolCallId: r.id,
    toolName: RECALL_TOOL_NAME,
    output: { type: r.is_error ? "error-text" : "text", value: r.content },
  };
}

/** Our answers to a hop's recall calls, as the tool message that follows the model's. */
export function recallMessage(results: readonly RecallResult[]): LanguageModelV4Message {
  return { role: "tool", content: results.map(recallResultPart) };
}

/** The call of a hop: the call as sent, continued with every hop's answer and our answers. */
export function nextParams(
  params: LanguageModelV4CallOptions,
  hops: readonly { content: readonly LanguageModelV4Content[]; results: readonly RecallResult[] }[],
): LanguageModelV4CallOptions {
  const more = hops.flatMap((h) => [assistantMessage(h.content), recallMessage(h.results)]);
  return { ...params, prompt: [...params.prompt, ...more] };
}

export interface RecallMemo {
  anchors: readonly string[];
  calls: readonly RememberedCall[];
}

/**
 * Splices remembered recalls (a mixed turn's) back beside the app's calls they came with: our
 * tool-call parts at the end of the assistant message that holds an anchor, our results at the end
 * of the tool message after it. A memo whose answers are missing, or whose calls the prompt already
 * has, is left out.
 */
export function spliceRecalls(
  prompt: LanguageModelV4Prompt,
  memos: readonly RecallMemo[],
  answers: ReadonlyMap<string, RecallResult>,
): { prompt: LanguageModelV4Prompt; spliced: number } {
  let out = prompt;
  let spliced = 0;
  prompt.forEach((message, i) => {
    if (message.role !== "assistant") return;
    const ids = new Set(
      message.content.flatMap((p) => (p.type === "tool-call" ? [p.toolCallId] : [])),
    );
    if (ids.size === 0) return;
    const memo = memos.find((m) => m.anchors.some((a) => ids.has(a)));
    const next = prompt[i + 1];
    if (memo === undefined || next?.role !== "tool") return;
    if (memo.calls.some((c) => ids.has(c.id) || !answers.has(c.id))) return;
    if (out === prompt) out = [...prompt];
    out[i] = {
      ...message,
      content: [
        ...message.content,
        ...memo.calls.map(
          (c): AssistantPart => ({
            type: "tool-call",
            toolCallId: c.id,
            toolName: RECALL_TOOL_NAME,
            input: inputOf(c.arguments),
          }),
        ),
      ],
    };
    out[i + 1] = {
      ...next,
      content: [...next.content, ...memo.calls.map((c) => recallResultPart(answers.get(c.id)!))],
    };
    spliced += memo.calls.length;
  });
  return { prompt: out, spliced };
}

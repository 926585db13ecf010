/**
 * The request a session's call sends, in the provider's format. Sessions come in the replay's
 * formats (Anthropic messages: src/replay/sessions.ts); for the OpenAI APIs the conversation is
 * carried over block by block: text, tool calls and tool results (text only: a Chat tool message
 * holds no image), images and PDF documents of user messages as the API's own parts, thinking
 * blocks left out (another provider's signatures mean nothing there), cache markers left out
 * (OpenAI caches on its own).
 */
import { textOfResult } from "../replay/blocks.ts";
import { requestFor } from "../replay/run.ts";
import type { Block, Client, Message, ReplaySession, Request } from "../replay/types.ts";
import type { EvalProvider } from "./types.ts";

export interface RequestSettings {
  provider: EvalProvider;
  model: string;
  /** "cached": an advancing cache breakpoint on the last block (Anthropic), as the replay does. */
  client: Client;
  maxTokens: number;
  /** null: left out (the provider's default). */
  temperature: number | null;
}

/** The request of the call whose prompt is the session's first `n` messages, as JSON text. */
export function callRequest(session: ReplaySession, n: number, s: RequestSettings): string {
  if (s.provider === "anthropic") {
    // A logged request that carries its own breakpoints keeps them (a fifth one would be refused).
    const client = hasMarkers(session.messages.slice(0, n)) ? "uncached" : s.client;
    const r: Request = { ...requestFor(session, n, s.model, client), max_tokens: s.maxTokens };
    if (s.temperature !== null) r.temperature = s.temperature;
    return JSON.stringify(r);
  }
  const base = requestFor(session, n, s.model, "uncached");
  const tools = (base.tools ?? []).filter(isRecord);
  const system = systemText(base.system);
  const temperature = s.temperature === null ? {} : { temperature: s.temperature };
  if (s.provider === "openai-chat") {
    const messages: unknown[] = system === "" ? [] : [{ role: "system", content: system }];
    for (const m of base.messages) messages.push(...chatMessages(m));
    return JSON.stringify({
      model: s.model,
      max_completion_tokens: s.maxTokens,
      ...temperature,
      ...(tools.length === 0
        ? {}
        : {
            tools: tools.map((t) => ({
              type: "function",
              function: {
                name: t.name,
                ...(typeof t.description === "string" ? { description: t.description } : {}),
                parameters: t.input_schema ?? { type: "object" },
              },
            })),
          }),
      messages,
    });
  }
  return JSON.stringify({
    model: s.model,
    ...(system === "" ? {} : { instructions: system }),
    max_output_tokens: s.maxTokens,
    ...temperature,
    ...(tools.length === 0
      ? {}
      : {
          tools: tools.map((t) => ({
            type: "function",
            name: t.name,
            ...(typeof t.description === "string" ? { description: t.description } : {}),
            parameters: t.input_schema ?? { type: "object" },
            strict: false,
          })),
        }),
    input: base.messages.flatMap(responsesItems),
    // Nothing of the eval is kept at the provider.
    store: false,
  });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function hasMarkers(messages: readonly Message[]): boolean {
  return messages.some(
    (m) => typeof m.content !== "string" && m.content.some((b) => b.cache_control !== undefined),
  );
}

function systemText(system: unknown): string {
  if (typeof system === "string") return system;
  return textOfResult(system);
}

function blocksOf(m: Message): Block[] {
  return typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
}

function textOf(blocks: readonly Block[]): string {
  return blocks
    .filter((b) => b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("\n");
}

/** A base64 image or PDF source as a data URL, or null for other sources. */
function dataUrl(b: Block): { url: string; media: string } | null {
  const src = b.source;
  if (!isRecord(src) || src.type !== "base64" || typeof src.data !== "string") return null;
  const media = typeof src.media_type === "string" ? src.media_type : "application/octet-stream";
  return { url: `data:${media};base64,${src.data}`, media };
}

function urlOf(b: Block): string | null {
  const src = b.source;
  return isRecord(src) && src.type === "url" && typeof src.url === "string" ? src.url : null;
}

function resultText(b: Block): string {
  const text = textOfResult(b.content);
  const media = Array.isArray(b.content)
    ? b.content.filter((c) => isRecord(c) && c.type !== "text").length
    : 0;
  return media === 0 ? text : `${text}${text === "" ? "" : "\n"}[${media} media block(s) left out]`;
}

function toolArguments(b: Block): string {
  return JSON.stringify(b.input ?? {});
}

function chatMessages(m: Message): unknown[] {
  const blocks = blocksOf(m);
  if (m.role === "assistant") {
    const calls = blocks
      .filter((b) => b.type === "tool_use")
      .map((b) => ({
        id: String(b.id),
        type: "function",
        function: { name: String(b.name), arguments: toolArguments(b) },
      }));
    const text = textOf(blocks);
    return [
      {
        role: "assistant",
        content: text === "" ? null : text,
        ...(calls.length === 0 ? {} : { tool_calls: calls }),
      },
    ];
  }
  const out: unknown[] = blocks
    .filter((b) => b.type === "tool_result")
    .map((b) => ({ role: "tool", tool_call_id: String(b.tool_use_id), content: resultText(b) }));
  const parts: unknown[] = [];
  for (const b of blocks) {
    if (b.type === "text" && typeof b.text === "string") parts.push({ type: "text", text: b.text });
    else if (b.type === "image") {
      const url = dataUrl(b)?.url ?? urlOf(b);
      if (url !== null) parts.push({ type: "image_url", image_url: { url } });
    } else if (b.type === "document") {
      const data = dataUrl(b);
      if (data !== null)
        parts.push({ type: "file", file: { filename: fileName(b), file_data: data.url } });
    }
  }
  if (parts.length > 0)
    out.push({
      role: "user",
      content: parts.every((p) => (p as Block).type === "text") ? textOf(parts as Block[]) : parts,
    });
  return out;
}

function fileName(b: Block): string {
  return typeof b.title === "string" && b.title !== "" ? b.title : "document.pdf";
}

function responsesItems(m: Message): unknown[] {
  const blocks = blocksOf(m);
  if (m.role === "assistant") {
    const text = textOf(blocks);
    const out: unknown[] = text === "" ? [] : [{ role: "assistant", content: text }];
    for (const b of blocks)
      if (b.type === "tool_use")
        out.push({
          type: "function_call",
          call_id: String(b.id),
          name: String(b.name),
          arguments: toolArguments(b),
        });
    return out;
  }
  const out: unknown[] = blocks
    .filter((b) => b.type === "tool_result")
    .map((b) => ({
      type: "function_call_output",
      call_id: String(b.tool_use_id),
      output: resultText(b),
    }));
  const parts: unknown[] = [];
  for (const b of blocks) {
    if (b.type === "text" && typeof b.text === "string")
      parts.push({ type: "input_text", text: b.text });
    else if (b.type === "image") {
      const url = dataUrl(b)?.url ?? urlOf(b);
      if (url !== null) parts.push({ type: "input_image", image_url: url, detail: "auto" });
    } else if (b.type === "document") {
      const data = dataUrl(b);
      if (data !== null)
        parts.push({ type: "input_file", filename: fileName(b), file_data: data.url });
    }
  }
  if (parts.length > 0) out.push({ role: "user", content: parts });
  return out;
}

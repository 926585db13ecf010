/**
 * The agreement bench's clients: how each one builds its request for a corpus call (its provider format, its
 * cache breakpoints, how much history it keeps), and what a fake model needs to read back from a request in
 * any format (a tool result's text, whether the recall tool is declared, whether a recall was just answered).
 */
import { RECALL_TOOL_NAME } from "../../../src/core/recall-tool.ts";
import { textOfResult } from "../../../src/replay/blocks.ts";
import { requestFor } from "../../../src/replay/run.ts";
import type { ReplaySession } from "../../../src/replay/types.ts";
import type { Format } from "../billing-fake.ts";
import { chatKit, type Req, responsesKit } from "../formats.ts";

/**
 * Where an Anthropic client puts its breakpoints: on the last block of the prompt (advancing, 5 minutes or
 * 1 hour), on the system prompt only, nowhere, or at the top level (automatic caching). OpenAI clients set
 * none (the provider caches on its own) and may pass a `prompt_cache_key`.
 */
export type Caching = "last-block" | "last-block-1h" | "system" | "none" | "auto" | "openai";

export interface Client {
  format: Format;
  model: string;
  caching: Caching;
  stream: boolean;
  /** A sliding window: the task and the last `window` exchanges (model answer and results) only. */
  window?: number;
  /** OpenAI's routing key, per session. */
  cacheKey?: boolean;
}

export const RECALL_ID_PREFIX = "toolu_replay_recall_";

type Json = Record<string, unknown>;
type Message = ReplaySession["messages"][number];

function asBlocks(m: Message): Json[] {
  return typeof m.content === "string"
    ? [{ type: "text", text: m.content }]
    : (m.content as unknown as Json[]);
}

/** The messages a sliding-window client keeps: the task, then its last `n` exchanges. */
function windowed(messages: Message[], n: number): Message[] {
  const starts = messages.flatMap((m, i) => (m.role === "assistant" ? [i] : []));
  if (starts.length <= n) return messages;
  return [messages[0]!, ...messages.slice(starts[starts.length - n]!)];
}

/** The request the client sends for the call whose answer is `session.messages[n]`. */
export function clientRequest(session: ReplaySession, n: number, c: Client, id: string): Req {
  const base = requestFor(session, n, c.model, "uncached") as unknown as Json;
  let messages = base.messages as Message[];
  if (c.window !== undefined) messages = windowed(messages, c.window);
  let req: Req = { ...base, messages };
  if (c.format === "openai-chat") req = chatKit.fromAnthropic(req as never, c.model);
  else if (c.format === "openai-responses") req = responsesKit.fromAnthropic(req as never, c.model);
  else if (c.caching === "last-block" || c.caching === "last-block-1h") {
    const last = messages[messages.length - 1]!;
    const blocks = asBlocks(last).map((b, i, all) =>
      i === all.length - 1
        ? {
            ...b,
            cache_control:
              c.caching === "last-block-1h"
                ? { type: "ephemeral", ttl: "1h" }
                : { type: "ephemeral" },
          }
        : b,
    );
    req.messages = [...messages.slice(0, -1), { ...last, content: blocks }];
  } else if (c.caching === "system")
    req.system = [
      { type: "text", text: String(base.system ?? ""), cache_control: { type: "ephemeral" } },
    ];
  else if (c.caching === "auto") req.cache_control = { type: "ephemeral" };
  if (c.format !== "anthropic" && c.cacheKey) req.prompt_cache_key = `agreement-${id}`;
  if (c.stream) {
    req.stream = true;
    // A Chat client that does not ask for usage: the proxy asks upstream (stream-usage.ts).
  }
  return req;
}

/** The text of the tool result answering call `id` in a request, or null. */
export function resultText(format: Format, json: Json, id: string): string | null {
  if (format === "anthropic") {
    for (const m of (json.messages ?? []) as Json[])
      if (Array.isArray(m.content))
        for (const b of m.content as Json[])
          if (b.type === "tool_result" && b.tool_use_id === id)
            return textOfResult(b.content as never);
    return null;
  }
  const text = (v: unknown) =>
    typeof v === "string"
      ? v
      : Array.isArray(v)
        ? v.map((p) => String((p as Json).text ?? "")).join("\n")
        : null;
  if (format === "openai-chat") {
    const m = ((json.messages ?? []) as Json[]).find(
      (x) => x.role === "tool" && x.tool_call_id === id,
    );
    return m === undefined ? null : text(m.content);
  }
  const item = ((Array.isArray(json.input) ? json.input : []) as Json[]).find(
    (x) => x.type === "function_call_output" && x.call_id === id,
  );
  return item === undefined ? null : text(item.output);
}

/**
 * The request declares the recall tool: in `tools`, or (Anthropic) defined in a `role: "system"` message's
 * `tool_addition` block, which offers it from there on.
 */
export function declaresRecall(format: Format, json: Json): boolean {
  const inTools = ((json.tools ?? []) as Json[]).some(
    (t) =>
      (format === "openai-chat" ? (t.function as Json | undefined)?.name : t.name) ===
      RECALL_TOOL_NAME,
  );
  if (inTools || format !== "anthropic") return inTools;
  return ((json.messages ?? []) as Json[]).some(
    (m) =>
      m.role === "system" &&
      Array.isArray(m.content) &&
      (m.content as Json[]).some((b) => {
        const tool = b.type === "tool_addition" ? (b.tool as Json | undefined) : undefined;
        return (tool?.definition as Json | undefined)?.name === RECALL_TOOL_NAME;
      }),
  );
}

/** The request's last item answers one of the fake model's recall calls (a recall hop). */
export function answersRecall(format: Format, json: Json): boolean {
  const isRecall = (id: unknown) => typeof id === "string" && id.startsWith(RECALL_ID_PREFIX);
  if (format === "anthropic") {
    const last = ((json.messages ?? []) as Json[]).at(-1);
    return (
      last?.role === "user" &&
      Array.isArray(last.content) &&
      (last.content as Json[]).some((b) => b.type === "tool_result" && isRecall(b.tool_use_id))
    );
  }
  if (format === "openai-chat") {
    const last = ((json.messages ?? []) as Json[]).at(-1);
    return last?.role === "tool" && isRecall(last.tool_call_id);
  }
  const last = ((Array.isArray(json.input) ? json.input : []) as Json[]).at(-1);
  return last?.type === "function_call_output" && isRecall(last.call_id);
}

/** The proxy's path for a format. */
export function proxyPath(format: Format): string {
  if (format === "anthropic") return "/anthropic/v1/messages";
  return format === "openai-chat" ? "/openai/v1/chat/completions" : "/openai/v1/responses";
}

/** The provider's headers a client sends. */
export function providerHeaders(format: Format): Record<string, string> {
  return format === "anthropic"
    ? { "anthropic-version": "2023-06-01", "x-api-key": "sk-ant-agreement-fake" }
    : { authorization: "Bearer sk-agreement-fake" };
}

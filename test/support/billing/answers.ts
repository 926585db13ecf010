/**
 * The billing fake's answers in each API's shape, buffered or as the event stream, with the usage fields the
 * provider reports: Anthropic's `input_tokens`, `cache_creation_input_tokens` with its 5m/1h split,
 * `cache_read_input_tokens` and `output_tokens` (a stream reports them in `message_start` and, cumulative,
 * in the closing `message_delta`); OpenAI's `prompt_tokens_details.cached_tokens` /
 * `input_tokens_details.cached_tokens` (a Chat stream reports usage only with
 * `stream_options.include_usage`, in a last chunk with no choices).
 */
import {
  anthropicEvents,
  anthropicMessage,
  chatCompletion,
  type Part,
  response,
} from "../providers.ts";
import type { AnswerBlock } from "./counter.ts";

export interface AnthropicUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  output_tokens: number;
  service_tier: "standard";
}

export interface OpenAIUsage {
  prompt_tokens: number;
  cached_tokens: number;
  cache_write_tokens?: number;
  output_tokens: number;
}

function partsOf(content: readonly AnswerBlock[]): Part[] {
  return content.map((b): Part => {
    if (b.type === "tool_use")
      return {
        call: String(b.name),
        id: String(b.id),
        input: (b.input ?? {}) as Record<string, unknown>,
      };
    if (b.type === "thinking")
      return { thinking: String(b.thinking ?? ""), signature: String(b.signature ?? "") };
    return { text: String(b.text ?? "") };
  });
}

export function anthropicBody(
  id: string,
  model: string,
  content: readonly AnswerBlock[],
  usage: AnthropicUsage,
  stopReason?: string,
): Record<string, unknown> {
  const message = anthropicMessage(id, partsOf(content), { input: 0, output: 0 }, stopReason);
  return { ...message, model, usage };
}

export function anthropicStream(message: Record<string, unknown>): string[] {
  const usage = message.usage as AnthropicUsage;
  const start = {
    ...message,
    usage: { ...usage, output_tokens: Math.min(1, usage.output_tokens) },
  };
  return anthropicEvents(start, {
    input_tokens: usage.input_tokens,
    cache_creation_input_tokens: usage.cache_creation_input_tokens,
    cache_read_input_tokens: usage.cache_read_input_tokens,
    output_tokens: usage.output_tokens,
  });
}

/** A Chat Completions (`chat`) or Responses answer. */
export function openaiBody(
  api: "chat" | "responses",
  id: string,
  model: string,
  content: readonly AnswerBlock[],
  usage: OpenAIUsage,
  /** GPT-5.6 and later report their cache writes (`cache_write_tokens`) beside the reads. */
  writes = false,
): Record<string, unknown> {
  const build = api === "chat" ? chatCompletion : response;
  const body = build(id, partsOf(content), {
    input: usage.prompt_tokens,
    output: usage.output_tokens,
    cache_read: usage.cached_tokens,
  });
  if (writes) {
    const u = body.usage as Record<string, Record<string, unknown>>;
    const details = u[api === "chat" ? "prompt_tokens_details" : "input_tokens_details"];
    if (details !== undefined) details.cache_write_tokens = usage.cache_write_tokens ?? 0;
  }
  return { ...body, model };
}

/** The error body each API sends. */
export function errorBody(format: string, type: string, message: string): string {
  if (format === "anthropic") return JSON.stringify({ type: "error", error: { type, message } });
  return JSON.stringify({ error: { message, type, param: null, code: null } });
}

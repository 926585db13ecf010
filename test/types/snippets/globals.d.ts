/**
 * What the documentation's TypeScript snippets leave to their reader (a request text, the model's tool call,
 * the conversation so far), declared once with the official SDKs' types so the snippets type-check as written
 * (test/unit/snippets.test.ts). Only that check compiles this file: these names must not leak into the
 * project's own type check. `messages` and `tools` serve snippets for several APIs at once, hence the
 * intersections (each is assignable to every API's own type).
 */
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import type { Attachment } from "../../../src/extract/entry.ts";
import type { OffloadConfigLike } from "../../../src/lib.ts";
import type { OffloadStore } from "../../../src/store-kit.ts";
import type { Tool } from "../../../src/toolkit/entry.ts";

declare global {
  /** README "As a library": the provider request as JSON text. */
  const rawRequestText: string;
  /** The model's recall_tool_result (or a kit tool) call, as the Anthropic SDK returns it. */
  const toolUse: Anthropic.Messages.ToolUseBlock;
  const conversationId: string;
  const messages: Anthropic.Messages.MessageParam[] & OpenAI.Chat.ChatCompletionMessageParam[];
  const tools: Anthropic.Messages.ToolUnion[] &
    OpenAI.Chat.ChatCompletionTool[] &
    OpenAI.Responses.Tool[];
  const input: OpenAI.Responses.ResponseInput;
  /** docs/openai-formats.md: the Chat Completions request text, and what compact needs besides it. */
  const body: string;
  const config: OffloadConfigLike;
  const store: OffloadStore;
  const secret: string;
  const call: OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
  /** docs/attachments.md */
  const pdf: Attachment;
  const attachments: Attachment[];
  function sendNatively(attachment: Attachment): void;
  /** docs/measure.md: a mem_id from a stub. */
  const mem_id: string;
  /** docs/toolkit.md */
  const db: { search(query: string): { sku: string; name: string; price: number }[] };
  const searchProducts: Tool;
  const getProduct: Tool;
}

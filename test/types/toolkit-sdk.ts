/**
 * Type-level test, compiled by `npm run typecheck` (tsconfig.node.json), never run: the toolkit's rendered
 * declarations and result items must be accepted by the official SDKs' request types. A renamed or missing
 * field fails the assignments; a field the SDK does not know fails the `NoExtraKeys` checks (an assignment
 * from a typed value alone would let an extra key through).
 */
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { z } from "zod";
import type {
  AnthropicToolDefinition,
  AnthropicToolResult,
  OpenAIChatToolDefinition,
  OpenAIChatToolResult,
  OpenAIResponsesToolDefinition,
  OpenAIResponsesToolResult,
  ToolAnswer,
} from "../../src/toolkit/entry.ts";
import { definePagedTool, defineTool, toolResult } from "../../src/toolkit/entry.ts";

type NoExtraKeys<Ours, Theirs> =
  Exclude<keyof Ours, keyof Theirs> extends never
    ? true
    : { extra_keys: Exclude<keyof Ours, keyof Theirs> };
const ok = <T extends true>(value: T): T => value;

const tool = defineTool({
  name: "get_weather",
  description: "Current weather for a city.",
  input: z.object({ city: z.string() }),
  run: ({ city }) => ({ city, temp: 21 }),
});
const paged = definePagedTool({
  name: "list",
  description: "List.",
  input: z.object({}),
  rows: () => [1, 2, 3],
});

// The run's input is the schema's output type, and the page's rows keep their type.
const city: string = (await tool.parse({ city: "x" })).city;
const answer = await paged.call({});
const firstRow: number | undefined = answer.value?.rows[0];
void city;
void firstRow;

// Anthropic Messages API: tools[] and a tool_result block.
const anthropicTool: Anthropic.Messages.Tool = tool.definition("anthropic");
const anthropicDefault: Anthropic.Messages.ToolUnion = tool.definition();
const anthropicRequest: Anthropic.Messages.MessageCreateParamsNonStreaming = {
  model: "claude-sonnet-4-6",
  max_tokens: 1024,
  tools: [tool.definition("anthropic"), paged.definition("anthropic")],
  messages: [
    { role: "user", content: "weather in Lyon?" },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Lyon" } }],
    },
    {
      role: "user",
      content: [toolResult("anthropic", "toolu_1", await tool.call({ city: "Lyon" }))],
    },
  ],
};
const anthropicResult: Anthropic.Messages.ToolResultBlockParam = toolResult(
  "anthropic",
  "toolu_1",
  answer as ToolAnswer,
);
ok<NoExtraKeys<AnthropicToolDefinition, Anthropic.Messages.Tool>>(true);
ok<NoExtraKeys<AnthropicToolResult, Anthropic.Messages.ToolResultBlockParam>>(true);

// OpenAI Chat Completions: tools[] and a role "tool" message.
const chatTool: OpenAI.Chat.Completions.ChatCompletionFunctionTool = tool.definition("openai-chat");
const chatRequest: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = {
  model: "gpt-5.4",
  tools: [tool.definition("openai-chat"), paged.definition("openai-chat")],
  messages: [
    { role: "user", content: "weather?" },
    toolResult("openai-chat", "call_1", answer as ToolAnswer),
  ],
};
const chatMessage: OpenAI.Chat.Completions.ChatCompletionToolMessageParam = toolResult(
  "openai-chat",
  "call_1",
  answer as ToolAnswer,
);
ok<NoExtraKeys<OpenAIChatToolDefinition, OpenAI.Chat.Completions.ChatCompletionFunctionTool>>(true);
ok<NoExtraKeys<OpenAIChatToolDefinition["function"], OpenAI.FunctionDefinition>>(true);
ok<NoExtraKeys<OpenAIChatToolResult, OpenAI.Chat.Completions.ChatCompletionToolMessageParam>>(true);

// OpenAI Responses API: tools[] and a function_call_output input item.
const responsesTool: OpenAI.Responses.FunctionTool = tool.definition("openai-responses");
const responsesRequest: OpenAI.Responses.ResponseCreateParamsNonStreaming = {
  model: "gpt-5.4",
  tools: [tool.definition("openai-responses"), paged.definition("openai-responses")],
  input: [
    { role: "user", content: "weather?" },
    toolResult("openai-responses", "call_1", answer as ToolAnswer),
  ],
};
const responsesItem: OpenAI.Responses.ResponseInputItem.FunctionCallOutput = toolResult(
  "openai-responses",
  "call_1",
  answer as ToolAnswer,
);
ok<NoExtraKeys<OpenAIResponsesToolDefinition, OpenAI.Responses.FunctionTool>>(true);
ok<NoExtraKeys<OpenAIResponsesToolResult, OpenAI.Responses.ResponseInputItem.FunctionCallOutput>>(
  true,
);

// @ts-expect-error: a format that does not exist is a type error, not a silent Anthropic default.
tool.definition("gemini");

export const checked = [
  anthropicTool,
  anthropicDefault,
  anthropicRequest,
  anthropicResult,
  chatTool,
  chatRequest,
  chatMessage,
  responsesTool,
  responsesRequest,
  responsesItem,
];

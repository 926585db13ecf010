/**
 * Type-level test, compiled by `npm run typecheck` (tsconfig.node.json), never run: what the format adapters
 * add to a request must be what the official SDKs' request types accept. The recall tool's declaration per
 * format is assigned to the SDK's tool type (a renamed or missing field fails) and checked for keys the SDK
 * does not know. The other additions are result contents, which the adapters render as a string or as parts
 * of the request's own text type (`text` / `input_text`) carrying only `type`, `text` and the client's
 * marker: the parts below pin those shapes. The suite's OpenAI requests themselves are built with the SDK
 * types (test/support/formats.ts).
 */
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { type RecallToolDefinitions, recallToolDefinition } from "../../src/lib.ts";

type NoExtraKeys<Ours, Theirs> =
  Exclude<keyof Ours, keyof Theirs> extends never
    ? true
    : { extra_keys: Exclude<keyof Ours, keyof Theirs> };
const ok = <T extends true>(value: T): T => value;

const anthropicTool: Anthropic.Messages.Tool = recallToolDefinition("anthropic");
const anthropicDefault: Anthropic.Messages.ToolUnion = recallToolDefinition();
ok<NoExtraKeys<RecallToolDefinitions["anthropic"], Anthropic.Messages.Tool>>(true);

const chatTool: OpenAI.Chat.Completions.ChatCompletionFunctionTool = recallToolDefinition(
  "openai-chat",
  "window",
);
const chatUnion: OpenAI.Chat.Completions.ChatCompletionTool = recallToolDefinition("openai-chat");
ok<
  NoExtraKeys<
    RecallToolDefinitions["openai-chat"],
    OpenAI.Chat.Completions.ChatCompletionFunctionTool
  >
>(true);
ok<NoExtraKeys<RecallToolDefinitions["openai-chat"]["function"], OpenAI.FunctionDefinition>>(true);

const responsesTool: OpenAI.Responses.FunctionTool = recallToolDefinition(
  "openai-responses",
  "structural",
);
const responsesUnion: OpenAI.Responses.Tool = recallToolDefinition("openai-responses");
ok<NoExtraKeys<RecallToolDefinitions["openai-responses"], OpenAI.Responses.FunctionTool>>(true);

// A replaced result: the collapsed text part, with and without the client's marker.
type Marker = { mode: "explicit"; ttl?: "30m" | "12h" };
const chatPart: OpenAI.Chat.Completions.ChatCompletionContentPartText = {
  type: "text",
  text: "stub",
} satisfies { type: "text"; text: string };
const chatMarked: OpenAI.Chat.Completions.ChatCompletionToolMessageParam["content"] = [
  { type: "text", text: "stub", prompt_cache_breakpoint: { mode: "explicit" } satisfies Marker },
];
const responsesPart: OpenAI.Responses.ResponseFunctionCallOutputItem = {
  type: "input_text",
  text: "stub",
  prompt_cache_breakpoint: { mode: "explicit", ttl: "12h" } satisfies Marker,
};
const responsesOutput: OpenAI.Responses.ResponseInputItem.FunctionCallOutput["output"] = [
  responsesPart,
  { type: "input_image", image_url: "data:image/png;base64,AA==" },
];
const customOutput: OpenAI.Responses.ResponseCustomToolCallOutput["output"] = "stub";

// @ts-expect-error: a format that does not exist is a type error.
recallToolDefinition("gemini");

export const checked = [
  anthropicTool,
  anthropicDefault,
  chatTool,
  chatUnion,
  responsesTool,
  responsesUnion,
  chatPart,
  chatMarked,
  responsesPart,
  responsesOutput,
  customOutput,
];

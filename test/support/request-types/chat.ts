/**
 * One OpenAI Chat Completions request per documented message role, content part, assistant message field,
 * tool call type, tool type and top-level field, typed against the `openai` SDK: the mapped types fail to
 * compile when the SDK gains a member that has no case here.
 */
import type OpenAI from "openai";
import { BIG, casesOf, type FormatCases, fieldCases, type TypeCase } from "./shared.ts";

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type Params = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
type Tool = OpenAI.Chat.Completions.ChatCompletionTool;
type Part = OpenAI.Chat.Completions.ChatCompletionContentPart;
type Req = Omit<Params, "messages" | "tools"> & { messages: Message[]; tools: Tool[] };

function base(): Req {
  return {
    model: "gpt-4.1",
    tools: [
      { type: "function", function: { name: "dump", parameters: { type: "object" } } },
      { type: "function", function: { name: "status", parameters: { type: "object" } } },
    ],
    messages: [
      { role: "system", content: "You are a careful agent." },
      { role: "user", content: "Load the catalog." },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "t1", type: "function", function: { name: "dump", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "t1", content: BIG },
      {
        role: "assistant",
        content: "Checking.",
        tool_calls: [{ id: "t2", type: "function", function: { name: "status", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "t2", content: "ok" },
    ],
  };
}

/** After the large result, before the model's turn that settles it. */
const insert =
  (...messages: Message[]) =>
  (req: Req) =>
    req.messages.splice(4, 0, ...messages);

const ROLES: { [K in Message["role"]]: (req: Req) => void } = {
  developer: insert({
    role: "developer",
    content: [{ type: "text", text: "Be brief." }],
    name: "ops",
  }),
  system: insert({ role: "system", content: [{ type: "text", text: "Prices are in USD." }] }),
  user: insert({ role: "user", content: "And the cheapest?", name: "ana" }),
  assistant: insert({
    role: "assistant",
    content: [
      { type: "text", text: "Looking." },
      { type: "refusal", refusal: "Not that part." },
    ],
    refusal: null,
    name: "helper",
  }),
  tool: (req) => {
    const turn = req.messages[4] as OpenAI.Chat.Completions.ChatCompletionAssistantMessageParam;
    turn.tool_calls!.push({
      id: "t3",
      type: "custom",
      custom: { name: "exec", input: "text(1)" },
    });
    req.messages.push({
      role: "tool",
      tool_call_id: "t3",
      content: [{ type: "text", text: "1", prompt_cache_breakpoint: { mode: "explicit" } }],
    });
  },
  function: insert(
    { role: "assistant", content: null, function_call: { name: "status", arguments: "{}" } },
    { role: "function", name: "status", content: "ok" },
  ),
};

const PARTS: { [K in Part["type"]]: Part } = {
  text: { type: "text", text: "see the attachments" },
  image_url: { type: "image_url", image_url: { url: "https://example.com/a.png", detail: "low" } },
  input_audio: { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } },
  file: {
    type: "file",
    file: { filename: "a.pdf", file_data: "data:application/pdf;base64,JVBE" },
  },
};

/** Assistant message fields besides content and tool_calls. */
const ASSISTANT: Message[] = [
  { role: "assistant", audio: { id: "audio_1" } },
  { role: "assistant", content: null, refusal: "I cannot help with that." },
];

const TOOLS: { [K in Tool["type"]]: Tool } = {
  function: {
    type: "function",
    function: { name: "grep", description: "Search", parameters: { type: "object" }, strict: true },
  },
  custom: { type: "custom", custom: { name: "exec", format: { type: "text" } } },
};

/** Every top-level field, with a value the API takes (model, messages and tools are in the base). */
const FIELDS: { [K in Exclude<keyof Params, "model" | "messages" | "tools">]-?: unknown } = {
  audio: { voice: "alloy", format: "wav" },
  frequency_penalty: 0,
  function_call: "auto",
  functions: [{ name: "legacy", parameters: { type: "object" } }],
  logit_bias: { "50256": -100 },
  logprobs: false,
  max_completion_tokens: 4096,
  max_tokens: 4096,
  metadata: { run: "1" },
  modalities: ["text"],
  moderation: null,
  n: 1,
  parallel_tool_calls: false,
  prediction: { type: "content", content: "the catalog" },
  presence_penalty: 0,
  prompt_cache_key: "session-1",
  prompt_cache_options: { mode: "implicit" },
  prompt_cache_retention: "24h",
  reasoning_effort: "low",
  response_format: { type: "text" },
  safety_identifier: "user-1",
  seed: 7,
  service_tier: "auto",
  stop: ["END"],
  store: false,
  stream: false,
  stream_options: null,
  temperature: 1,
  tool_choice: "auto",
  top_logprobs: null,
  top_p: 1,
  user: "user-1",
  verbosity: "low",
  web_search_options: { search_context_size: "low" },
};

export const chatCases: FormatCases<Req> = {
  format: "openai-chat",
  base,
  cases: [
    ...casesOf("role", ROLES, (edit) => edit),
    ...casesOf<Req, Part>("user part", PARTS, (part) => insert({ role: "user", content: [part] })),
    ...ASSISTANT.map(
      (message, i): TypeCase<Req> => ({
        name: `assistant ${["audio", "refusal"][i]}`,
        edit: insert(message),
      }),
    ),
    ...casesOf<Req, Tool>("tool", TOOLS, (tool) => (req) => req.tools.splice(1, 0, tool)),
    ...fieldCases<Req>(FIELDS),
  ],
};

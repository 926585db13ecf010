/**
 * One request builder per provider format, so the same invariant cases run against every adapter
 * (test/unit/formats.test.ts). The OpenAI builders are typed with the official SDK's request types: the
 * requests the suite sends are ones the SDKs (and so the APIs) accept, and the suite checks that the
 * transform changes nothing in them but result contents and the appended recall tool.
 */
import type {
  LanguageModelV4FunctionTool,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
} from "@ai-sdk/provider";
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import type { Format } from "../../src/core/types.ts";
import type { Prompt } from "./corpus.ts";

type ChatParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type ResponsesParams = OpenAI.Responses.ResponseCreateParamsNonStreaming;
type ResponsesItem = OpenAI.Responses.ResponseInputItem;

export type Req = Record<string, any>;

/** A result part, format-neutral: text (optionally carrying the format's cache marker) or an image. */
export type Part = { type: "text"; text: string; marker?: boolean } | { type: "image" };

export interface Turn {
  /** The call's id. */
  id: string;
  name?: string;
  input?: Record<string, unknown>;
  result: string | Part[];
  /** Anthropic only (OpenAI has no error flag). */
  is_error?: boolean;
}

/** A step: one call, or several parallel calls in one assistant message. */
export type Step = Turn | Turn[];

export interface ConversationOptions {
  model?: string;
  /** A final assistant text: settles the last results too. */
  answered?: boolean;
  /** null: no tools member at all. */
  tools?: null;
  extra?: Req;
}

export interface Kit {
  format: Format;
  /** A priced model for which the suite's large results offload at the default config. */
  model: string;
  /** The member holding the conversation. */
  key: "messages" | "input" | "prompt";
  /** The text part's type and the name of the cache marker a part may carry. */
  textType: string;
  markerKey: string;
  /** Media parts are allowed in a tool result (Chat tool messages take text parts only). */
  media: boolean;
  conversation(steps: Step[], opts?: ConversationOptions): Req;
  /** `req` (a client's history or our output) plus one more call and its result. */
  addTurn(req: Req, step: Step): Req;
  /** Every tool result in order: its call id and content value. */
  results(req: Req): { id: string; content: unknown }[];
  toolNames(req: Req): string[];
  /** Shapes the adapter cannot read (the request goes out unchanged) and the path the note must name. */
  badShapes: [unknown, string][];
  /** A part the adapter cannot place (left as it is, the rest compacted) and the path the note must name. */
  unplaced: [unknown, string][];
  /** Pairing mistakes (a result for a call that is not answerable there, a call answered twice) and their paths. */
  badPairing(): [Req, string][];
  /** The same conversation in this format (corpus replay). */
  fromAnthropic(prompt: Prompt, model: string): Req;
}

const IMAGE_PNG = "iVBORw0KGgo=";
const TASK = "Do the task.";
const steps = (s: Step): Turn[] => (Array.isArray(s) ? s : [s]);

// ---------------------------------------------------------------------------------------------- Anthropic

function anthropicContent(
  result: string | Part[],
): string | Anthropic.Messages.ToolResultBlockParam["content"] {
  if (typeof result === "string") return result;
  return result.map((p): Anthropic.Messages.TextBlockParam | Anthropic.Messages.ImageBlockParam =>
    p.type === "image"
      ? { type: "image", source: { type: "base64", media_type: "image/png", data: IMAGE_PNG } }
      : {
          type: "text",
          text: p.text,
          ...(p.marker ? { cache_control: { type: "ephemeral" as const } } : {}),
        },
  );
}

function anthropicMessages(step: Step): Anthropic.Messages.MessageParam[] {
  const ts = steps(step);
  return [
    {
      role: "assistant",
      content: [
        { type: "text", text: `calling ${ts[0]!.name ?? "bash"}` },
        ...ts.map((t) => ({
          type: "tool_use" as const,
          id: t.id,
          name: t.name ?? "bash",
          input: t.input ?? { cmd: t.id },
        })),
      ],
    },
    {
      role: "user",
      content: ts.map((t) => ({
        type: "tool_result" as const,
        tool_use_id: t.id,
        content: anthropicContent(t.result),
        ...(t.is_error === undefined ? {} : { is_error: t.is_error }),
      })),
    },
  ];
}

export const anthropicKit: Kit = {
  format: "anthropic",
  model: "claude-opus-4-5",
  key: "messages",
  textType: "text",
  markerKey: "cache_control",
  media: true,
  conversation(all, opts = {}) {
    const messages: Anthropic.Messages.MessageParam[] = [
      { role: "user", content: TASK },
      ...all.flatMap(anthropicMessages),
    ];
    if (opts.answered)
      messages.push({ role: "assistant", content: [{ type: "text", text: "done" }] });
    const req: Anthropic.Messages.MessageCreateParamsNonStreaming = {
      model: opts.model ?? this.model,
      max_tokens: 1024,
      messages,
    };
    const tools: Anthropic.Messages.Tool[] = [
      {
        name: "bash",
        description: "run a command",
        input_schema: { type: "object", properties: { cmd: { type: "string" } } },
      },
    ];
    return {
      model: req.model,
      max_tokens: req.max_tokens,
      ...(opts.tools === null ? {} : { tools }),
      messages: req.messages,
      ...(opts.extra ?? {}),
    };
  },
  addTurn(req, step) {
    return { ...req, messages: [...req.messages, ...anthropicMessages(step)] };
  },
  results(req) {
    const out: { id: string; content: unknown }[] = [];
    for (const m of req.messages)
      if (Array.isArray(m.content))
        for (const b of m.content)
          if (b.type === "tool_result") out.push({ id: b.tool_use_id, content: b.content });
    return out;
  },
  toolNames: (req) => (req.tools ?? []).map((t: Req) => t.name),
  badShapes: [
    [[], "$"],
    [{ model: 5, messages: [] }, "model"],
    [{}, "$"],
    [{ messages: {} }, "messages"],
    [{ messages: [{ role: 5, content: "x" }] }, "messages[0].role"],
    [{ messages: [{ role: "user" }] }, "messages[0]"],
    [{ messages: [{ role: "user", content: [{ text: "no type" }] }] }, "messages[0].content[0]"],
    [{ tools: {}, messages: [] }, "tools"],
    [
      { messages: [{ role: "assistant", content: [{ type: "tool_result", tool_use_id: "a" }] }] },
      "messages[0].content[0]",
    ],
  ],
  unplaced: [
    [
      {
        messages: [
          { role: "user", content: [{ type: "tool_result", tool_use_id: "nope", content: "x" }] },
        ],
      },
      "messages[0].content[0].tool_use_id",
    ],
    [{ messages: [], cache_control: { type: "ephemeral", ttl: "2h" } }, "cache_control.ttl"],
    [{ messages: [{ role: "critic", content: "x" }] }, "messages[0].role"],
  ],
  badPairing() {
    const earlier = this.conversation([
      { id: "a", result: "x" },
      { id: "b", result: "y" },
    ]);
    earlier.messages[4].content[0].tool_use_id = "a";
    const twice = this.conversation([{ id: "a", result: "x" }]);
    twice.messages[2].content.push({ type: "tool_result", tool_use_id: "a", content: "again" });
    return [
      [earlier, "messages[4].content[0].tool_use_id"],
      [twice, "messages[2].content[1].tool_use_id"],
    ];
  },
  fromAnthropic: (prompt, model) => ({ ...prompt, model }),
};

// ------------------------------------------------------------------------------------ OpenAI Chat Completions

function chatContent(
  result: string | Part[],
): OpenAI.Chat.Completions.ChatCompletionToolMessageParam["content"] {
  if (typeof result === "string") return result;
  return result.map((p) => {
    if (p.type === "image") throw new Error("Chat tool messages take text parts only");
    return {
      type: "text" as const,
      text: p.text,
      ...(p.marker ? { prompt_cache_breakpoint: { mode: "explicit" as const } } : {}),
    };
  });
}

function chatMessages(step: Step): ChatMessage[] {
  const ts = steps(step);
  return [
    {
      role: "assistant",
      content: `calling ${ts[0]!.name ?? "bash"}`,
      tool_calls: ts.map((t) => ({
        id: t.id,
        type: "function" as const,
        function: { name: t.name ?? "bash", arguments: JSON.stringify(t.input ?? { cmd: t.id }) },
      })),
    },
    ...ts.map(
      (t): ChatMessage => ({ role: "tool", tool_call_id: t.id, content: chatContent(t.result) }),
    ),
  ];
}

const chatCall = (id: string): ChatMessage => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id, type: "function", function: { name: "bash", arguments: "{}" } }],
});

export const chatKit: Kit = {
  format: "openai-chat",
  model: "gpt-4.1",
  key: "messages",
  textType: "text",
  markerKey: "prompt_cache_breakpoint",
  media: false,
  conversation(all, opts = {}) {
    const messages: ChatMessage[] = [{ role: "user", content: TASK }, ...all.flatMap(chatMessages)];
    if (opts.answered) messages.push({ role: "assistant", content: "done" });
    const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
      {
        type: "function",
        function: {
          name: "bash",
          description: "run a command",
          parameters: { type: "object", properties: { cmd: { type: "string" } } },
        },
      },
    ];
    const req: ChatParams = {
      model: opts.model ?? this.model,
      ...(opts.tools === null ? {} : { tools }),
      messages,
    };
    return { ...req, ...(opts.extra ?? {}) };
  },
  addTurn(req, step) {
    return { ...req, messages: [...req.messages, ...chatMessages(step)] };
  },
  results(req) {
    return (req.messages as Req[])
      .filter((m) => m.role === "tool")
      .map((m) => ({ id: m.tool_call_id, content: m.content }));
  },
  toolNames: (req) => (req.tools ?? []).map((t: Req) => t.function?.name ?? t.custom?.name),
  badShapes: [
    [[], "$"],
    [{ model: 5, messages: [] }, "model"],
    [{}, "$"],
    [{ messages: {} }, "messages"],
    [{ messages: [{ role: "user" }] }, "messages[0]"],
    [{ messages: [{ role: "user", content: 5 }] }, "messages[0].content"],
    [{ messages: [{ role: "assistant", content: 5 }] }, "messages[0].content"],
    [{ messages: [chatCall("a"), { role: "tool", content: "x" }] }, "messages[1]"],
    [{ messages: [chatCall("a"), { role: "tool", tool_call_id: "a" }] }, "messages[1]"],
    [
      { messages: [chatCall("a"), { role: "tool", tool_call_id: "a", content: {} }] },
      "messages[1].content",
    ],
    [
      {
        messages: [
          chatCall("a"),
          { role: "tool", tool_call_id: "a", content: [{ text: "no type" }] },
        ],
      },
      "messages[1].content[0]",
    ],
    [
      {
        messages: [chatCall("a"), { role: "tool", tool_call_id: "a", content: [{ type: "text" }] }],
      },
      "messages[1].content[0].text",
    ],
    [{ messages: [{ role: "assistant", tool_calls: {} }] }, "messages[0].tool_calls"],
    [
      {
        messages: [
          { role: "assistant", tool_calls: [{ type: "function", function: { name: "x" } }] },
        ],
      },
      "messages[0].tool_calls[0]",
    ],
    [
      { messages: [{ role: "assistant", tool_calls: [{ id: "a", type: "function" }] }] },
      "messages[0].tool_calls[0].function",
    ],
    [{ tools: {}, messages: [] }, "tools"],
    [{ tools: [{ type: "function" }], messages: [] }, "tools[0].function"],
    [{ tools: [{ type: "function", function: {} }], messages: [] }, "tools[0].function"],
    [{ messages: [], prompt_cache_options: { mode: 5 } }, "prompt_cache_options.mode"],
    [
      {
        messages: [
          { role: "user", content: [{ type: "text", text: "x", prompt_cache_breakpoint: "yes" }] },
        ],
      },
      "messages[0].content[0].prompt_cache_breakpoint",
    ],
  ],
  unplaced: [
    [{ messages: [{ role: "robot", content: "x" }] }, "messages[0].role"],
    [
      { messages: [{ role: "tool", tool_call_id: "nope", content: "x" }] },
      "messages[0].tool_call_id",
    ],
  ],
  badPairing() {
    const earlier = this.conversation([
      { id: "a", result: "x" },
      { id: "b", result: "y" },
    ]);
    earlier.messages[4].tool_call_id = "a";
    const twice = this.conversation([{ id: "a", result: "x" }]);
    twice.messages.push({ role: "tool", tool_call_id: "a", content: "again" });
    // The API wants a call's answers right after it: a user message in between breaks the pairing.
    const late = this.conversation([]);
    late.messages.push(
      chatCall("a"),
      { role: "user", content: "wait" },
      { role: "tool", tool_call_id: "a", content: "x" },
    );
    return [
      [earlier, "messages[4].tool_call_id"],
      [twice, "messages[3].tool_call_id"],
      [late, "messages[3].tool_call_id"],
    ];
  },
  fromAnthropic(prompt, model) {
    const messages: ChatMessage[] = [{ role: "system", content: prompt.system }];
    for (const m of prompt.messages) {
      if (typeof m.content === "string") {
        messages.push({ role: m.role, content: m.content });
        continue;
      }
      const blocks = m.content as Req[];
      const text = blocks
        .filter((b) => b.type === "text")
        .map((b) => b.text as string)
        .join("\n");
      if (m.role === "assistant") {
        const calls = blocks
          .filter((b) => b.type === "tool_use")
          .map((b) => ({
            id: b.id as string,
            type: "function" as const,
            function: { name: b.name as string, arguments: JSON.stringify(b.input) },
          }));
        messages.push({
          role: "assistant",
          content: text === "" ? null : text,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        });
      } else {
        for (const b of blocks)
          if (b.type === "tool_result")
            messages.push({
              role: "tool",
              tool_call_id: b.tool_use_id,
              content: anthropicResultText(b.content),
            });
        if (text !== "") messages.push({ role: "user", content: text });
      }
    }
    const tools = (prompt.tools as Req[]).map(
      (t): OpenAI.Chat.Completions.ChatCompletionTool => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.input_schema },
      }),
    );
    const req: ChatParams = { model, max_completion_tokens: prompt.max_tokens, tools, messages };
    return req as Req;
  },
};

function anthropicResultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b: Req) => b.type === "text")
    .map((b: Req) => b.text)
    .join("\n");
}

// ------------------------------------------------------------------------------------------ OpenAI Responses

function responsesOutput(
  result: string | Part[],
): OpenAI.Responses.ResponseInputItem.FunctionCallOutput["output"] {
  if (typeof result === "string") return result;
  return result.map(
    (p): OpenAI.Responses.ResponseFunctionCallOutputItem =>
      p.type === "image"
        ? { type: "input_image", image_url: `data:image/png;base64,${IMAGE_PNG}`, detail: "auto" }
        : {
            type: "input_text",
            text: p.text,
            ...(p.marker ? { prompt_cache_breakpoint: { mode: "explicit" as const } } : {}),
          },
  );
}

function responsesItems(step: Step): ResponsesItem[] {
  const ts = steps(step);
  return [
    { role: "assistant", content: `calling ${ts[0]!.name ?? "bash"}` },
    ...ts.map(
      (t): ResponsesItem => ({
        type: "function_call",
        call_id: t.id,
        name: t.name ?? "bash",
        arguments: JSON.stringify(t.input ?? { cmd: t.id }),
      }),
    ),
    ...ts.map(
      (t): ResponsesItem => ({
        type: "function_call_output",
        call_id: t.id,
        output: responsesOutput(t.result),
      }),
    ),
  ];
}

export const responsesKit: Kit = {
  format: "openai-responses",
  model: "gpt-4.1",
  key: "input",
  textType: "input_text",
  markerKey: "prompt_cache_breakpoint",
  media: true,
  conversation(all, opts = {}) {
    const input: ResponsesItem[] = [
      { role: "user", content: TASK },
      ...all.flatMap(responsesItems),
    ];
    if (opts.answered) input.push({ role: "assistant", content: "done" });
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: "function",
        name: "bash",
        description: "run a command",
        parameters: { type: "object", properties: { cmd: { type: "string" } } },
        strict: false,
      },
    ];
    const req: ResponsesParams = {
      model: opts.model ?? this.model,
      ...(opts.tools === null ? {} : { tools }),
      input,
    };
    return { ...req, ...(opts.extra ?? {}) };
  },
  addTurn(req, step) {
    return { ...req, input: [...req.input, ...responsesItems(step)] };
  },
  results(req) {
    return (req.input as Req[])
      .filter((i) => i.type === "function_call_output" || i.type === "custom_tool_call_output")
      .map((i) => ({ id: i.call_id, content: i.output }));
  },
  toolNames: (req) => (req.tools ?? []).map((t: Req) => t.name ?? t.type),
  badShapes: [
    [[], "$"],
    [{ model: 5, input: [] }, "model"],
    [{ input: 5 }, "input"],
    [{ instructions: 5, input: [] }, "instructions"],
    [{ previous_response_id: 5, input: [] }, "previous_response_id"],
    [{ input: [5] }, "input[0]"],
    [{ input: [{ content: "x" }] }, "input[0]"],
    [{ input: [{ type: 5 }] }, "input[0].type"],
    [{ input: [{ role: "user" }] }, "input[0]"],
    [{ input: [{ role: "user", content: 5 }] }, "input[0].content"],
    [{ input: [{ type: "function_call", name: "bash", arguments: "{}" }] }, "input[0]"],
    [{ input: [{ type: "function_call", call_id: "a", arguments: "{}" }] }, "input[0]"],
    [
      {
        input: [
          { type: "function_call", call_id: "a", name: "bash", arguments: "{}" },
          { type: "function_call_output", call_id: "a" },
        ],
      },
      "input[1]",
    ],
    [
      {
        input: [
          { type: "function_call", call_id: "a", name: "bash", arguments: "{}" },
          { type: "function_call_output", call_id: "a", output: 5 },
        ],
      },
      "input[1].output",
    ],
    [
      {
        input: [
          { type: "function_call", call_id: "a", name: "bash", arguments: "{}" },
          { type: "function_call_output", call_id: "a", output: [{ type: "input_text" }] },
        ],
      },
      "input[1].output[0].text",
    ],
    [{ tools: {}, input: [] }, "tools"],
    [{ tools: [{ name: "x" }], input: [] }, "tools[0]"],
    [{ input: [], prompt_cache_options: "on" }, "prompt_cache_options"],
    [
      {
        input: [
          {
            role: "user",
            content: [{ type: "input_text", text: "x", prompt_cache_breakpoint: 1 }],
          },
        ],
      },
      "input[0].content[0].prompt_cache_breakpoint",
    ],
  ],
  unplaced: [
    [{ input: [{ role: "robot", content: "x" }] }, "input[0].role"],
    [
      { input: [{ type: "function_call_output", call_id: "nope", output: "x" }] },
      "input[0].call_id",
    ],
  ],
  badPairing() {
    // An output must follow its call (anywhere earlier in input), and answer it once.
    const before = this.conversation([]);
    before.input.push(
      { type: "function_call_output", call_id: "a", output: "x" },
      { type: "function_call", call_id: "a", name: "bash", arguments: "{}" },
    );
    const twice = this.conversation([{ id: "a", result: "x" }]);
    twice.input.push({ type: "function_call_output", call_id: "a", output: "again" });
    // A custom tool's output answers a custom_tool_call, not a function_call of the same id.
    const kind = this.conversation([]);
    kind.input.push(
      { type: "function_call", call_id: "a", name: "bash", arguments: "{}" },
      { type: "custom_tool_call_output", call_id: "a", output: "x" },
    );
    return [
      [before, "input[1].call_id"],
      [twice, "input[4].call_id"],
      [kind, "input[2].call_id"],
    ];
  },
  fromAnthropic(prompt, model) {
    const input: ResponsesItem[] = [];
    for (const m of prompt.messages) {
      if (typeof m.content === "string") {
        input.push({ role: m.role, content: m.content });
        continue;
      }
      const blocks = m.content as Req[];
      const text = blocks
        .filter((b) => b.type === "text")
        .map((b) => b.text as string)
        .join("\n");
      if (m.role === "assistant") {
        if (text !== "") input.push({ role: "assistant", content: text });
        for (const b of blocks)
          if (b.type === "tool_use")
            input.push({
              type: "function_call",
              call_id: b.id,
              name: b.name,
              arguments: JSON.stringify(b.input),
            });
      } else {
        for (const b of blocks)
          if (b.type === "tool_result")
            input.push({
              type: "function_call_output",
              call_id: b.tool_use_id,
              output: anthropicResultText(b.content),
            });
        if (text !== "") input.push({ role: "user", content: text });
      }
    }
    const tools = (prompt.tools as Req[]).map(
      (t): OpenAI.Responses.Tool => ({
        type: "function",
        name: t.name,
        description: t.description,
        parameters: t.input_schema,
        strict: false,
      }),
    );
    const req: ResponsesParams = {
      model,
      instructions: prompt.system,
      max_output_tokens: prompt.max_tokens,
      tools,
      input,
      store: false,
    };
    return req as Req;
  },
};

// ------------------------------------------------------------------------- The AI SDK's prompt (middleware)

type AiContent = Extract<LanguageModelV4ToolResultOutput, { type: "content" }>["value"];

function aiOutput(t: Turn): LanguageModelV4ToolResultOutput {
  if (typeof t.result === "string")
    return { type: t.is_error ? "error-text" : "text", value: t.result };
  return {
    type: "content",
    value: t.result.map((p): AiContent[number] =>
      p.type === "image"
        ? { type: "file", mediaType: "image/png", data: { type: "data", data: IMAGE_PNG } }
        : {
            type: "text",
            text: p.text,
            ...(p.marker
              ? { providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } } }
              : {}),
          },
    ),
  };
}

function aiMessages(step: Step): LanguageModelV4Message[] {
  const ts = steps(step);
  return [
    {
      role: "assistant",
      content: [
        { type: "text", text: `calling ${ts[0]!.name ?? "bash"}` },
        ...ts.map((t) => ({
          type: "tool-call" as const,
          toolCallId: t.id,
          toolName: t.name ?? "bash",
          input: t.input ?? { cmd: t.id },
        })),
      ],
    },
    {
      role: "tool",
      content: ts.map((t) => ({
        type: "tool-result" as const,
        toolCallId: t.id,
        toolName: t.name ?? "bash",
        output: aiOutput(t),
      })),
    },
  ];
}

const aiCall = (id: string): LanguageModelV4Message => ({
  role: "assistant",
  content: [{ type: "tool-call", toolCallId: id, toolName: "bash", input: {} }],
});
const aiResult = (id: string, output: unknown): Req => ({
  role: "tool",
  content: [{ type: "tool-result", toolCallId: id, toolName: "bash", output }],
});

/** What the AI SDK middleware compacts: the call's model, provider, tools and prompt, as JSON. */
export const aiSdkKit: Kit = {
  format: "ai-sdk",
  model: "claude-opus-4-5",
  key: "prompt",
  textType: "text",
  markerKey: "providerOptions",
  media: true,
  conversation(all, opts = {}) {
    const prompt: LanguageModelV4Prompt = [
      { role: "user", content: [{ type: "text", text: TASK }] },
      ...all.flatMap(aiMessages),
    ];
    if (opts.answered)
      prompt.push({ role: "assistant", content: [{ type: "text", text: "done" }] });
    const tools: LanguageModelV4FunctionTool[] = [
      {
        type: "function",
        name: "bash",
        description: "run a command",
        inputSchema: { type: "object", properties: { cmd: { type: "string" } } },
      },
    ];
    return {
      model: opts.model ?? this.model,
      provider: "anthropic.messages",
      ...(opts.tools === null ? {} : { tools }),
      prompt,
      ...(opts.extra ?? {}),
    };
  },
  addTurn(req, step) {
    return { ...req, prompt: [...req.prompt, ...aiMessages(step)] };
  },
  results(req) {
    const out: { id: string; content: unknown }[] = [];
    for (const m of req.prompt)
      if (m.role === "tool")
        for (const p of m.content)
          if (p.type === "tool-result") out.push({ id: p.toolCallId, content: p.output.value });
    return out;
  },
  toolNames: (req) => (req.tools ?? []).map((t: Req) => t.name),
  badShapes: [
    [[], "$"],
    [{ model: 5, prompt: [] }, "model"],
    [{ provider: 5, prompt: [] }, "provider"],
    [{}, "$"],
    [{ prompt: {} }, "prompt"],
    [{ prompt: [5] }, "prompt[0]"],
    [{ prompt: [{ role: 5, content: "x" }] }, "prompt[0].role"],
    [{ prompt: [{ role: "user" }] }, "prompt[0]"],
    [{ prompt: [{ role: "user", content: "x" }] }, "prompt[0].content"],
    [{ prompt: [{ role: "system", content: [] }] }, "prompt[0].content"],
    [{ prompt: [{ role: "user", content: [{ text: "no type" }] }] }, "prompt[0].content[0]"],
    [
      { prompt: [{ role: "assistant", content: [{ type: "tool-call", toolName: "x" }] }] },
      "prompt[0].content[0]",
    ],
    [
      {
        prompt: [
          aiCall("a"),
          { role: "tool", content: [{ type: "tool-result", toolCallId: "a", toolName: "bash" }] },
        ],
      },
      "prompt[1].content[0]",
    ],
    [{ prompt: [aiCall("a"), aiResult("a", "x")] }, "prompt[1].content[0].output"],
    [
      { prompt: [aiCall("a"), aiResult("a", { type: "blob" })] },
      "prompt[1].content[0].output.type",
    ],
    [{ prompt: [aiCall("a"), aiResult("a", { type: "text" })] }, "prompt[1].content[0].output"],
    [
      { prompt: [aiCall("a"), aiResult("a", { type: "text", value: 5 })] },
      "prompt[1].content[0].output.value",
    ],
    [
      { prompt: [aiCall("a"), aiResult("a", { type: "content", value: "x" })] },
      "prompt[1].content[0].output.value",
    ],
    [
      { prompt: [aiCall("a"), aiResult("a", { type: "content", value: [{ type: "text" }] })] },
      "prompt[1].content[0].output.value[0].text",
    ],
    [{ tools: {}, prompt: [] }, "tools"],
    [{ tools: [{ type: "function" }], prompt: [] }, "tools[0]"],
  ],
  unplaced: [
    [{ prompt: [{ role: "robot", content: [] }] }, "prompt[0].role"],
    [
      { prompt: [aiResult("nope", { type: "text", value: "x" })] },
      "prompt[0].content[0].toolCallId",
    ],
  ],
  badPairing() {
    // A result answers a call of an earlier assistant message, once.
    const before = this.conversation([]);
    before.prompt.push(aiResult("a", { type: "text", value: "x" }), aiCall("a"));
    const twice = this.conversation([{ id: "a", result: "x" }]);
    twice.prompt.push(aiResult("a", { type: "text", value: "again" }));
    return [
      [before, "prompt[1].content[0].toolCallId"],
      [twice, "prompt[3].content[0].toolCallId"],
    ];
  },
  fromAnthropic(prompt, model) {
    const messages: LanguageModelV4Prompt = [{ role: "system", content: prompt.system as string }];
    const names = new Map<string, string>();
    for (const m of prompt.messages) {
      if (typeof m.content === "string") {
        messages.push({ role: m.role, content: [{ type: "text", text: m.content }] });
        continue;
      }
      const blocks = m.content as Req[];
      const texts = blocks
        .filter((b) => b.type === "text")
        .map((b) => ({ type: "text" as const, text: b.text as string }));
      if (m.role === "assistant") {
        for (const b of blocks) if (b.type === "tool_use") names.set(b.id, b.name);
        messages.push({
          role: "assistant",
          content: [
            ...texts,
            ...blocks
              .filter((b) => b.type === "tool_use")
              .map((b) => ({
                type: "tool-call" as const,
                toolCallId: b.id as string,
                toolName: b.name as string,
                input: b.input,
              })),
          ],
        });
      } else {
        const results = blocks.filter((b) => b.type === "tool_result");
        if (results.length > 0)
          messages.push({
            role: "tool",
            content: results.map((b) => ({
              type: "tool-result" as const,
              toolCallId: b.tool_use_id as string,
              toolName: names.get(b.tool_use_id) ?? "",
              output: { type: "text" as const, value: anthropicResultText(b.content) },
            })),
          });
        if (texts.length > 0) messages.push({ role: "user", content: texts });
      }
    }
    const tools = (prompt.tools as Req[]).map(
      (t): LanguageModelV4FunctionTool => ({
        type: "function",
        name: t.name,
        description: t.description,
        inputSchema: t.input_schema,
      }),
    );
    return { model, provider: "anthropic.messages", tools, prompt: messages };
  },
};

export const KITS: readonly Kit[] = [anthropicKit, chatKit, responsesKit, aiSdkKit];

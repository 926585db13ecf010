/**
 * Provider answers as the three APIs send them, for the proxy tests: a non-streamed answer, and the same
 * answer as its event stream (event by event, text and arguments split over several deltas, as the APIs do).
 * Shared by the workerd tests (fetch mock) and the real-client tests (fake provider on 127.0.0.1).
 */

export type Part =
  | { text: string }
  | { call: string; id: string; input: Record<string, unknown> }
  | { thinking: string; signature: string }
  | { reasoning: string };

export interface Usage {
  input: number;
  output: number;
  cache_read?: number;
  cache_write?: number;
}

const RECALL = "recall_tool_result";

function halves(s: string): string[] {
  if (s.length < 2) return [s];
  const at = Math.ceil(s.length / 2);
  return [s.slice(0, at), s.slice(at)];
}

function sse(event: string | null, data: unknown): string {
  return `${event === null ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

// ---------------------------------------------------------------- Anthropic Messages

export function anthropicMessage(
  id: string,
  parts: Part[],
  usage: Usage,
  stop?: string,
): Record<string, unknown> {
  const content = parts.map((p) => {
    if ("text" in p) return { type: "text", text: p.text };
    if ("call" in p) return { type: "tool_use", id: p.id, name: p.call, input: p.input };
    if ("thinking" in p) return { type: "thinking", thinking: p.thinking, signature: p.signature };
    return { type: "text", text: p.reasoning };
  });
  const stop_reason = stop ?? (parts.some((p) => "call" in p) ? "tool_use" : "end_turn");
  return {
    id,
    type: "message",
    role: "assistant",
    model: "claude-sonnet-4-6",
    content,
    stop_reason,
    stop_sequence: null,
    usage: {
      input_tokens: usage.input,
      cache_creation_input_tokens: usage.cache_write ?? 0,
      cache_read_input_tokens: usage.cache_read ?? 0,
      output_tokens: usage.output,
    },
  };
}

/**
 * `deltaUsage` is what the closing message_delta carries: by default the output tokens alone (the API's older
 * streams); the current API repeats the input side there, its counts cumulative.
 */
export function anthropicEvents(
  message: Record<string, unknown>,
  deltaUsage?: Record<string, unknown>,
): string[] {
  const usage = message.usage as Record<string, number>;
  const out = [
    sse("message_start", {
      type: "message_start",
      message: {
        ...message,
        content: [],
        stop_reason: null,
        usage: { ...usage, output_tokens: 1 },
      },
    }),
    sse("ping", { type: "ping" }),
  ];
  (message.content as Record<string, unknown>[]).forEach((block, index) => {
    if (block.type === "text") {
      out.push(
        sse("content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "text", text: "" },
        }),
      );
      for (const t of halves(String(block.text)))
        out.push(
          sse("content_block_delta", {
            type: "content_block_delta",
            index,
            delta: { type: "text_delta", text: t },
          }),
        );
    } else if (block.type === "tool_use") {
      out.push(
        sse("content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
        }),
      );
      for (const t of halves(JSON.stringify(block.input)))
        out.push(
          sse("content_block_delta", {
            type: "content_block_delta",
            index,
            delta: { type: "input_json_delta", partial_json: t },
          }),
        );
    } else if (block.type === "thinking") {
      out.push(
        sse("content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "thinking", thinking: "", signature: "" },
        }),
      );
      out.push(
        sse("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "thinking_delta", thinking: block.thinking },
        }),
      );
      out.push(
        sse("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "signature_delta", signature: block.signature },
        }),
      );
    }
    out.push(sse("content_block_stop", { type: "content_block_stop", index }));
  });
  out.push(
    sse("message_delta", {
      type: "message_delta",
      delta: { stop_reason: message.stop_reason, stop_sequence: null },
      usage: deltaUsage ?? { output_tokens: usage.output_tokens },
    }),
  );
  out.push(sse("message_stop", { type: "message_stop" }));
  return out;
}

// ---------------------------------------------------------------- OpenAI Chat Completions

export function chatCompletion(
  id: string,
  parts: Part[],
  usage: Usage,
  finish?: string,
): Record<string, unknown> {
  const text = parts.flatMap((p) => ("text" in p ? [p.text] : [])).join("");
  const calls = parts.flatMap((p) =>
    "call" in p
      ? [
          {
            id: p.id,
            type: "function",
            function: { name: p.call, arguments: JSON.stringify(p.input) },
          },
        ]
      : [],
  );
  return {
    id,
    object: "chat.completion",
    created: 1_800_000_000,
    model: "gpt-4.1",
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: text === "" ? null : text,
          refusal: null,
          annotations: [],
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        logprobs: null,
        finish_reason: finish ?? (calls.length > 0 ? "tool_calls" : "stop"),
      },
    ],
    usage: {
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.output,
      prompt_tokens_details: { cached_tokens: usage.cache_read ?? 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
    service_tier: "default",
    system_fingerprint: "fp_test",
  };
}

export function chatEvents(completion: Record<string, unknown>, includeUsage = true): string[] {
  const base = {
    id: completion.id,
    object: "chat.completion.chunk",
    created: completion.created,
    model: completion.model,
    service_tier: "default",
    system_fingerprint: "fp_test",
  };
  const u = includeUsage ? { usage: null } : {};
  const choice = (completion.choices as Record<string, unknown>[])[0]!;
  const message = choice.message as Record<string, unknown>;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    sse(null, {
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...u,
    });
  const out = [chunk({ role: "assistant", content: "", refusal: null })];
  if (typeof message.content === "string")
    for (const t of halves(message.content)) out.push(chunk({ content: t }));
  ((message.tool_calls as Record<string, unknown>[] | undefined) ?? []).forEach((call, index) => {
    const fn = call.function as Record<string, string>;
    out.push(
      chunk({
        tool_calls: [
          { index, id: call.id, type: "function", function: { name: fn.name, arguments: "" } },
        ],
      }),
    );
    for (const t of halves(fn.arguments!))
      out.push(chunk({ tool_calls: [{ index, function: { arguments: t } }] }));
  });
  out.push(chunk({}, choice.finish_reason as string));
  if (includeUsage) out.push(sse(null, { ...base, choices: [], usage: completion.usage }));
  out.push("data: [DONE]\n\n");
  return out;
}

// ---------------------------------------------------------------- OpenAI Responses

export function response(
  id: string,
  parts: Part[],
  usage: Usage,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  let n = 0;
  const output = parts.map((p) => {
    n++;
    if ("text" in p)
      return {
        id: `msg_${id}_${n}`,
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: p.text, annotations: [], logprobs: [] }],
      };
    if ("call" in p)
      return {
        id: `fc_${id}_${n}`,
        type: "function_call",
        status: "completed",
        arguments: JSON.stringify(p.input),
        call_id: p.id,
        name: p.call,
      };
    if ("reasoning" in p)
      return {
        id: `rs_${id}_${n}`,
        type: "reasoning",
        summary: [{ type: "summary_text", text: p.reasoning }],
      };
    return { id: `rs_${id}_${n}`, type: "reasoning", summary: [] };
  });
  return {
    id,
    object: "response",
    created_at: 1_800_000_000,
    status: "completed",
    model: "gpt-4.1",
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    store: true,
    tools: [],
    usage: {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: usage.cache_read ?? 0 },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input + usage.output,
    },
    ...extra,
  };
}

export function responseEvents(resp: Record<string, unknown>): string[] {
  let seq = 0;
  const ev = (type: string, fields: Record<string, unknown>) =>
    sse(type, { type, ...fields, sequence_number: seq++ });
  const start = { ...resp, status: "in_progress", output: [], usage: null };
  const out = [
    ev("response.created", { response: start }),
    ev("response.in_progress", { response: start }),
  ];
  (resp.output as Record<string, unknown>[]).forEach((item, output_index) => {
    if (item.type === "message") {
      const text = ((item.content as Record<string, unknown>[])[0]!.text as string) ?? "";
      const part = { type: "output_text", text: "", annotations: [], logprobs: [] };
      out.push(
        ev("response.output_item.added", {
          output_index,
          item: { ...item, status: "in_progress", content: [] },
        }),
      );
      out.push(
        ev("response.content_part.added", {
          item_id: item.id,
          output_index,
          content_index: 0,
          part,
        }),
      );
      for (const t of halves(text))
        out.push(
          ev("response.output_text.delta", {
            item_id: item.id,
            output_index,
            content_index: 0,
            delta: t,
            logprobs: [],
          }),
        );
      out.push(
        ev("response.output_text.done", {
          item_id: item.id,
          output_index,
          content_index: 0,
          text,
          logprobs: [],
        }),
      );
      out.push(
        ev("response.content_part.done", {
          item_id: item.id,
          output_index,
          content_index: 0,
          part: { ...part, text },
        }),
      );
    } else if (item.type === "function_call") {
      out.push(
        ev("response.output_item.added", {
          output_index,
          item: { ...item, status: "in_progress", arguments: "" },
        }),
      );
      for (const t of halves(String(item.arguments)))
        out.push(
          ev("response.function_call_arguments.delta", {
            item_id: item.id,
            output_index,
            delta: t,
          }),
        );
      out.push(
        ev("response.function_call_arguments.done", {
          item_id: item.id,
          output_index,
          arguments: item.arguments,
        }),
      );
    } else {
      out.push(ev("response.output_item.added", { output_index, item: { ...item, summary: [] } }));
    }
    out.push(ev("response.output_item.done", { output_index, item }));
  });
  out.push(ev("response.completed", { response: resp }));
  return out;
}

// ---------------------------------------------------------------- Conversations with one large settled result

/** ~75K chars of JSON: over the 60K offload threshold, and addressable with json_path. */
export function catalog(items = 1500): string {
  return JSON.stringify({
    items: Array.from({ length: items }, (_, i) => ({ id: i, name: `item-${i}`, price: i * 1.5 })),
  });
}

export const RECALL_NAME = RECALL;

export const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

/**
 * Two Anthropic turns: the catalog (toolu_1, settled by the next call, so it gets offloaded) and a small
 * result of `tool` (toolu_2, the hot one).
 */
export function catalogMessages(tool = "status"): Record<string, unknown>[] {
  return [
    { role: "user", content: "Load the catalog and tell me the most expensive item." },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_1", name: "dump", input: {} }],
    },
    {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_1", content: catalog() }],
    },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_2", name: tool, input: {} }],
    },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_2", content: "ok" }] },
  ];
}

/** An Anthropic request whose first result (toolu_1, the catalog) is settled, so it gets offloaded. */
export function anthropicRequest(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: "claude-opus-4-6",
    max_tokens: 1024,
    tools: [
      {
        name: "status",
        description: "Check the status",
        input_schema: { type: "object", properties: {} },
      },
    ],
    messages: catalogMessages(),
    ...extra,
  };
}

export function chatRequest(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: "gpt-4.1",
    tools: [
      {
        type: "function",
        function: {
          name: "status",
          description: "Check the status",
          parameters: { type: "object", properties: {} },
        },
      },
    ],
    messages: [
      { role: "user", content: "Load the catalog and tell me the most expensive item." },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "dump", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: catalog() },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_2", type: "function", function: { name: "status", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "call_2", content: "ok" },
    ],
    ...extra,
  };
}

export function responsesRequest(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: "gpt-4.1",
    store: false,
    tools: [
      {
        type: "function",
        name: "status",
        description: "Check the status",
        parameters: { type: "object", properties: {} },
        strict: false,
      },
    ],
    input: [
      { role: "user", content: "Load the catalog and tell me the most expensive item." },
      { type: "function_call", call_id: "call_1", name: "dump", arguments: "{}" },
      { type: "function_call_output", call_id: "call_1", output: catalog() },
      { type: "function_call", call_id: "call_2", name: "status", arguments: "{}" },
      { type: "function_call_output", call_id: "call_2", output: "ok" },
    ],
    ...extra,
  };
}

export function memIdIn(text: string): string {
  const m = /trm_[0-9a-f]{24}/.exec(text);
  if (m === null) throw new Error("no mem_id in the text");
  return m[0];
}

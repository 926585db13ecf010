/**
 * `defineTool`: one zod schema gives a tool's declaration for each provider and a runner that
 * validates what the model sent. Declarations are rendered once and handed out as fresh copies, so
 * their bytes never change within a process (tools head the cache hierarchy) and a caller adding
 * `cache_control` to one cannot leak into the next request. The runner never throws: a model's
 * mistake, or a failing `run`, becomes an `is_error` answer the model can act on.
 */
import { z } from "zod";
import type { ToolFormat } from "../core/recall-tool.ts";
import { isOffloadError, OffloadError, zodError } from "../errors.ts";
import { serializeValue } from "./preview.ts";

/** JSON Schema of a tool's input: always an object (all three providers require it). */
export interface ToolInputSchema {
  type: "object";
  properties?: Record<string, unknown>;
  required?: string[];
  [keyword: string]: unknown;
}

export interface AnthropicToolDefinition {
  name: string;
  description: string;
  input_schema: ToolInputSchema;
}

export interface OpenAIChatToolDefinition {
  type: "function";
  function: { name: string; description: string; parameters: ToolInputSchema };
}

export interface OpenAIResponsesToolDefinition {
  type: "function";
  name: string;
  description: string;
  parameters: ToolInputSchema;
  strict: boolean;
}

export interface ToolDefinitions {
  anthropic: AnthropicToolDefinition;
  "openai-chat": OpenAIChatToolDefinition;
  "openai-responses": OpenAIResponsesToolDefinition;
}

export interface ToolSpec<S extends z.ZodObject, R> {
  /** 1–64 of A–Z a–z 0–9 _ - (the rule both providers enforce). */
  name: string;
  description: string;
  input: S;
  run: (input: z.output<S>) => R | Promise<R>;
}

export interface ToolAnswer<R = unknown> {
  /**
   * What goes back to the model: a string result as is, anything else as compact JSON; or the error
   * text.
   */
  content: string;
  is_error: boolean;
  /** The run's return value (absent on error). */
  value?: R;
  /**
   * What was thrown, for your logs. Its message reaches `content` only for an OffloadError that is
   * not "internal".
   */
  error?: unknown;
}

export interface Tool<S extends z.ZodObject = z.ZodObject, R = unknown> {
  readonly name: string;
  readonly description: string;
  readonly input: S;
  /** The author's function, unwrapped: no validation, throws what it throws. */
  readonly run: (input: z.output<S>) => R | Promise<R>;
  /**
   * The declaration for a provider's `tools` array (a fresh object each call, the same bytes every
   * time).
   */
  definition<F extends ToolFormat = "anthropic">(format?: F): ToolDefinitions[F];
  /**
   * Validate raw arguments: Anthropic's `input` object or OpenAI's `arguments` JSON string
   * (undefined, null and "" mean no arguments). Throws an `invalid_argument` OffloadError whose
   * message names every bad field and whose `path` is the first.
   */
  parse(args: unknown): Promise<z.output<S>>;
  /** Validate, run, and answer; never throws. */
  call(args: unknown): Promise<ToolAnswer<Awaited<R>>>;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A tool from a name, a description, a zod input schema and a function: its declaration for each
 * provider format, the validation of the model's arguments (every bad field named), and an answer
 * that never throws.
 *
 * @example
 * const weather = defineTool({
 *   name: "weather",
 *   description: "Current weather in a city.",
 *   input: z.object({ city: z.string() }),
 *   run: async ({ city }) => fetchWeather(city),
 * });
 * const answer = await weather.call(toolUse.input); // { content, is_error, value? }
 */
export function defineTool<S extends z.ZodObject, R>(spec: ToolSpec<S, R>): Tool<S, R> {
  const { name, description, input, run } = spec;
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new OffloadError(
      "invalid_argument",
      `tool name must be 1–64 of A–Z a–z 0–9 _ -, got ${JSON.stringify(name)}`,
      { path: "name" },
    );
  }
  if (typeof description !== "string")
    throw new OffloadError("invalid_argument", "description must be a string", {
      path: "description",
    });
  if (!(input instanceof z.ZodObject))
    throw new OffloadError("invalid_argument", "input must be a zod object schema (z.object)", {
      path: "input",
    });
  if (typeof run !== "function")
    throw new OffloadError("invalid_argument", "run must be a function", { path: "run" });

  const schema = inputJsonSchema(input);
  const rendered: { [F in ToolFormat]: string } = {
    anthropic: JSON.stringify({ name, description, input_schema: schema }),
    "openai-chat": JSON.stringify({
      type: "function",
      function: { name, description, parameters: schema },
    }),
    // Not strict: OpenAI's strict mode requires every field required and no defaults, which paging
    // arguments are not.
    "openai-responses": JSON.stringify({
      type: "function",
      name,
      description,
      parameters: schema,
      strict: false,
    }),
  };

  const parse = async (args: unknown): Promise<z.output<S>> => {
    let value = args;
    if (typeof value === "string") {
      try {
        value = value.trim() === "" ? {} : JSON.parse(value);
      } catch {
        throw new OffloadError("invalid_argument", "the arguments are not valid JSON", {
          path: "arguments",
        });
      }
    }
    const result = await input.safeParseAsync(value ?? {});
    if (result.success) return result.data;
    throw zodError("invalid_argument", result.error, { input: value ?? {} });
  };

  return Object.freeze({
    name,
    description,
    input,
    run,
    definition<F extends ToolFormat = "anthropic">(
      format: F = "anthropic" as F,
    ): ToolDefinitions[F] {
      const text = Object.hasOwn(rendered, format) ? rendered[format] : undefined;
      if (text === undefined)
        throw new OffloadError(
          "invalid_argument",
          `unknown tool format ${JSON.stringify(format)}`,
          { path: "format" },
        );
      return JSON.parse(text) as ToolDefinitions[F];
    },
    parse,
    async call(args: unknown): Promise<ToolAnswer<Awaited<R>>> {
      let parsed: z.output<S>;
      try {
        parsed = await parse(args);
      } catch (error) {
        const detail = isOffloadError(error) ? error.message : "the arguments could not be read";
        return {
          content: `Invalid arguments for ${name}: ${detail}. Fix them and call ${name} again.`,
          is_error: true,
          error,
        };
      }
      try {
        const value = await run(parsed);
        return { content: serializeValue(value), is_error: false, value };
      } catch (error) {
        // An OffloadError's message is written for the caller (paginate's own errors are among
        // them); anything else, or an "internal" one, may carry internals (SQL, paths, secrets):
        // the model gets a generic line, the log gets `error`.
        const content =
          isOffloadError(error) && error.type !== "internal"
            ? `${name} failed: ${error.message}`
            : `${name} failed with an internal error. Try again later, or carry on without it.`;
        return { content, is_error: true, error };
      }
    },
  });
}

/**
 * zod 4's JSON Schema of what the model may send (`io: "input"`: a field with a default is
 * optional), without `$schema` (providers do not want it) and without the ±2^53 bounds zod writes
 * for every `z.int()` (bytes the model reads on every turn, saying nothing).
 */
function inputJsonSchema(input: z.ZodObject): ToolInputSchema {
  let schema: Record<string, unknown>;
  try {
    schema = z.toJSONSchema(input, { io: "input" }) as Record<string, unknown>;
  } catch (cause) {
    throw new OffloadError(
      "invalid_argument",
      `input schema has no JSON Schema form: ${cause instanceof Error ? cause.message : String(cause)}`,
      { path: "input", cause },
    );
  }
  delete schema.$schema;
  return stripSafeIntBounds(schema) as ToolInputSchema;
}

function stripSafeIntBounds(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(stripSafeIntBounds);
  if (node === null || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (
      (k === "maximum" && v === Number.MAX_SAFE_INTEGER) ||
      (k === "minimum" && v === Number.MIN_SAFE_INTEGER)
    )
      continue;
    out[k] = stripSafeIntBounds(v);
  }
  return out;
}

export interface AnthropicToolResult {
  type: "tool_result";
  tool_use_id: string;
  content: string;
  is_error?: true;
}
export interface OpenAIChatToolResult {
  role: "tool";
  tool_call_id: string;
  content: string;
}
export interface OpenAIResponsesToolResult {
  type: "function_call_output";
  call_id: string;
  output: string;
}

/**
 * The tool's answer as the provider's result item for the call `id`. OpenAI has no error flag: the
 * text says it.
 */
export function toolResult(
  format: "anthropic",
  id: string,
  answer: ToolAnswer,
): AnthropicToolResult;
export function toolResult(
  format: "openai-chat",
  id: string,
  answer: ToolAnswer,
): OpenAIChatToolResult;
export function toolResult(
  format: "openai-responses",
  id: string,
  answer: ToolAnswer,
): OpenAIResponsesToolResult;
export function toolResult(
  format: ToolFormat,
  id: string,
  answer: ToolAnswer,
): AnthropicToolResult | OpenAIChatToolResult | OpenAIResponsesToolResult {
  switch (format) {
    case "anthropic":
      return {
        type: "tool_result",
        tool_use_id: id,
        content: answer.content,
        ...(answer.is_error ? { is_error: true } : {}),
      };
    case "openai-chat":
      return { role: "tool", tool_call_id: id, content: answer.content };
    case "openai-responses":
      return { type: "function_call_output", call_id: id, output: answer.content };
  }
}

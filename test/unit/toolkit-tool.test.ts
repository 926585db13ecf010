import { describe, expect, it } from "vitest";
import { z } from "zod";
import { recallToolDefinition } from "../../src/lib.ts";
import { definePagedTool, defineTool, OffloadError, toolResult } from "../../src/toolkit/entry.ts";

const weather = defineTool({
  name: "get_weather",
  description: "Current weather for a city.",
  input: z.object({
    city: z.string().min(1).describe("City name."),
    days: z.int().min(1).max(7).default(1),
    units: z.enum(["c", "f"]).optional(),
  }),
  run: ({ city, days, units }) => ({ city, days, units: units ?? "c", temp: 21 }),
});

const schema = {
  type: "object",
  properties: {
    city: { type: "string", minLength: 1, description: "City name." },
    days: { default: 1, type: "integer", minimum: 1, maximum: 7 },
    units: { type: "string", enum: ["c", "f"] },
  },
  required: ["city"],
};

function thrown(fn: () => unknown): OffloadError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(OffloadError);
    return error as OffloadError;
  }
  throw new Error("expected a throw");
}

describe("defineTool: declarations", () => {
  it("renders Anthropic, OpenAI chat and OpenAI Responses declarations from the zod schema", () => {
    expect(weather.definition("anthropic")).toEqual({
      name: "get_weather",
      description: "Current weather for a city.",
      input_schema: schema,
    });
    expect(weather.definition()).toEqual(weather.definition("anthropic"));
    expect(weather.definition("openai-chat")).toEqual({
      type: "function",
      function: {
        name: "get_weather",
        description: "Current weather for a city.",
        parameters: schema,
      },
    });
    expect(weather.definition("openai-responses")).toEqual({
      type: "function",
      name: "get_weather",
      description: "Current weather for a city.",
      parameters: schema,
      strict: false,
    });
  });

  it("uses the recall tool's key order in every format", () => {
    for (const format of ["anthropic", "openai-chat", "openai-responses"] as const) {
      expect(Object.keys(weather.definition(format))).toEqual(
        Object.keys(recallToolDefinition(format)),
      );
    }
    expect(Object.keys(weather.definition("openai-chat").function)).toEqual([
      "name",
      "description",
      "parameters",
    ]);
  });

  it("leaves out $schema and zod's implicit ±2^53 integer bounds, keeps explicit ones", () => {
    const text = JSON.stringify(weather.definition("anthropic"));
    expect(text).not.toContain("$schema");
    expect(text).not.toContain(String(Number.MAX_SAFE_INTEGER));
    const big = defineTool({
      name: "t",
      description: "",
      input: z.object({ n: z.int().max(5).min(-3) }),
      run: () => 1,
    });
    expect(big.definition().input_schema.properties).toEqual({
      n: { type: "integer", minimum: -3, maximum: 5 },
    });
  });

  it("hands out a fresh object with the same bytes on every call", () => {
    const first = weather.definition("anthropic") as unknown as Record<string, unknown>;
    const bytes = JSON.stringify(first);
    first.cache_control = { type: "ephemeral" };
    (first.input_schema as { required: string[] }).required.push("days");
    expect(JSON.stringify(weather.definition("anthropic"))).toBe(bytes);
  });

  it("renders a strict object with additionalProperties false, nested objects and arrays", () => {
    const tool = defineTool({
      name: "filter",
      description: "d",
      input: z.strictObject({ filters: z.object({ tags: z.array(z.string()) }) }),
      run: () => null,
    });
    expect(tool.definition().input_schema).toEqual({
      type: "object",
      properties: {
        filters: {
          type: "object",
          properties: { tags: { type: "array", items: { type: "string" } } },
          required: ["tags"],
        },
      },
      required: ["filters"],
      additionalProperties: false,
    });
  });

  it("rejects a bad name, a non-object schema, a missing run and a schema JSON Schema cannot express", () => {
    const input = z.object({});
    expect(
      thrown(() => defineTool({ name: "has space", description: "", input, run: () => 1 })).path,
    ).toBe("name");
    expect(
      thrown(() => defineTool({ name: "x".repeat(65), description: "", input, run: () => 1 })).path,
    ).toBe("name");
    expect(
      thrown(() =>
        defineTool({ name: "ok", description: "", input: z.string() as never, run: () => 1 }),
      ).path,
    ).toBe("input");
    expect(
      thrown(() => defineTool({ name: "ok", description: "", input, run: undefined as never }))
        .path,
    ).toBe("run");
    expect(
      thrown(() => defineTool({ name: "ok", description: 3 as never, input, run: () => 1 })).path,
    ).toBe("description");
    const error = thrown(() =>
      defineTool({
        name: "ok",
        description: "",
        input: z.object({ when: z.date() }),
        run: () => 1,
      }),
    );
    expect(error.path).toBe("input");
    expect(error.message).toContain("JSON Schema");
    expect(thrown(() => weather.definition("gemini" as never)).path).toBe("format");
    expect(thrown(() => weather.definition("toString" as never)).path).toBe("format");
  });
});

describe("defineTool: the validating runner", () => {
  it("runs with parsed input (defaults applied) and answers with compact JSON", async () => {
    const answer = await weather.call({ city: "Lyon" });
    expect(answer).toEqual({
      content: '{"city":"Lyon","days":1,"units":"c","temp":21}',
      is_error: false,
      value: { city: "Lyon", days: 1, units: "c", temp: 21 },
    });
  });

  it("accepts OpenAI's arguments as a JSON string, and empty or null ones as no arguments", async () => {
    expect((await weather.call('{"city":"Oslo","days":3}')).value).toMatchObject({
      city: "Oslo",
      days: 3,
    });
    const none = defineTool({
      name: "now",
      description: "",
      input: z.object({}),
      run: () => "12:00",
    });
    expect(await none.call("")).toEqual({ content: "12:00", is_error: false, value: "12:00" });
    expect((await none.call(undefined)).is_error).toBe(false);
    expect((await none.call(null)).is_error).toBe(false);
  });

  it("answers bad JSON with an is_error naming the arguments", async () => {
    const answer = await weather.call('{"city": "Oslo"');
    expect(answer.is_error).toBe(true);
    expect(answer.content).toBe(
      "Invalid arguments for get_weather: the arguments are not valid JSON. Fix them and call get_weather again.",
    );
  });

  it("names a missing field, a wrong type and an out-of-range value", async () => {
    const answer = await weather.call({ days: 9, units: "k" });
    expect(answer.is_error).toBe(true);
    expect(answer.content).toMatch(
      /^Invalid arguments for get_weather: city: required \(string\); days: Too big: expected number to be <=7; units: /,
    );
    expect(answer.content).toContain("call get_weather again");
    expect(answer.error).toBeInstanceOf(OffloadError);
    expect((answer.error as OffloadError).path).toBe("city");
    const wrong = await weather.call({ city: 42 });
    expect(wrong.content).toContain("city: Invalid input: expected string, received number");
    const fractional = await weather.call({ city: "x", days: 1.5 });
    expect(fractional.content).toContain("days: Invalid input: expected int, received number");
  });

  it("names nested fields, array items and unknown fields of a strict schema", async () => {
    const tool = defineTool({
      name: "filter",
      description: "d",
      input: z.strictObject({
        filters: z.object({ tags: z.array(z.string()) }),
        "odd key": z.number().optional(),
      }),
      run: () => null,
    });
    const answer = await tool.call({
      filters: { tags: ["a", 2] },
      "odd key": "x",
      extra: 1,
      more: 2,
    });
    expect(answer.content).toContain(
      "filters.tags[1]: Invalid input: expected string, received number",
    );
    expect(answer.content).toContain(
      '["odd key"]: Invalid input: expected number, received string',
    );
    expect(answer.content).toContain('extra: unknown fields "extra", "more"');
  });

  it("answers arguments that are not an object at all", async () => {
    for (const args of [3, "[1,2]", '"text"', [1], true]) {
      const answer = await weather.call(args);
      expect(answer.is_error).toBe(true);
      expect(answer.content).toContain("expected object");
    }
  });

  it("lists at most 8 issues and counts the rest", async () => {
    const shape = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`f${i}`, z.string()]));
    const tool = defineTool({
      name: "many",
      description: "",
      input: z.object(shape),
      run: () => 1,
    });
    const answer = await tool.call({});
    expect(answer.content.match(/: required/g)).toHaveLength(8);
    expect(answer.content).toContain("and 4 more");
  });

  it("runs async refinements", async () => {
    const tool = defineTool({
      name: "async_check",
      description: "",
      input: z.object({ code: z.string().refine(async (v) => v === "ok", "must be ok") }),
      run: ({ code }) => code,
    });
    expect((await tool.call({ code: "ok" })).content).toBe("ok");
    expect((await tool.call({ code: "no" })).content).toContain("code: must be ok");
  });

  it("a run that throws an OffloadError answers its message (written for the caller)", async () => {
    const tool = defineTool({
      name: "lookup",
      description: "",
      input: z.object({ id: z.int() }),
      run: ({ id }) => {
        throw new OffloadError("not_found", `no item ${id}`);
      },
    });
    const answer = await tool.call({ id: 4 });
    expect(answer).toMatchObject({ content: "lookup failed: no item 4", is_error: true });
    expect(answer.error).toBeInstanceOf(OffloadError);
  });

  it("a run that throws anything else answers a generic line, keeping the error for the log", async () => {
    const boom = new Error("password=hunter2 at db.internal:5432");
    for (const thrownValue of [
      boom,
      "a string",
      new OffloadError("internal", "stack of db.internal"),
    ]) {
      const tool = defineTool({
        name: "fragile",
        description: "",
        input: z.object({}),
        run: async () => {
          throw thrownValue;
        },
      });
      const answer = await tool.call({});
      expect(answer.is_error).toBe(true);
      expect(answer.content).toBe(
        "fragile failed with an internal error. Try again later, or carry on without it.",
      );
      expect(answer.content).not.toContain("db.internal");
      expect(answer.error).toBe(thrownValue);
    }
  });

  it("a result JSON cannot hold is an error answer too, not an exception", async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const tool = defineTool({
      name: "loop",
      description: "",
      input: z.object({}),
      run: () => circular,
    });
    const answer = await tool.call({});
    expect(answer.is_error).toBe(true);
    expect(answer.content).toContain("loop failed: value cannot be serialized as JSON");
  });

  it("parse throws a typed error naming the first field; run is the author's own function", async () => {
    await expect(weather.parse({ city: "" })).rejects.toMatchObject({
      type: "invalid_argument",
      path: "city",
    });
    expect(await weather.parse({ city: "Rome" })).toEqual({ city: "Rome", days: 1 });
    expect(weather.run({ city: "Rome", days: 2 })).toEqual({
      city: "Rome",
      days: 2,
      units: "c",
      temp: 21,
    });
  });
});

describe("toolResult", () => {
  it("renders the answer as each provider's result item", async () => {
    const ok = await weather.call({ city: "Lyon" });
    const bad = await weather.call({});
    expect(toolResult("anthropic", "toolu_1", ok)).toEqual({
      type: "tool_result",
      tool_use_id: "toolu_1",
      content: ok.content,
    });
    expect(toolResult("anthropic", "toolu_1", bad)).toEqual({
      type: "tool_result",
      tool_use_id: "toolu_1",
      content: bad.content,
      is_error: true,
    });
    expect(toolResult("openai-chat", "call_1", bad)).toEqual({
      role: "tool",
      tool_call_id: "call_1",
      content: bad.content,
    });
    expect(toolResult("openai-responses", "call_1", ok)).toEqual({
      type: "function_call_output",
      call_id: "call_1",
      output: ok.content,
    });
  });
});

describe("definePagedTool", () => {
  const items = Array.from({ length: 250 }, (_, i) => ({ id: i, even: i % 2 === 0 }));
  const list = definePagedTool({
    name: "list_items",
    description: "List items.",
    input: z.object({ even: z.boolean().optional() }),
    max_limit: 50,
    rows: ({ even }) => items.filter((x) => even === undefined || x.even === even),
  });

  it("adds offset and limit to the schema, with the cap in the description", () => {
    const def = list.definition("anthropic");
    expect(def.description).toBe(
      "List items. Returns one page as {total, offset, returned, rows, next_offset}; call again with offset=next_offset for more (next_offset is null on the last page).",
    );
    expect(def.input_schema.properties).toEqual({
      even: { type: "boolean" },
      offset: {
        default: 0,
        description: "Row offset for pagination: pass next_offset from the previous page.",
        type: "integer",
        minimum: 0,
      },
      limit: {
        default: 20,
        description:
          "Max rows to return (default 20, at most 50: larger values are capped; 0 returns only the total).",
        type: "integer",
        minimum: 0,
      },
    });
    expect(def.input_schema.required).toBeUndefined();
  });

  it("answers a page with the total and the cursor, capping the limit", async () => {
    const first = await list.call({});
    expect(first.value).toMatchObject({ total: 250, offset: 0, returned: 20, next_offset: 20 });
    const capped = await list.call({ limit: 10_000, offset: 200 });
    expect(capped.value).toMatchObject({
      total: 250,
      offset: 200,
      returned: 50,
      next_offset: null,
    });
    const filtered = await list.call({ even: true, offset: 120 });
    expect(filtered.value).toMatchObject({
      total: 125,
      offset: 120,
      returned: 5,
      next_offset: null,
    });
    const past = await list.call({ offset: 9999 });
    expect(past.value).toEqual({
      total: 250,
      offset: 9999,
      returned: 0,
      rows: [],
      next_offset: null,
    });
  });

  it("answers bad paging arguments naming the field", async () => {
    for (const [args, field] of [
      [{ offset: -1 }, "offset"],
      [{ offset: 2.5 }, "offset"],
      [{ limit: "20" }, "limit"],
      [{ limit: Number.NaN }, "limit"],
    ] as const) {
      const answer = await list.call(args);
      expect(answer.is_error).toBe(true);
      expect(answer.content).toContain(`${field}: `);
    }
  });

  it("passes the capped page to rows, and a database page with its total is not sliced again", async () => {
    const calls: unknown[] = [];
    const db = definePagedTool({
      name: "db_rows",
      description: "d",
      input: z.object({}),
      max_limit: 30,
      rows: (_args, page) => {
        calls.push(page);
        return { rows: items.slice(page.offset, page.offset + page.limit), total: items.length };
      },
    });
    const answer = await db.call({ offset: 100, limit: 500 });
    expect(calls).toEqual([{ offset: 100, limit: 30 }]);
    expect(answer.value).toMatchObject({ total: 250, offset: 100, returned: 30, next_offset: 130 });
    expect((answer.value as { rows: { id: number }[] }).rows[0]).toEqual({ id: 100, even: true });
  });

  it("a rows function returning the wrong shape is the author's bug: a generic error answer", async () => {
    const broken = definePagedTool({
      name: "broken",
      description: "d",
      input: z.object({}),
      rows: () => ({ items: [] }) as never,
    });
    const answer = await broken.call({});
    expect(answer.is_error).toBe(true);
    expect(answer.content).toBe(
      "broken failed with an internal error. Try again later, or carry on without it.",
    );
    expect((answer.error as OffloadError).message).toContain(
      "rows() must return an array or {rows, total}",
    );
  });

  it("rejects an input that already has offset or limit, and limits that contradict", () => {
    const rows = () => [];
    expect(
      thrown(() =>
        definePagedTool({ name: "x", description: "", input: z.object({ offset: z.int() }), rows }),
      ).path,
    ).toBe("input.offset");
    expect(
      thrown(() =>
        definePagedTool({ name: "x", description: "", input: z.object({ limit: z.int() }), rows }),
      ).path,
    ).toBe("input.limit");
    expect(
      thrown(() =>
        definePagedTool({
          name: "x",
          description: "",
          input: z.object({}),
          rows,
          default_limit: 60,
          max_limit: 50,
        }),
      ).path,
    ).toBe("default_limit");
    expect(
      thrown(() =>
        definePagedTool({ name: "x", description: "", input: z.object({}), rows, max_limit: 0 }),
      ).path,
    ).toBe("max_limit");
    const small = definePagedTool({
      name: "x",
      description: "",
      input: z.object({}),
      rows,
      max_limit: 5,
    });
    expect(small.definition().input_schema.properties?.limit).toMatchObject({ default: 5 });
  });
});

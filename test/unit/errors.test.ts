// One error path: OffloadError's wire shape, the one path format, and the one translation of zod's errors that
// config, extraction options, the HTTP layer and the toolkit all use (every issue kept, not only the first).
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseConfigPatch } from "../../src/config.ts";
import { formatPath, OffloadError, zodError } from "../../src/errors.ts";
import { resolveExtractOptions } from "../../src/extract/options.ts";
import { validate } from "../../src/http/errors.ts";
import { defineTool } from "../../src/toolkit/tool.ts";

function thrown(run: () => unknown): OffloadError {
  try {
    run();
  } catch (e) {
    if (e instanceof OffloadError) return e;
    throw e;
  }
  throw new Error("nothing was thrown");
}

describe("formatPath", () => {
  it("writes identifiers with dots, indexes in brackets, odd keys quoted", () => {
    expect(formatPath(["messages", 3, "content", 1, "tool_use_id"])).toBe(
      "messages[3].content[1].tool_use_id",
    );
    expect(formatPath(["headers", "x-key", 0])).toBe('headers["x-key"][0]');
    expect(formatPath([0, "a"])).toBe("[0].a");
  });

  it("prefixes the root the value came from; the empty path is the root, or $", () => {
    expect(formatPath(["tool_result_recall_mode"], "x-offload-config")).toBe(
      "x-offload-config.tool_result_recall_mode",
    );
    expect(formatPath([1], "config")).toBe("config[1]");
    expect(formatPath([], "config")).toBe("config");
    expect(formatPath([])).toBe("$");
  });
});

describe("OffloadError on the wire", () => {
  it("is {error:{type,message,path?}}, with issues only when there are several", () => {
    const one = new OffloadError("invalid_request", "a: bad", {
      path: "a",
      issues: [{ code: "custom", path: "a", message: "bad" }],
    });
    expect(one.toJSON()).toEqual({
      error: { type: "invalid_request", message: "a: bad", path: "a" },
    });
    const two = new OffloadError("invalid_request", "a: bad; b: worse", {
      path: "a",
      issues: [
        { code: "custom", path: "a", message: "bad" },
        { code: "custom", path: "b", message: "worse" },
      ],
    });
    expect(two.toJSON().error.issues).toEqual([
      { code: "custom", path: "a", message: "bad" },
      { code: "custom", path: "b", message: "worse" },
    ]);
    expect(new OffloadError("internal", "internal error").toJSON()).toEqual({
      error: { type: "internal", message: "internal error" },
    });
  });
});

describe("zodError", () => {
  const Schema = z.strictObject({
    limit: z.int().min(1),
    tags: z.array(z.string()),
    nested: z.object({ "odd key": z.boolean() }).optional(),
  });

  it("keeps every issue with its code and formatted path; the first names `path`", () => {
    const input = { limit: 0, tags: ["a", 2], nested: { "odd key": "no" }, extra: 1 };
    const err = zodError("invalid_request", Schema.safeParse(input).error!, { root: "body" });
    expect(err.type).toBe("invalid_request");
    expect(err.issues.map((i) => [i.code, i.path])).toEqual([
      ["too_small", "body.limit"],
      ["invalid_type", "body.tags[1]"],
      ["invalid_type", 'body.nested["odd key"]'],
      ["unrecognized_keys", "body.extra"],
    ]);
    expect(err.path).toBe("body.limit");
    expect(err.message).toContain('body.extra: unknown field "extra"');
    expect(err.message.split("; ")).toHaveLength(4);
  });

  it("says `required` for a missing field when it is given the input, and labels the message", () => {
    const err = zodError("invalid_argument", Schema.safeParse({ tags: [] }).error!, {
      input: { tags: [] },
      label: "options",
    });
    expect(err.message).toBe("options: limit: required (number)");
    expect(err.issues).toEqual([
      { code: "invalid_type", path: "limit", message: "required (number)" },
    ]);
  });

  it("names at most 8 issues in the message and counts the rest; `issues` keeps them all", () => {
    const Many = z.object(
      Object.fromEntries([...Array(10).keys()].map((i) => [`f${i}`, z.string()])),
    );
    const err = zodError("invalid_argument", Many.safeParse({}).error!);
    expect(err.issues).toHaveLength(10);
    expect(err.message).toMatch(/; and 2 more$/);
  });

  it("gives no path for a problem with the whole value", () => {
    const err = zodError("invalid_request", z.string().safeParse(1).error!);
    expect(err.path).toBeUndefined();
    expect(err.toJSON().error).not.toHaveProperty("path");
  });
});

describe("every zod validation goes through zodError", () => {
  it("config: invalid_config, paths under the layer's name, all issues", () => {
    const err = thrown(() =>
      parseConfigPatch(
        { tool_result_compaction_keep_last_n: -1, tool_result_recall_mode: "nope", bogus: 1 },
        "x-offload-config",
      ),
    );
    expect(err.type).toBe("invalid_config");
    expect(err.issues.map((i) => i.path)).toEqual([
      "x-offload-config.tool_result_compaction_keep_last_n",
      "x-offload-config.tool_result_recall_mode",
      "x-offload-config.bogus",
    ]);
    expect(err.toJSON().error.issues).toHaveLength(3);
  });

  it("extraction options: invalid_argument labelled `extract options`", () => {
    const err = thrown(() => resolveExtractOptions({ max_pages: 0, max_chars: -1 }));
    expect(err.type).toBe("invalid_argument");
    expect(err.message).toMatch(/^extract options: max_pages: .+; max_chars: /);
    expect(err.path).toBe("max_pages");
    expect(err.issues).toHaveLength(2);
  });

  it("the HTTP layer: invalid_request under the value's origin", () => {
    const err = thrown(() =>
      validate(z.strictObject({ limit: z.int() }), { limit: "x", other: 1 }, "query"),
    );
    expect(err.type).toBe("invalid_request");
    expect(err.issues.map((i) => i.path)).toEqual(["query.limit", "query.other"]);
  });

  it("the toolkit: invalid_argument naming every bad argument", async () => {
    const tool = defineTool({
      name: "t",
      description: "",
      input: z.object({ a: z.int(), b: z.string() }),
      run: () => 1,
    });
    const err = (await tool.parse({ a: "1" }).then(
      () => null,
      (e: unknown) => e,
    )) as OffloadError;
    expect(err.type).toBe("invalid_argument");
    expect(err.message).toBe(
      "a: Invalid input: expected number, received string; b: required (string)",
    );
    expect(err.issues.map((i) => i.path)).toEqual(["a", "b"]);
  });
});

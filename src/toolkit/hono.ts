/**
 * Tool endpoints for a Worker (or any Hono runtime), kept out of the main entry so the core never imports
 * Hono: `import { toolRoutes } from "edge-offload/hono"`.
 *
 *   GET  /tools                          declarations (`?format=anthropic|openai-chat|openai-responses`)
 *   GET  /tools/:name?offset=&limit=&…   run with query arguments, coerced by the tool's zod schema
 *   POST /tools/:name                    run with a JSON object body
 *
 * A paged tool (`definePagedTool`) answers with `paginate`'s page. Errors use the project's one shape,
 * `{"error":{"type","message","path?"}}`: a bad argument is a 400 naming the field, an unknown tool a 404, a
 * failing tool a 500 that says nothing of its internals.
 */
import { Hono } from "hono";
import type { z } from "zod";
import type { ToolFormat } from "../core/recall-tool.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import { serializeValue } from "./preview.ts";
import type { Tool } from "./tool.ts";

export interface ToolRoutesOptions {
  /** Largest POST body accepted, in bytes (default 1 MiB). */
  max_body_bytes?: number;
}

const FORMATS: readonly ToolFormat[] = ["anthropic", "openai-chat", "openai-responses"];
const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

// Tools of different schemas and results in one list; each is checked by its own schema.
// biome-ignore lint/suspicious/noExplicitAny: a list of tools whose schemas differ; each checks its own input
type AnyTool = Tool<any, any>;

/**
 * A Hono app that serves `tools` over HTTP: their declarations per format, and a run with query
 * arguments (GET) or a JSON body (POST), each checked by the tool's own schema. Throws when two tools
 * share a name.
 *
 * @example
 * const app = new Hono();
 * app.route("/", toolRoutes([searchProducts, getProduct]));
 * // GET /tools?format=openai-chat, GET /tools/search_products?query=lamp&limit=5
 */
export function toolRoutes(tools: readonly AnyTool[], options: ToolRoutesOptions = {}): Hono {
  const maxBody = options.max_body_bytes ?? 1_048_576;
  const byName = new Map<string, AnyTool>();
  for (const tool of tools) {
    if (byName.has(tool.name))
      throw new OffloadError("invalid_argument", `two tools are named ${tool.name}`, {
        path: "tools",
      });
    byName.set(tool.name, tool);
  }

  const app = new Hono();

  app.get("/tools", (c) => {
    const format = (c.req.query("format") ?? "anthropic") as ToolFormat;
    if (!FORMATS.includes(format))
      return fail(
        new OffloadError("invalid_argument", `format must be one of ${FORMATS.join(", ")}`, {
          path: "format",
        }),
      );
    return c.json({ tools: [...byName.values()].map((t) => t.definition(format)) });
  });

  app.get("/tools/:name", async (c) => {
    try {
      const tool = find(byName, c.req.param("name"));
      return await answer(tool, await tool.parse(queryArguments(tool.input, c.req.queries())));
    } catch (error) {
      return fail(error);
    }
  });

  app.post("/tools/:name", async (c) => {
    try {
      const tool = find(byName, c.req.param("name"));
      const declared = Number(c.req.header("content-length") ?? "0");
      if (declared > maxBody) throw tooLarge(maxBody);
      const text = await c.req.text();
      if (new TextEncoder().encode(text).length > maxBody) throw tooLarge(maxBody);
      let body: unknown;
      try {
        body = text.trim() === "" ? {} : JSON.parse(text);
      } catch {
        throw new OffloadError("invalid_json", "the body is not valid JSON");
      }
      if (body === null || typeof body !== "object" || Array.isArray(body))
        throw new OffloadError("invalid_request", "the body must be a JSON object of arguments");
      return await answer(tool, await tool.parse(body));
    } catch (error) {
      return fail(error);
    }
  });

  return app;
}

function find(byName: ReadonlyMap<string, AnyTool>, name: string): AnyTool {
  const tool = byName.get(name);
  if (tool === undefined)
    throw new OffloadError("not_found", `no tool named ${JSON.stringify(name)}`, { path: "name" });
  return tool;
}

function tooLarge(max: number): OffloadError {
  return new OffloadError("payload_too_large", `the body is larger than ${max} bytes`);
}

async function answer(tool: AnyTool, args: unknown): Promise<Response> {
  const value: unknown = await tool.run(args);
  if (typeof value === "string")
    return new Response(value, { headers: { "content-type": "text/plain; charset=utf-8" } });
  return new Response(serializeValue(value), { headers: { "content-type": "application/json" } });
}

function fail(error: unknown): Response {
  const known = isOffloadError(error) ? error : new OffloadError("internal", "the tool failed");
  // An "internal" OffloadError may still name internals; only its type goes out.
  const shown = known.type === "internal" ? new OffloadError("internal", "the tool failed") : known;
  return Response.json(shown.toJSON(), { status: shown.status });
}

/**
 * Query strings carry only text: turn each value into what the schema's field expects (a number for a
 * number, true/false for a boolean, every value for an array) and leave anything else as text for zod to
 * judge, so `limit=abc` fails as "expected number" on `limit` rather than becoming NaN or 0.
 */
export function queryArguments(
  schema: z.ZodObject,
  queries: Record<string, string[]>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, values] of Object.entries(queries)) {
    const field = Object.hasOwn(schema.shape, key) ? (schema.shape[key] as z.ZodType) : undefined;
    const kind = field === undefined ? "string" : baseOf(field);
    if (typeof kind === "object") {
      out[key] = values.map((v) => coerce(kind.element, v));
      continue;
    }
    if (values.length > 1)
      throw new OffloadError(
        "invalid_argument",
        `${key} is given ${values.length} times; give it once`,
        { path: key },
      );
    out[key] = coerce(kind, values[0] ?? "");
  }
  return out;
}

type FieldKind = "string" | "number" | "boolean" | { type: "array"; element: FieldKind };

const WRAPPERS = new Set([
  "optional",
  "default",
  "prefault",
  "nullable",
  "nonoptional",
  "readonly",
  "catch",
]);

function baseOf(schema: z.ZodType, depth = 0): FieldKind {
  const def = (
    schema as unknown as {
      _zod: { def: { type: string; innerType?: z.ZodType; in?: z.ZodType; element?: z.ZodType } };
    }
  )._zod.def;
  if (depth > 16) return "string";
  if (WRAPPERS.has(def.type) && def.innerType !== undefined)
    return baseOf(def.innerType, depth + 1);
  if (def.type === "pipe" && def.in !== undefined) return baseOf(def.in, depth + 1);
  if (def.type === "number") return "number";
  if (def.type === "boolean") return "boolean";
  if (def.type === "array" && def.element !== undefined)
    return { type: "array", element: baseOf(def.element, depth + 1) };
  return "string";
}

function coerce(kind: FieldKind, value: string): unknown {
  if (kind === "number") return NUMBER.test(value) ? Number(value) : value;
  if (kind === "boolean") return value === "true" ? true : value === "false" ? false : value;
  return value;
}

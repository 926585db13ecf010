import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PRODUCTS } from "../../examples/catalog/catalog.ts";
import example from "../../examples/catalog/worker.ts";
import { definePagedTool, defineTool, OffloadError } from "../../src/toolkit/entry.ts";
import { queryArguments, toolRoutes } from "../../src/toolkit/hono.ts";

const items = Array.from({ length: 130 }, (_, i) => ({
  id: i,
  tag: i % 3 === 0 ? "fizz" : "plain",
}));
const list = definePagedTool({
  name: "list_items",
  description: "List items.",
  input: z.object({
    tag: z.enum(["fizz", "plain"]).optional(),
    ids: z.array(z.int()).optional(),
    exact: z.boolean().optional(),
  }),
  rows: ({ tag, ids }) =>
    items.filter(
      (x) => (tag === undefined || x.tag === tag) && (ids === undefined || ids.includes(x.id)),
    ),
});
const hello = defineTool({
  name: "hello",
  description: "Say hello.",
  input: z.object({ who: z.string().default("world") }),
  run: ({ who }) => `hello ${who}`,
});
const missing = defineTool({
  name: "missing",
  description: "Always not found.",
  input: z.object({}),
  run: () => {
    throw new OffloadError("not_found", "nothing here");
  },
});
const crash = defineTool({
  name: "crash",
  description: "Always fails.",
  input: z.object({}),
  run: () => {
    throw new Error("connection string postgres://admin:secret@db");
  },
});
const app = toolRoutes([list, hello, missing, crash], { max_body_bytes: 200 });

async function get(
  path: string,
  on: { request: Hono["request"] } = app,
): Promise<{ status: number; body: any; type: string | null }> {
  const res = await on.request(path);
  const text = await res.text();
  const type = res.headers.get("content-type");
  return {
    status: res.status,
    type,
    body: type?.startsWith("application/json") ? JSON.parse(text) : text,
  };
}

describe("toolRoutes: GET /tools/:name", () => {
  it("serves a page with the total and the cursor", async () => {
    const { status, body } = await get("/tools/list_items?limit=3");
    expect(status).toBe(200);
    expect(body).toEqual({
      total: 130,
      offset: 0,
      returned: 3,
      rows: items.slice(0, 3),
      next_offset: 3,
    });
  });

  it("uses the defaults without a query, and walks to the last page", async () => {
    expect((await get("/tools/list_items")).body).toMatchObject({
      offset: 0,
      returned: 20,
      next_offset: 20,
    });
    expect((await get("/tools/list_items?offset=120")).body).toMatchObject({
      total: 130,
      returned: 10,
      next_offset: null,
    });
  });

  it("an offset past the end is an empty page with the total", async () => {
    expect((await get("/tools/list_items?offset=5000")).body).toEqual({
      total: 130,
      offset: 5000,
      returned: 0,
      rows: [],
      next_offset: null,
    });
  });

  it("caps a huge limit", async () => {
    expect((await get("/tools/list_items?limit=100000")).body).toMatchObject({
      returned: 100,
      next_offset: 100,
    });
  });

  it("coerces query text by the schema: enums, booleans, repeated array values", async () => {
    expect((await get("/tools/list_items?tag=fizz&limit=0")).body).toMatchObject({
      total: 44,
      returned: 0,
    });
    expect((await get("/tools/list_items?ids=4&ids=7&ids=999&exact=true")).body).toMatchObject({
      total: 2,
      rows: [items[4], items[7]],
    });
    expect((await get("/tools/list_items?ids=5")).body).toMatchObject({ total: 1 });
  });

  for (const [query, path, fragment] of [
    ["offset=-1", "offset", "Too small"],
    ["offset=1.5", "offset", "expected int"],
    ["offset=abc", "offset", "expected number, received string"],
    ["limit=NaN", "limit", "expected number, received string"],
    ["limit=", "limit", "expected number, received string"],
    ["limit=1e400", "limit", "Infinity"],
    ["limit=0x10", "limit", "expected number, received string"],
    ["offset=1&offset=2", "offset", "given 2 times"],
    ["exact=yes", "exact", "expected boolean"],
    ["tag=buzz", "tag", "tag"],
    ["ids=1&ids=x", "ids[1]", "expected number"],
  ] as const) {
    it(`answers ?${query} with a 400 naming ${path}`, async () => {
      const { status, body } = await get(`/tools/list_items?${query}`);
      expect(status).toBe(400);
      expect(body.error.type).toBe("invalid_argument");
      expect(body.error.path).toBe(path);
      expect(body.error.message).toContain(fragment);
    });
  }

  it("answers a string result as text", async () => {
    expect(await get("/tools/hello?who=edge")).toEqual({
      status: 200,
      type: "text/plain; charset=utf-8",
      body: "hello edge",
    });
  });

  it("answers an unknown tool with a 404 and the error shape", async () => {
    expect(await get("/tools/nope")).toEqual({
      status: 404,
      type: "application/json",
      body: { error: { type: "not_found", message: 'no tool named "nope"', path: "name" } },
    });
  });

  it("passes a tool's OffloadError through with its status, and hides any other failure", async () => {
    expect((await get("/tools/missing")).body).toEqual({
      error: { type: "not_found", message: "nothing here" },
    });
    expect((await get("/tools/missing")).status).toBe(404);
    const crashed = await get("/tools/crash");
    expect(crashed.status).toBe(500);
    expect(crashed.body).toEqual({ error: { type: "internal", message: "the tool failed" } });
  });
});

describe("toolRoutes: GET /tools and POST /tools/:name", () => {
  it("lists the declarations in each format", async () => {
    expect((await get("/tools")).body.tools).toEqual(
      [list, hello, missing, crash].map((t) => t.definition("anthropic")),
    );
    expect((await get("/tools?format=openai-chat")).body.tools[1]).toEqual(
      hello.definition("openai-chat"),
    );
    expect((await get("/tools?format=openai-responses")).body.tools[0]).toEqual(
      list.definition("openai-responses"),
    );
    const bad = await get("/tools?format=gemini");
    expect(bad.status).toBe(400);
    expect(bad.body.error.path).toBe("format");
  });

  async function post(path: string, body: string): Promise<{ status: number; body: any }> {
    const res = await app.request(path, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
    });
    const text = await res.text();
    return {
      status: res.status,
      body: res.headers.get("content-type")?.startsWith("application/json")
        ? JSON.parse(text)
        : text,
    };
  }

  it("runs with a JSON body (the model's arguments as they are)", async () => {
    expect(await post("/tools/list_items", '{"ids":[1,2],"limit":1}')).toEqual({
      status: 200,
      body: { total: 2, offset: 0, returned: 1, rows: [items[1]], next_offset: 1 },
    });
    expect(await post("/tools/hello", "")).toEqual({ status: 200, body: "hello world" });
  });

  it("answers bad bodies: not JSON, not an object, a bad field, too large", async () => {
    expect(await post("/tools/list_items", "{")).toEqual({
      status: 400,
      body: { error: { type: "invalid_json", message: "the body is not valid JSON" } },
    });
    expect((await post("/tools/list_items", "[1]")).body.error.type).toBe("invalid_request");
    expect((await post("/tools/list_items", '{"offset":"3"}')).body.error).toMatchObject({
      type: "invalid_argument",
      path: "offset",
    });
    const big = await post("/tools/hello", JSON.stringify({ who: "x".repeat(300) }));
    expect(big.status).toBe(413);
    expect(big.body.error.type).toBe("payload_too_large");
    expect((await post("/tools/nope", "{}")).status).toBe(404);
  });

  it("mounts under any prefix", async () => {
    const outer = new Hono();
    outer.route("/api", app);
    expect((await get("/api/tools/hello", outer)).body).toBe("hello world");
  });

  it("refuses two tools with one name", () => {
    expect(() => toolRoutes([hello, hello])).toThrow(OffloadError);
  });

  it("queryArguments leaves unknown keys and non-numeric text as text for zod to judge", () => {
    expect(
      queryArguments(list.input, {
        limit: ["12"],
        offset: ["-0.5e1"],
        other: ["7"],
        tag: ["fizz"],
      }),
    ).toEqual({ limit: 12, offset: -5, other: "7", tag: "fizz" });
    expect(queryArguments(list.input, { limit: [" 12"] })).toEqual({ limit: " 12" });
  });
});

describe("the catalog example", () => {
  it("searches the bundled catalog a page at a time", async () => {
    const { status, body } = await get("/tools/search_products?query=pan&limit=5", example);
    expect(status).toBe(200);
    const all = PRODUCTS.filter((p) => p.name.includes("pan"));
    expect(body).toEqual({
      total: all.length,
      offset: 0,
      returned: 5,
      rows: all.slice(0, 5),
      next_offset: 5,
    });
    const filtered = await get(
      "/tools/search_products?category=audio&in_stock=true&max_price=20",
      example,
    );
    expect(
      filtered.body.rows.every(
        (p: { category: string; in_stock: boolean; price: number }) =>
          p.category === "audio" && p.in_stock && p.price <= 20,
      ),
    ).toBe(true);
  });

  it("answers an unknown product with a 404 naming the id, and describes the catalog", async () => {
    expect((await get("/tools/get_product?id=99999", example)).body).toEqual({
      error: {
        type: "not_found",
        message: "no product with id 99999; search_products lists the ids",
        path: "id",
      },
    });
    expect((await get("/tools/get_product?id=3", example)).body).toEqual(PRODUCTS[2]);
    const shape = await get("/tools/describe_catalog", example);
    expect(shape.body).toContain(
      `JSON array(${PRODUCTS.length}) of objects {id: number, sku: string, name: string, category: string, price: number, in_stock: boolean, rating: number}`,
    );
    expect(shape.body.length).toBeLessThan(2400);
  });
});

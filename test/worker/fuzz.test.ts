/**
 * HTTP fuzz against the Worker in workerd: several hundred malformed requests over every route (invalid and
 * truncated JSON, deep nesting, lone surrogates, invalid UTF-8, odd ids, auth variants, huge headers and
 * fields, broken multipart, odd query strings): the API, the proxy's compacted routes and token counts, the
 * pass-through paths under the provider prefixes, and extraction with its OCR parameters. Every mutation meets every route that takes a body, with
 * the transform on; then a random mix from a fixed seed, so a failure reproduces. Every answer must be the
 * documented error shape (the provider's on the proxy routes, HTML on the dashboard) or a success, never a
 * 500, and its x-offload-summary header stays within a few KB.
 */
import { SELF } from "cloudflare:test";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ErrorSchema } from "../../src/routes/schemas/errors.ts";
import { ExtractFailureSchema } from "../../src/routes/schemas/extract.ts";
import { png } from "../fixtures/image-writer.ts";
import { anthropicMessage, chatCompletion, response } from "../support/providers.ts";
import { BASE, KEYS } from "./helpers.ts";

const SEED = 20_261_111;
const RANDOM_CASES = 160;
const ON = JSON.stringify({
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
  keep_last_n: 0,
});

type Shape = "error" | "anthropic" | "openai" | "html" | "any";

interface Case {
  name: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | Uint8Array | null;
  shape: Shape;
}

const enc = new TextEncoder();
const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;

/** A settled large result: with the transform on, it is offloaded and the gate, stub and report all run. */
const anthropicTurn = (result = "x".repeat(70_000)) => ({
  model: "claude-sonnet-4-6",
  max_tokens: 16,
  messages: [
    { role: "user", content: "hi" },
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "bash", input: {} }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: result }] },
    { role: "assistant", content: "ok" },
  ],
});
const chatTurn = () => ({
  model: "gpt-4.1",
  messages: [
    { role: "user", content: "hi" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_1", type: "function", function: { name: "bash", arguments: "{}" } }],
    },
    { role: "tool", tool_call_id: "call_1", content: "x".repeat(70_000) },
    { role: "assistant", content: "ok" },
  ],
});
const responsesTurn = () => ({
  model: "gpt-4.1",
  input: [
    { role: "user", content: "hi" },
    { type: "function_call", call_id: "call_1", name: "bash", arguments: "{}" },
    { type: "function_call_output", call_id: "call_1", output: "x".repeat(70_000) },
    { role: "assistant", content: "ok" },
  ],
});

function withBytes(text: string, bad: number[]): Uint8Array {
  const b = enc.encode(text);
  const at = Math.floor(b.length / 2);
  const out = new Uint8Array(b.length + bad.length);
  out.set(b.subarray(0, at));
  out.set(bad, at);
  out.set(b.subarray(at), at + bad.length);
  return out;
}

/** Every way a body is wrong, from a valid one. */
function mutations(valid: object): [string, string | Uint8Array | null][] {
  const text = JSON.stringify(valid);
  const swap = (from: RegExp | string, to: string) => text.replace(from, to);
  return [
    ["valid", text],
    ["no body", null],
    ["empty", ""],
    ["truncated early", text.slice(0, 7)],
    ["truncated mid", text.slice(0, Math.floor(text.length / 2))],
    ["truncated late", text.slice(0, text.length - 2)],
    ["not JSON", "hello {"],
    ["deep arrays", deep(200_000)],
    ["deep objects", deepObject(30_000)],
    ["unclosed arrays", "[".repeat(60_000)],
    ["escaped lone surrogate", swap('"hi"', '"\\ud800"')],
    ["raw lone surrogate", swap('"hi"', '"\udc00"')],
    ["bad escape", swap('"hi"', '"\\u12"')],
    ["invalid UTF-8", withBytes(text, [0xff, 0xfe])],
    ["overlong UTF-8", withBytes(text, [0xc0, 0xaf])],
    ["encoded surrogate", withBytes(text, [0xed, 0xa0, 0x80])],
    ["model 1 MB", swap(/"model":"[^"]*"/, `"model":"${"m".repeat(1_000_000)}"`)],
    ["model 20 KB", swap(/"model":"[^"]*"/, `"model":"${"m".repeat(20_000)}"`)],
    ["model number", swap(/"model":"[^"]*"/, '"model":5')],
    ["number 1e999", swap(/"model":"[^"]*"/, '"model":1e999')],
    ["ids 100 KB", text.replace(/(toolu_1|call_1)/g, `id_${"x".repeat(100_000)}`)],
    ["tool name 5 KB", swap(/"bash"/g, `"${"n".repeat(5000)}"`)],
    ["duplicate keys", text.replace("{", '{"model":"a","model":"b",')],
    ["null", "null"],
    ["array", "[]"],
    ["empty object", "{}"],
  ];
}

/** Filled in with the mem_id of a body of 200,000 levels of nesting before the run. */
const DEEP_MEM = "{{DEEP_MEM}}";
let deepMem = "";
const SESSION = "fuzz";

beforeAll(async () => {
  const real = globalThis.fetch;
  // The provider, for requests that pass our checks: a plain answer in its format.
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const url = new Request(input as RequestInfo, init as RequestInit).url;
    const json = (body: unknown) =>
      new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
    if (url.startsWith("https://api.anthropic.com/v1/messages/count_tokens"))
      return json({ input_tokens: 1 });
    if (url.startsWith("https://api.openai.com/v1/responses/input_tokens"))
      return json({ object: "response.input_tokens", input_tokens: 1 });
    if (
      url.startsWith("https://api.anthropic.com/v1/messages?") ||
      url === "https://api.anthropic.com/v1/messages"
    )
      return json(anthropicMessage("msg_f", [{ text: "ok" }], { input: 1, output: 1 }));
    if (url.startsWith("https://api.openai.com/v1/chat"))
      return json(chatCompletion("c_f", [{ text: "ok" }], { input: 1, output: 1 }));
    if (url.startsWith("https://api.openai.com/v1/responses"))
      return json(response("r_f", [{ text: "ok" }], { input: 1, output: 1 }));
    // Any other provider path (the pass-through routes): an answer of the provider's own.
    if (url.startsWith("https://api.anthropic.com/") || url.startsWith("https://api.openai.com/"))
      return json({ object: "list", data: [] });
    return real(input as RequestInfo, init as RequestInit);
  });
  const out = await SELF.fetch(`${BASE}/v1/sessions/${SESSION}/compact`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${KEYS.acme}`,
      "content-type": "application/json",
      "x-offload-config": ON,
    },
    body: JSON.stringify(anthropicTurn(deep(200_000))),
  });
  deepMem = /trm_[0-9a-f]{24}/.exec(await out.text())?.[0] ?? "";
});
afterAll(() => {
  vi.restoreAllMocks();
});

const bearer = { authorization: `Bearer ${KEYS.acme}` };
const json = { "content-type": "application/json" };

/** Every mutation against every route that takes a body, with the transform on. */
function bodyCases(): Case[] {
  const out: Case[] = [];
  const each = (
    route: string,
    method: string,
    path: string,
    valid: object,
    headers: Record<string, string>,
    shape: Shape,
  ) => {
    for (const [what, body] of mutations(valid))
      out.push({ name: `${route}: ${what}`, method, path, headers, body, shape });
  };
  const v1 = { ...bearer, ...json, "x-offload-config": ON };
  each("compact", "POST", `/v1/sessions/${SESSION}/compact`, anthropicTurn(), v1, "error");
  each(
    "compact chat",
    "POST",
    `/v1/sessions/${SESSION}/compact?format=openai-chat`,
    chatTurn(),
    v1,
    "error",
  );
  each(
    "compact responses",
    "POST",
    `/v1/sessions/${SESSION}/compact?format=openai-responses`,
    responsesTurn(),
    v1,
    "error",
  );
  each(
    "recall",
    "POST",
    `/v1/sessions/${SESSION}/recall`,
    { mem_id: DEEP_MEM, json_path: "$" },
    v1,
    "error",
  );
  each("config", "PUT", `/v1/sessions/${SESSION}/config`, { keep_last_n: 2 }, v1, "error");
  each(
    "extract",
    "POST",
    "/v1/extract",
    { a: 1 },
    { ...bearer, "content-type": "text/plain" },
    "error",
  );
  const proxy = {
    ...json,
    "x-offload-key": KEYS.acme,
    "x-offload-session": SESSION,
    "x-offload-config": ON,
  };
  each("proxy anthropic", "POST", "/anthropic/v1/messages", anthropicTurn(), proxy, "anthropic");
  each("proxy chat", "POST", "/openai/v1/chat/completions", chatTurn(), proxy, "openai");
  each("proxy responses", "POST", "/openai/v1/responses", responsesTurn(), proxy, "openai");
  each(
    "count_tokens",
    "POST",
    "/anthropic/v1/messages/count_tokens",
    anthropicTurn(),
    proxy,
    "anthropic",
  );
  each(
    "input_tokens",
    "POST",
    "/openai/v1/responses/input_tokens",
    responsesTurn(),
    proxy,
    "openai",
  );
  // Pass-through: the body goes to the provider unread, whatever it is.
  const passKey = { ...json, "x-offload-key": KEYS.acme };
  each("pass-through batches", "POST", "/anthropic/v1/messages/batches", {}, passKey, "anthropic");
  each("pass-through embeddings", "POST", "/openai/v1/embeddings", {}, passKey, "openai");
  return out;
}

/** Recall's own arguments on the deep body: every mode, and arguments of the wrong kind. */
function recallCases(): Case[] {
  const args: object[] = [
    ...["$", "$[0]", "$..*", "$..[0]", "$[?(@)]", "$..*..x", "a.b", "$[", "$[(@.length-1)]"].map(
      (json_path) => ({ json_path }),
    ),
    ...["[", "[[", "]", "[]"].map((query) => ({ query, window: 5000 })),
    { offset: 100_000, max_chars: 50_000 },
    { offset: -1 },
    { offset: 1e300 },
    { window: deep(5) },
    { json_path: `$.${"a".repeat(100_000)}` },
    { query: "q".repeat(1_000_000) },
  ];
  return args.map((a) => ({
    name: `recall args ${JSON.stringify(a).slice(0, 40)}`,
    method: "POST",
    path: `/v1/sessions/${SESSION}/recall`,
    headers: { ...bearer, ...json },
    body: JSON.stringify({ mem_id: DEEP_MEM, ...a }),
    shape: "error" as const,
  }));
}

const ROUTES: [string, string][] = [
  ["GET", "/v1/sessions"],
  ["GET", `/v1/sessions/${SESSION}`],
  ["GET", `/v1/sessions/${SESSION}/report`],
  ["GET", "/v1/report"],
  ["GET", `/v1/sessions/${SESSION}/memories/trm_000000000000000000000000`],
  ["DELETE", "/v1/sessions/fuzz-deleted"],
];

const form = (name: string, body: string, shape: Shape): Case => ({
  name,
  method: "POST",
  path: "/",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body,
  shape,
});

/** Auth variants, odd ids, queries and headers on the routes without a body. */
function otherCases(): Case[] {
  const out: Case[] = [];
  const auths = [
    "",
    "Bearer",
    "Basic YWNtZTprZXk=",
    `Bearer  ${KEYS.acme} `,
    `bearer ${KEYS.acme}`,
    `Bearer ${KEYS.acme} extra`,
    "Bearer unknown-key-0123456789",
    `Bearer ${"k".repeat(8000)}`,
    "Bearer short",
    `Bearer ${KEYS.acme}`,
  ];
  for (const [method, path] of ROUTES)
    for (const a of auths)
      out.push({
        name: `auth ${method} ${path.split("/")[2]} ${a.slice(0, 14)}`,
        method,
        path,
        headers: a === "" ? {} : { authorization: a },
        body: null,
        shape: "error",
      });
  const ids = [
    "a/b",
    "..",
    "%2F",
    "%00",
    "%20",
    "x".repeat(200),
    "%C3%A9",
    "a:b",
    "%ff",
    "trm_%0A",
  ];
  for (const id of ids)
    for (const suffix of ["", "/report", "/memories/x", "/recall"])
      out.push({
        name: `id ${id.slice(0, 10)}${suffix}`,
        method: suffix === "/recall" ? "POST" : "GET",
        path: `/v1/sessions/${id}${suffix}`,
        headers: { ...bearer, ...json },
        body: suffix === "/recall" ? '{"mem_id":"trm_000000000000000000000000"}' : null,
        shape: "error",
      });
  const queries = [
    "?limit=-1",
    "?limit=abc",
    "?cursor=!!",
    "?cursor=AAAA",
    "?unknown=1",
    `?cursor=${"c".repeat(3000)}`,
  ];
  for (const q of queries)
    for (const path of ["/v1/sessions", "/v1/report"])
      out.push({
        name: `query ${path} ${q.slice(0, 12)}`,
        method: "GET",
        path: `${path}${q}`,
        headers: bearer,
        body: null,
        shape: "error",
      });
  for (const q of [
    "?max_pages=100000",
    "?max_pages=abc",
    "?on_error=maybe",
    "?format=nope",
    "?max_zip_ratio=1e9",
  ])
    out.push({
      name: `query extract ${q}`,
      method: "POST",
      path: `/v1/extract${q}`,
      headers: { ...bearer, "content-type": "text/plain" },
      body: "hello",
      shape: "error",
    });
  const configs = [
    "{",
    '{"nope":1}',
    '{"attachment_max_pages":100000}',
    `{"tool_result_pricing_model":"${"p".repeat(2000)}"}`,
    JSON.stringify({ tool_result_compaction_enabled: true, x: "y".repeat(6000) }),
    "[]",
  ];
  for (const config of configs)
    for (const [path, shape] of [
      [`/v1/sessions/${SESSION}/compact`, "error"],
      ["/anthropic/v1/messages", "anthropic"],
    ] as const)
      out.push({
        name: `x-offload-config ${config.slice(0, 16)} ${path.slice(0, 12)}`,
        method: "POST",
        path,
        headers: {
          ...bearer,
          ...json,
          "x-offload-key": KEYS.acme,
          "x-offload-session": SESSION,
          "x-offload-config": config,
        },
        body: JSON.stringify(anthropicTurn()),
        shape,
      });
  const proxyHeaders: [string, string][] = [
    ["", SESSION],
    [" ", SESSION],
    ["nope", SESSION],
    [`${KEYS.acme} x`, SESSION],
    ["k".repeat(5000), SESSION],
    [KEYS.acme, ""],
    [KEYS.acme, "a/b"],
    [KEYS.acme, "x".repeat(300)],
  ];
  for (const [key, session] of proxyHeaders)
    out.push({
      name: `proxy headers ${key.slice(0, 8)} ${session.slice(0, 8)}`,
      method: "POST",
      path: "/openai/v1/chat/completions",
      headers: {
        ...json,
        ...(key === "" ? {} : { "x-offload-key": key }),
        ...(session === "" ? {} : { "x-offload-session": session }),
      },
      body: JSON.stringify(chatTurn()),
      shape: "openai",
    });
  // Pass-through paths under the provider prefixes: every key variant, odd paths and methods.
  const passPaths: [string, string, Shape][] = [
    ["GET", "/anthropic/v1/models", "anthropic"],
    ["GET", "/anthropic", "anthropic"],
    ["DELETE", "/anthropic/v1/files/file_%00x", "anthropic"],
    // Dot segments, even encoded, are resolved before routing: this is GET /v1/sessions.
    ["GET", "/anthropic/%2e%2e/%2e%2e/v1/sessions", "error"],
    ["GET", "/openai/v1/models", "openai"],
    ["GET", "/openai/v1/responses/resp_1?include[]=x", "openai"],
    ["DELETE", "/openai/v1/files/%ff", "openai"],
    ["GET", "/openai/models", "openai"],
    ["PATCH", "/openai", "openai"],
    ["GET", `/openai/v1/${"x".repeat(5000)}`, "openai"],
  ];
  const passKeys = ["", " ", "nope", KEYS.acme, `${KEYS.acme} x`, "k".repeat(5000)];
  for (const [method, path, shape] of passPaths)
    for (const key of passKeys)
      out.push({
        name: `pass-through ${method} ${path.slice(0, 24)} ${key.slice(0, 8)}`,
        method,
        path,
        headers: key === "" ? {} : { "x-offload-key": key },
        body: null,
        shape,
      });
  // Extraction with OCR asked for: flags, limits beyond the deployment's, unknown languages.
  const ocrQueries = [
    "?ocr=true",
    "?ocr=1&ocr_lang=eng",
    "?ocr=maybe",
    "?ocr=true&ocr_max_pixels=1e12",
    "?ocr=true&ocr_max_pixels=-5",
    "?ocr=true&ocr_max_pages=abc",
    "?ocr=true&ocr_cpu_ms=999999999",
    "?ocr=true&ocr_min_confidence=2",
    "?ocr=true&ocr_min_confidence=0",
    `?ocr=true&ocr_lang=${encodeURIComponent("../../x")}`,
    `?ocr=true&ocr_lang=${"l".repeat(3000)}`,
    "?ocr_max_pages=3",
    "?ocr=true&max_pages=100000",
  ];
  const image = png(8, 8);
  for (const q of ocrQueries)
    for (const [type, body] of [
      ["image/png", image],
      ["image/png", image.subarray(0, 20)],
      ["text/plain", "hello"],
    ] as const)
      out.push({
        name: `query extract ${q.slice(0, 30)} ${type} ${body.length}`,
        method: "POST",
        path: `/v1/extract${q}`,
        headers: { ...bearer, "content-type": type },
        body,
        shape: "error",
      });
  const multipart = (body: string, type = "multipart/form-data; boundary=b"): Case => ({
    name: `multipart ${body.slice(0, 20)}`,
    method: "POST",
    path: "/v1/extract",
    headers: { ...bearer, "content-type": type },
    body,
    shape: "error",
  });
  out.push(
    multipart('--b\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\n\r\nhello'),
    multipart('--b\r\nContent-Disposition: form-data; name="f"\r\n\r\nhello\r\n--b--\r\n'),
    multipart("--b--\r\n"),
    multipart("garbage", "multipart/form-data"),
    multipart(
      '--b\r\nContent-Disposition: form-data; name="f"; filename="a.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7 broken\r\n--b--\r\n',
    ),
  );
  out.push(
    { name: "healthz", method: "GET", path: "/healthz", headers: {}, body: null, shape: "any" },
    {
      name: "openapi",
      method: "GET",
      path: "/openapi.json",
      headers: {},
      body: null,
      shape: "any",
    },
    {
      name: "dashboard ?key=",
      method: "GET",
      path: `/?key=${KEYS.acme}`,
      headers: {},
      body: null,
      shape: "html",
    },
    form("dashboard form", `key=${"%ff".repeat(100)}`, "html"),
    form("dashboard form with a spaced key", `key=${encodeURIComponent(" a b c ")}`, "html"),
    form("dashboard huge form", `key=${"k".repeat(80_000)}`, "error"),
    { name: "not found", method: "GET", path: "/nope", headers: {}, body: null, shape: "error" },
  );
  return out;
}

/** A random mix: any route with any body mutation, auth, config and id, from a fixed seed. */
function randomCases(pool: Case[]): Case[] {
  const mixed = fc.tuple(
    fc.constantFrom(...pool),
    fc.constantFrom(...mutations(anthropicTurn())),
    fc.constantFrom(undefined, ON, "{", '{"keep_last_n":-1}'),
    fc.boolean(),
  );
  return fc
    .sample(mixed, { seed: SEED, numRuns: RANDOM_CASES })
    .map(([c, [what, body], config, drop]) => {
      const headers = { ...c.headers };
      if (config === undefined) delete headers["x-offload-config"];
      else headers["x-offload-config"] = config;
      if (drop) delete headers.authorization;
      return {
        ...c,
        name: `random ${c.name} + ${what}`,
        headers,
        body: c.method === "GET" || c.method === "DELETE" ? null : body,
      };
    });
}

async function check(c: Case): Promise<void> {
  const body = typeof c.body === "string" ? c.body.replace(DEEP_MEM, deepMem) : c.body;
  const res = await SELF.fetch(`${BASE}${c.path}`, {
    method: c.method,
    headers: c.headers,
    ...(body === null ? {} : { body }),
  });
  const text = await res.text();
  const label = `${c.name} → ${res.status} ${text.slice(0, 160)}`;
  expect(res.status, label).not.toBe(500);
  expect(res.status < 500 || c.shape === "anthropic" || c.shape === "openai", label).toBe(true);
  // Headers a client's HTTP stack must carry: ours stay within a few KB whatever the request held.
  expect(res.headers.get("x-offload-summary")?.length ?? 0, label).toBeLessThanOrEqual(4096);
  if (res.status < 400 && c.shape !== "html") return;
  const type = res.headers.get("content-type") ?? "";
  if (c.shape === "html" && type.startsWith("text/html")) return;
  expect(type, label).toContain("application/json");
  const parsed = JSON.parse(text) as Record<string, unknown>;
  if (c.shape === "anthropic") {
    expect(parsed, label).toMatchObject({ type: "error", error: { type: expect.any(String) } });
    expect(res.headers.get("x-offload-error"), label).not.toBeNull();
  } else if (c.shape === "openai") {
    expect(parsed, label).toMatchObject({ error: { message: expect.any(String) } });
    expect(res.headers.get("x-offload-error"), label).not.toBeNull();
  } else {
    // POST /v1/extract answers a file it cannot read with its own documented 422 (fallback: native).
    const extractFailure = c.path.startsWith("/v1/extract") && res.status === 422;
    const schema = extractFailure ? ExtractFailureSchema : ErrorSchema;
    expect(schema.safeParse(parsed).success, label).toBe(true);
  }
}

describe("HTTP fuzz", () => {
  const fixed = [...bodyCases(), ...recallCases(), ...otherCases()];
  const all = [...fixed, ...randomCases(fixed)];

  it(`${all.length} malformed requests over every route: the documented shape, never a 500`, {
    timeout: 180_000,
  }, async () => {
    expect(deepMem, "the deep body was offloaded for the recall cases").toMatch(/^trm_/);
    const failures: string[] = [];
    for (const c of all) {
      try {
        await check(c);
      } catch (e) {
        failures.push((e as Error).message.split("\n")[0]!);
      }
    }
    expect(failures.slice(0, 10), `${failures.length} of ${all.length} failed`).toEqual([]);
  });
});

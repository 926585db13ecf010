// POST /v1/extract through the Worker (SELF.fetch) and through createApp with a spy extractor / faulty bucket:
// raw and multipart bodies, every error status, auth, body limits, and the per-tenant cache.
import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type AppDeps, createApp, defaultStore } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import type { Extractor } from "../../src/extract/cache.ts";
import { extractText } from "../../src/extract/extract.ts";
import {
  ExtractBatchSchema,
  ExtractFailureSchema,
  ExtractSuccessSchema,
} from "../../src/routes/schemas/extract.ts";
import { fixture } from "../fixtures/build.ts";
import { textPdf } from "../fixtures/pdf-writer.ts";
import { BASE, call, expectError, KEYS } from "./helpers.ts";

const quiet = () => {};

/** A PDF no other test sends, so the first call is a cache miss whatever ran before. */
let unique = 0;
function freshPdf(pages = 3): Uint8Array {
  unique++;
  const stamp = `${Date.now().toString(36)}-${unique}-${Math.random().toString(36).slice(2)}`;
  return textPdf(
    Array.from({ length: pages }, (_, i) => [
      `Report ${stamp}`,
      `Page ${i + 1} of the quarterly figures.`,
    ]),
  );
}

function raw(
  bytes: Uint8Array,
  init: { type?: string; filename?: string; query?: string; key?: string | null } = {},
): Request {
  const headers: Record<string, string> = {};
  const key = init.key === undefined ? KEYS.acme : init.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (init.type !== undefined) headers["content-type"] = init.type;
  if (init.filename !== undefined) headers["x-filename"] = init.filename;
  return new Request(`${BASE}/v1/extract${init.query ?? ""}`, {
    method: "POST",
    headers,
    body: bytes,
  });
}

function multipart(
  files: { field?: string; name: string; type: string; bytes: Uint8Array }[],
  query = "",
  extra?: (f: FormData) => void,
): Request {
  const form = new FormData();
  files.forEach((f, i) =>
    form.append(f.field ?? `file${i}`, new File([f.bytes], f.name, { type: f.type })),
  );
  extra?.(form);
  return new Request(`${BASE}/v1/extract${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEYS.acme}` },
    body: form,
  });
}

const file = (name: string) => {
  const f = fixture(name);
  return { name, type: f.media_type, bytes: f.build() };
};

function counting(calls: string[]): Extractor {
  return async (a, o) => {
    calls.push((a as { filename?: string }).filename ?? "?");
    return extractText(a, o);
  };
}

function appWith(deps: AppDeps): ReturnType<typeof createApp> {
  return createApp({ log: quiet, ...deps });
}

const send = (app: ReturnType<typeof createApp>, req: Request) =>
  Promise.resolve(app.fetch(req, env, createExecutionContext()));

/** The R2 binding with some methods failing, as an outage would. */
function failing(methods: string[]): R2Bucket {
  return new Proxy(env.LEDGER, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (typeof prop === "string" && methods.includes(prop))
        return async () => Promise.reject(new Error(`injected ${prop} failure`));
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("POST /v1/extract — raw body", () => {
  it("extracts a PDF with max_pages, answers the documented shape, and says it was a miss", async () => {
    const res = await SELF.fetch(
      raw(freshPdf(3), { type: "application/pdf", filename: "q3.pdf", query: "?max_pages=2" }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("x-extract-cache")).toBe("miss");
    const body = ExtractSuccessSchema.parse(await res.json());
    expect(body).toMatchObject({
      ok: true,
      format: "pdf",
      pages: 3,
      pages_extracted: 2,
      truncated: true,
      truncated_by: "max_pages",
      cached: false,
    });
    expect(body.text).toContain("Page 2 of the quarterly figures.");
    expect(body.text).not.toContain("Page 3");
    expect(body.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it("never extracts the same file twice in a tenant: the second call is a cache hit and the extractor does not run", async () => {
    const calls: string[] = [];
    const app = appWith({ extract: counting(calls) });
    const pdf = freshPdf();
    const first = await send(app, raw(pdf, { type: "application/pdf", filename: "a.pdf" }));
    const second = await send(app, raw(pdf, { type: "application/pdf", filename: "renamed.pdf" }));
    expect(calls).toEqual(["a.pdf"]);
    expect([first.headers.get("x-extract-cache"), second.headers.get("x-extract-cache")]).toEqual([
      "miss",
      "hit",
    ]);
    const [a, b] = [
      (await first.json()) as Record<string, unknown>,
      (await second.json()) as Record<string, unknown>,
    ];
    expect(b).toEqual({ ...a, cached: true });

    // Another tenant reads its own cache; other limits that change the text are another entry.
    const other = await send(app, raw(pdf, { type: "application/pdf", key: KEYS.globex }));
    expect(other.headers.get("x-extract-cache")).toBe("miss");
    const fewer = await send(app, raw(pdf, { type: "application/pdf", query: "?max_pages=1" }));
    expect(fewer.headers.get("x-extract-cache")).toBe("miss");
    expect(calls).toHaveLength(3);
  });

  it("answers 422 with the fallback body; a failure of the bytes (encrypted) is cached, an unsupported format is not parsed at all", async () => {
    const calls: string[] = [];
    const app = appWith({ extract: counting(calls) });
    const enc = file("encrypted.pdf");
    for (const expected of ["miss", "hit"]) {
      const res = await send(app, raw(enc.bytes, { type: enc.type, filename: "enc.pdf" }));
      expect(res.status).toBe(422);
      expect(res.headers.get("x-extract-cache")).toBe(expected);
      const json = (await res.json()) as Record<string, unknown>;
      // The one error shape: everything about the failure is inside `error`; beside it only the file's facts.
      expect(Object.keys(json).sort()).toEqual(["cached", "digest", "error"]);
      const body = ExtractFailureSchema.parse(json);
      expect(body).toMatchObject({
        error: {
          type: "extraction_failed",
          reason: "encrypted",
          format: "pdf",
          fallback: "native",
        },
        cached: expected === "hit",
      });
    }
    expect(calls.filter((c) => c === "enc.pdf").length).toBeLessThanOrEqual(1); // at most once (another test may have cached it)

    const doc = file("legacy.doc");
    const res = await send(app, raw(doc.bytes, { type: doc.type }));
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({
      error: { type: "unsupported_attachment", format: "doc", fallback: "native" },
      cached: false,
    });

    const img = await send(app, raw(file("image.png").bytes, { type: "image/png" }));
    expect(await img.json()).toMatchObject({
      error: { type: "unsupported_attachment", message: "png image: OCR is off" },
    });
  });

  it("reads DOCX, XLSX, CSV and HTML; magic bytes win over the declared type; a non-ASCII file name is percent-decoded", async () => {
    const docx = file("report.docx");
    const d = await SELF.fetch(
      raw(docx.bytes, {
        type: "application/octet-stream",
        filename: encodeURIComponent("Bericht März.docx"),
      }),
    );
    expect(await d.json()).toMatchObject({ ok: true, format: "docx" });
    const x = (await (
      await SELF.fetch(raw(file("workbook.xlsx").bytes, { query: "?sheet_format=tsv" }))
    ).json()) as { text: string; format: string };
    expect(x.format).toBe("xlsx");
    expect(x.text).toContain("# Sheet: Second");
    expect(
      await (await SELF.fetch(raw(file("table.csv").bytes, { type: "text/csv" }))).json(),
    ).toMatchObject({ ok: true, format: "csv" });
    const h = (await (
      await SELF.fetch(raw(file("page.html").bytes, { type: "text/html" }))
    ).json()) as { text: string };
    expect(h.text).toContain("- Ledger: up");
    const lying = await SELF.fetch(raw(freshPdf(1), { type: "image/png" }));
    expect(await lying.json()).toMatchObject({ ok: true, format: "pdf" });
  });

  it("survives a cache it cannot read or write: the text still comes back, and the field says so", async () => {
    for (const [methods, expected] of [
      [["get"], "read"],
      [["put"], "write"],
    ] as const) {
      const store: AppDeps["store"] = (e, settings, log) =>
        defaultStore({ ...e, LEDGER: failing([...methods]) } as Env, settings, log);
      const res = await send(appWith({ store }), raw(freshPdf(1), { type: "application/pdf" }));
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ ok: true, cached: false, cache_error: expected });
    }
  });
});

describe("POST /v1/extract — multipart", () => {
  it("warn mode: one result per file, in order, failures included", async () => {
    const pdf = freshPdf(1);
    const res = await SELF.fetch(
      multipart(
        [
          { field: "invoice", name: "inv.pdf", type: "application/pdf", bytes: pdf },
          { field: "photo", ...file("image.webp") },
          { field: "sheet", ...file("table.csv") },
        ],
        "?max_pages=5",
      ),
    );
    expect(res.status).toBe(200);
    const { results } = ExtractBatchSchema.parse(await res.json());
    expect(results.map((r) => [r.index, r.field, r.filename, r.ok])).toEqual([
      [0, "invoice", "inv.pdf", true],
      [1, "photo", "image.webp", false],
      [2, "sheet", "table.csv", true],
    ]);
    expect(results[1]).toMatchObject({
      error: { type: "unsupported_attachment", format: "webp", fallback: "native" },
    });
    expect(results[0]).toMatchObject({ format: "pdf", cached: false });

    // The same PDF again, alone: the multipart call filled the cache.
    const again = await SELF.fetch(raw(pdf, { type: "application/pdf", query: "?max_pages=5" }));
    expect(again.headers.get("x-extract-cache")).toBe("hit");
  });

  it("raise mode: the first failure as 422, with its index; the files after it are not parsed", async () => {
    const calls: string[] = [];
    const app = appWith({ extract: counting(calls) });
    const res = await send(
      app,
      multipart(
        [
          file("table.csv"),
          file("corrupt.pdf"),
          { name: "late.pdf", type: "application/pdf", bytes: freshPdf(1) },
        ],
        "?on_error=raise",
      ),
    );
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({
      error: { type: "extraction_failed", reason: "corrupt", index: 1, fallback: "native" },
    });
    expect(calls).not.toContain("late.pdf");
  });

  it("refuses a malformed body, a text field, no file, too many files, and an oversize body", async () => {
    const bad = new Request(`${BASE}/v1/extract`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${KEYS.acme}`,
        "content-type": "multipart/form-data; boundary=xyz",
      },
      body: "not multipart at all",
    });
    await expectError(await SELF.fetch(bad), 400, "invalid_request");
    await expectError(
      await SELF.fetch(multipart([file("table.csv")], "", (f) => f.append("note", "hello"))),
      400,
      "invalid_request",
      "note",
    );
    await expectError(
      await SELF.fetch(multipart([], "", (f) => f.append("note", "x"))),
      400,
      "invalid_request",
    );
    const many = Array.from({ length: 33 }, () => file("table.csv"));
    await expectError(await SELF.fetch(multipart(many)), 400, "invalid_request");

    const small = appWith({ maxBodyBytes: 2000 });
    const big = {
      name: "big.csv",
      type: "text/csv",
      bytes: new TextEncoder().encode("a,b\n".repeat(1000)),
    };
    await expectError(await send(small, multipart([big])), 413, "payload_too_large");
    // Without a Content-Length: cut off while streaming.
    const form = multipart([big]);
    const streamed = new Request(form.url, {
      method: "POST",
      headers: form.headers,
      body: form.body,
      duplex: "half",
    } as RequestInit);
    streamed.headers.delete("content-length");
    await expectError(await send(small, streamed), 413, "payload_too_large");
  });
});

describe("POST /v1/extract — errors", () => {
  it("needs a key like every /v1 route", async () => {
    const res = await SELF.fetch(raw(file("table.csv").bytes, { key: null }));
    await expectError(res, 401, "unauthorized");
    expect(res.headers.get("www-authenticate")).toContain("Bearer");
    await expectError(
      await SELF.fetch(raw(file("table.csv").bytes, { key: "nope" })),
      401,
      "unauthorized",
    );
  });

  it("validates the query: limits, on_error, unknown parameters", async () => {
    const csv = file("table.csv").bytes;
    await expectError(
      await SELF.fetch(raw(csv, { query: "?max_pages=abc" })),
      400,
      "invalid_argument",
      "max_pages",
    );
    await expectError(
      await SELF.fetch(raw(csv, { query: "?max_pages=0" })),
      400,
      "invalid_argument",
      "max_pages",
    );
    await expectError(
      await SELF.fetch(raw(csv, { query: "?sheet_format=xml" })),
      400,
      "invalid_argument",
      "sheet_format",
    );
    await expectError(
      await SELF.fetch(raw(csv, { query: "?on_error=ignore" })),
      400,
      "invalid_argument",
      "on_error",
    );
    await expectError(
      await SELF.fetch(raw(csv, { query: "?maxpages=3" })),
      400,
      "invalid_argument",
      "maxpages",
    );
  });

  it("refuses an empty body (400) and a body over the limit (413), declared or streamed", async () => {
    await expectError(
      await SELF.fetch(raw(new Uint8Array(0), { type: "application/pdf" })),
      400,
      "invalid_request",
    );
    const small = appWith({ maxBodyBytes: 1000 });
    await expectError(
      await send(small, raw(new Uint8Array(5000), { type: "application/pdf" })),
      413,
      "payload_too_large",
    );
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new Uint8Array(500));
        c.close();
      },
    });
    const chunked = new Request(`${BASE}/v1/extract`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS.acme}` },
      body: stream,
      duplex: "half",
    } as RequestInit);
    await expectError(await send(small, chunked), 413, "payload_too_large");
  });

  it("answers GET with 404 and is described in the OpenAPI document", async () => {
    await expectError(await call("/v1/extract"), 404, "not_found");
    const doc = (await (await SELF.fetch(`${BASE}/openapi.json`)).json()) as {
      paths: Record<string, { post?: { parameters: { name: string }[] } }>;
      components: { schemas: Record<string, unknown> };
    };
    const names = doc.paths["/v1/extract"]!.post!.parameters.map((p) => p.name);
    expect(names).toEqual(
      expect.arrayContaining(["max_pages", "max_chars", "on_error", "x-filename"]),
    );
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(["ExtractSuccess", "ExtractFailure", "ExtractBatch"]),
    );
  });
});

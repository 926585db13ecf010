/**
 * Starts the real `wrangler dev` (what `npm start` runs) on 127.0.0.1 and talks HTTP to it: compact twice,
 * recall, delete; the extraction route (raw, cache hit, 422, multipart) and a turn with a PDF replaced by its
 * text (pdf.js loaded in the service's own bundle). workerd there applies production's rules (no eval, no `new Function`, no wasm from bytes),
 * which vitest's pool relaxes, so this catches what the workerd tests cannot. Own ports, own state directory,
 * and the whole process group is killed at the end (dev-server.ts).
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixture, OCR_TEXT } from "../fixtures/build.ts";
import { charAccuracy } from "../support/ocr-node.ts";
import { catalogMessages } from "../support/providers.ts";
import { type DevServer, startDevServer } from "./dev-server.ts";

const KEY = "sk-smoke-test-key-01";
const HEADERS = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
const ON = JSON.stringify({
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
});

let server: DevServer | undefined;
let base = "";

beforeAll(async () => {
  // OCR on, with the model seeded in the local bucket the way `npm start` does it.
  server = await startDevServer(
    {
      OFFLOAD_API_KEYS: `smoke:${KEY}`,
      OFFLOAD_SECRET: "smoke-test-secret-0123456789abcdef",
      OFFLOAD_OCR: "on",
    },
    90_000,
    (state) =>
      execFileSync(process.execPath, ["scripts/ocr-model.mjs", "--local", "--persist-to", state]),
  );
  base = server.base;
});

afterAll(async () => {
  await server?.stop();
});

function conversation(extra: object[] = []): object {
  return { model: "claude-opus-4-5", max_tokens: 512, messages: [...catalogMessages(), ...extra] };
}

const turn3 = [
  { role: "assistant", content: [{ type: "tool_use", id: "toolu_3", name: "status", input: {} }] },
  { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_3", content: "still ok" }] },
];

describe("wrangler dev (production runtime rules)", () => {
  it("serves compact twice, recall, the session, the OpenAPI document and delete over HTTP", async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const session = `smoke-${Date.now().toString(36)}`;
    const compactUrl = `${base}/v1/sessions/${session}/compact?format=anthropic`;
    const compact = (body: object) =>
      fetch(compactUrl, {
        method: "POST",
        headers: { ...HEADERS, "x-offload-config": ON },
        body: JSON.stringify(body),
      });

    const first = await compact(conversation());
    expect(first.status).toBe(200);
    expect(JSON.parse(first.headers.get("x-offload-summary")!)).toMatchObject({
      offloaded: 1,
      errors_total: 0,
    });
    const out1 = await first.text();
    const mem = /trm_[0-9a-f]{24}/.exec(out1)![0];

    const second = await compact({
      ...(JSON.parse(out1) as object),
      messages: [...(JSON.parse(out1) as { messages: object[] }).messages, ...turn3],
    });
    const fromFull = await compact(conversation(turn3));
    expect(await second.text()).toBe(await fromFull.text());

    const recall = await fetch(`${base}/v1/sessions/${session}/recall`, {
      method: "POST",
      headers: HEADERS,
      body: JSON.stringify({ mem_id: mem, json_path: "$.items[?(@.price > 2247)].name" }),
    });
    expect(recall.status).toBe(200);
    const answer = (await recall.json()) as { content: string; is_error: boolean };
    expect(answer.is_error).toBe(false); // a filter, evaluated without eval (production forbids it)
    expect(answer.content).toContain("item-1499");

    const view = (await (
      await fetch(`${base}/v1/sessions/${session}`, { headers: HEADERS })
    ).json()) as { totals: { calls: number; recalls: number } };
    expect(view.totals).toMatchObject({ calls: 3, recalls: 1 });

    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(doc.paths)).toContain("/v1/sessions/{session_id}/recall");

    const bad = await fetch(`${base}/v1/sessions/${session}/recall`, {
      method: "POST",
      headers: HEADERS,
      body: JSON.stringify({ mem_id: 1 }),
    });
    expect(bad.status).toBe(400);

    expect(
      (await fetch(`${base}/v1/sessions/${session}`, { method: "DELETE", headers: HEADERS }))
        .status,
    ).toBe(204);
    expect((await fetch(`${base}/v1/sessions/${session}`, { headers: HEADERS })).status).toBe(404);
    expect(server!.output()).not.toContain(KEY);
  });

  it("serves POST /v1/extract (pdf.js, ZIP and XML code under production rules) and replaces a PDF in a turn", async () => {
    const post = (file: string, query = "", key = KEY) => {
      const f = fixture(file);
      return fetch(`${base}/v1/extract${query}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": f.media_type,
          "x-filename": file,
        },
        body: f.build() as Uint8Array<ArrayBuffer>,
      });
    };
    const first = await post("multipage.pdf", "?max_pages=2");
    expect(first.status).toBe(200);
    expect(first.headers.get("x-extract-cache")).toBe("miss");
    const body = (await first.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      ok: true,
      format: "pdf",
      pages: 5,
      pages_extracted: 2,
      truncated: true,
      cached: false,
    });
    expect(body.text).toContain("Body text of page 2.");
    const again = await post("multipage.pdf", "?max_pages=2");
    expect(again.headers.get("x-extract-cache")).toBe("hit");
    expect(await again.json()).toEqual({ ...body, cached: true });

    const enc = await post("encrypted.pdf");
    expect(enc.status).toBe(422);
    expect(await enc.json()).toMatchObject({
      error: { type: "extraction_failed", reason: "encrypted", format: "pdf", fallback: "native" },
    });
    expect((await post("report.docx")).status).toBe(200);
    expect(((await (await post("workbook.xlsx")).json()) as { text: string }).text).toContain(
      "# Sheet: Second",
    );
    expect((await post("table.csv", "", "wrong-key")).status).toBe(401);

    const form = new FormData();
    for (const file of ["text.pdf", "image.webp"])
      form.append(
        file,
        new File([fixture(file).build() as Uint8Array<ArrayBuffer>], file, {
          type: fixture(file).media_type,
        }),
      );
    const many = await fetch(`${base}/v1/extract`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}` },
      body: form,
    });
    expect(
      ((await many.json()) as { results: { ok: boolean }[] }).results.map((r) => r.ok),
    ).toEqual([true, false]);

    const pdf = Buffer.from(fixture("multipage.pdf").build()).toString("base64");
    const turn = {
      model: "claude-opus-4-5",
      max_tokens: 256,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Summarise." },
            {
              type: "document",
              source: { type: "base64", media_type: "application/pdf", data: pdf },
            },
          ],
        },
      ],
    };
    const config = JSON.stringify({
      tool_result_compaction_enabled: true,
      attachment_policy: "extract",
    });
    const res = await fetch(`${base}/v1/sessions/smoke-att-${Date.now().toString(36)}/compact`, {
      method: "POST",
      headers: { ...HEADERS, "x-offload-config": config },
      body: JSON.stringify(turn),
    });
    expect(JSON.parse(res.headers.get("x-offload-summary")!)).toMatchObject({
      attachments: { replaced: 1, failed: 0 },
    });
    expect(await res.text()).toContain("Body text of page 5.");
  });

  it("reads a PNG of text by OCR (tesseract-wasm's precompiled module under production rules), in /v1/extract and in a turn", async () => {
    const png = fixture("ocr-text.png");
    const res = await fetch(`${base}/v1/extract?ocr=true`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": png.media_type },
      body: png.build() as Uint8Array<ArrayBuffer>,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { text: string; confidence: number; format: string };
    expect(body.format).toBe("png");
    expect(charAccuracy(OCR_TEXT["ocr-text.png"]!.join("\n"), body.text)).toBeGreaterThanOrEqual(
      0.95,
    );
    expect(body.confidence).toBeGreaterThan(0.6);

    // The same screenshot in a conversation, one turn after it arrived: its placeholder carries the text
    // (the extraction cache answers: the route above already read these bytes for this tenant).
    const image = Buffer.from(png.build()).toString("base64");
    const turn = {
      model: "claude-sonnet-4-5",
      max_tokens: 256,
      messages: [
        {
          role: "user",
          content: [
            { type: "image", source: { type: "base64", media_type: "image/png", data: image } },
            { type: "text", text: "What is the total?" },
          ],
        },
        { role: "assistant", content: "EUR 1,250.00." },
        { role: "user", content: "Thanks. Who do I contact?" },
      ],
    };
    const config = JSON.stringify({
      tool_result_compaction_enabled: true,
      attachment_policy: "extract",
      attachment_ocr: true,
    });
    const compacted = await fetch(
      `${base}/v1/sessions/smoke-ocr-${Date.now().toString(36)}/compact`,
      {
        method: "POST",
        headers: { ...HEADERS, "x-offload-config": config },
        body: JSON.stringify(turn),
      },
    );
    expect(compacted.status).toBe(200);
    expect(JSON.parse(compacted.headers.get("x-offload-summary")!)).toMatchObject({
      attachments: { replaced: 1, failed: 0 },
    });
    const out = await compacted.text();
    expect(out).toContain("Text read from the image (OCR)");
    expect(out).toContain("billing@example.com");
  });
});

/**
 * The extraction library under `wrangler dev` (workerd with production rules: code generation from strings and
 * wasm compiled from bytes are forbidden, as in a deployed Worker; vitest's workerd pool allows both). This is
 * the check that pdf.js, the ZIP reader and the XML/HTML code need neither.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Unstable_DevWorker, unstable_dev } from "wrangler";
import { fixture } from "../fixtures/build.ts";

let worker: Unstable_DevWorker;

beforeAll(async () => {
  worker = await unstable_dev("test/worker/strict/extract-worker.ts", {
    config: "test/worker/strict/wrangler.toml",
    ip: "127.0.0.1",
    logLevel: "none",
    inspect: false,
    experimental: { disableExperimentalWarning: true, disableDevRegistry: true },
  });
}, 120_000);

afterAll(async () => {
  await worker?.stop();
});

async function post(
  file: string,
  query = "",
): Promise<{ status: number; body: Record<string, unknown> }> {
  const f = fixture(file);
  const res = await worker.fetch(`/extract${query}`, {
    method: "POST",
    body: f.build(),
    headers: { "content-type": f.media_type, "x-filename": file },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("wrangler dev (production code-generation rules)", () => {
  it("really forbids eval and new Function in this isolate", async () => {
    const res = await worker.fetch("/codegen");
    expect(await res.json()).toEqual({ eval: false, function: false });
    // The first request starts the isolate: room for a machine shared with other test runs.
  }, 60_000);

  it("extracts a PDF page by page", async () => {
    const { status, body } = await post("multipage.pdf", "?max_pages=2");
    expect(status).toBe(200);
    expect(body).toMatchObject({
      ok: true,
      format: "pdf",
      pages: 5,
      pages_extracted: 2,
      truncated: true,
    });
    expect(body.text).toContain("Body text of page 2.");
  });

  it("answers an encrypted PDF with the 422 fallback body", async () => {
    const { status, body } = await post("encrypted.pdf");
    expect(status).toBe(422);
    expect(body).toEqual({
      error: {
        type: "extraction_failed",
        message: "the PDF is password-protected",
        format: "pdf",
        reason: "encrypted",
        fallback: "native",
      },
    });
  });

  it("extracts DOCX and XLSX", async () => {
    expect((await post("report.docx")).body.text).toContain("| South \\| East | 900 | -2% |");
    expect((await post("workbook.xlsx")).body.text).toContain("# Sheet: Second");
  });
});

// OCR in the workerd pool: the engine's wasm imports as a compiled module (as wrangler bundles it), and the
// switches answer as documented when the trained data is absent. Recognition itself runs under wrangler dev
// (test/smoke/wrangler-dev.test.ts) and in Node (test/unit/ocr-engine.test.ts).
import { createExecutionContext, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import { fixture } from "../fixtures/build.ts";
import { BASE, KEYS } from "./helpers.ts";

const app = createApp({ log: () => {} });

async function post(query: string, vars: Partial<Env>): Promise<{ status: number; body: any }> {
  const f = fixture("ocr-text.png");
  const res = await app.fetch(
    new Request(`${BASE}/v1/extract${query}`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS.acme}`, "content-type": f.media_type },
      body: f.build(),
    }),
    { ...env, ...vars },
    createExecutionContext(),
  );
  return { status: res.status, body: await res.json() };
}

describe("OCR in workerd", () => {
  it("imports tesseract-wasm's engine as a compiled WebAssembly.Module", async () => {
    const wasm = (await import("../../src/extract/ocr-wasm.ts")).default;
    expect(wasm).toBeInstanceOf(WebAssembly.Module);
    expect(WebAssembly.Module.exports(wasm).length).toBeGreaterThan(10);
  });

  it("keeps today's behaviour without the switch or without the trained data", async () => {
    const plain = await post("", { OFFLOAD_OCR: "on" });
    expect(plain.status).toBe(422);
    expect(plain.body.error).toMatchObject({ type: "unsupported_attachment", format: "png" });
    const off = await post("?ocr=true", { OFFLOAD_OCR: "off" });
    expect(off.body).toMatchObject({
      error: {
        type: "extraction_dependency_missing",
        dependency: "ocr_engine",
        fallback: "native",
      },
    });
    // On, but no ocr/eng.traineddata in the bucket: the model is missing (not cached: it may be uploaded).
    const absent = await post("?ocr=true", { OFFLOAD_OCR: "on" });
    expect(absent.body).toMatchObject({
      error: {
        type: "extraction_dependency_missing",
        dependency: "ocr_model",
        fallback: "native",
      },
      cached: false,
    });
    const raised = await post("?ocr=true&ocr_max_pixels=999999999", { OFFLOAD_OCR: "on" });
    expect(raised.status).toBe(400);
    expect(raised.body.error.path).toBe("ocr_max_pixels");
  });
});

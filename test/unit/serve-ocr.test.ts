/**
 * `edge-offload serve` reads attachments as the Worker does: OCR from the installed tesseract-wasm and the
 * trained data in OFFLOAD_OCR_MODEL_DIR (through /v1/extract and the attachment policy alike), the Worker's
 * answers when the engine or a model is missing, a server that could never OCR refused at startup, and an
 * extraction cache whatever the store, so a file sent on every turn is read once.
 */
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { nodeOcrHost, packagedTesseractWasm } from "../../src/extract/ocr-node.ts";
import { MemoryExtractionCache } from "../../src/store/memory-extractions.ts";
import { fixture, OCR_TEXT } from "../fixtures/build.ts";
import { charAccuracy, MODEL_FILE } from "../support/ocr-node.ts";

/** What the test uses of src/serve.ts (loaded by name: its types are the Worker's, as in the CLI). */
interface ServeModule {
  serve(options: {
    port?: number;
    store?: string;
    env?: Record<string, string | undefined>;
    log?: (line: string) => void;
    ocrWasm?: () => Promise<WebAssembly.Module>;
  }): Promise<{ url: string; close(): Promise<void> }>;
}
const SERVE = "../../src/serve.ts";
const { serve } = (await import(/* @vite-ignore */ SERVE)) as ServeModule;

const KEY = "sk-serve-ocr-test-01";
const VARS = {
  OFFLOAD_API_KEYS: `acme:${KEY}`,
  OFFLOAD_SECRET: "serve-ocr-test-secret-0123456789",
  OFFLOAD_DEFAULT_CONFIG: "{}",
};
/** The English model as @tesseract.js-data/eng ships it (gzipped), the directory the docs name. */
const MODEL_DIR = join(MODEL_FILE, "..");
const OCR_ON = { OFFLOAD_OCR: "on", OFFLOAD_OCR_MODEL_DIR: MODEL_DIR };
const READ = OCR_TEXT["ocr-text.png"]!;

const work = mkdtempSync(join(tmpdir(), "edge-offload-serve-ocr-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(
  vars: Record<string, string>,
  more: { store?: string; ocrWasm?: () => Promise<WebAssembly.Module> } = {},
) {
  const lines: string[] = [];
  const server = await serve({
    port: 0,
    store: more.store ?? "sqlite::memory:",
    env: { ...VARS, ...vars },
    log: (line) => lines.push(line),
    ...(more.ocrWasm === undefined ? {} : { ocrWasm: more.ocrWasm }),
  });
  servers.push(server);
  return { url: server.url, lines };
}

/** Why serve refused to start. */
async function refused(vars: Record<string, string>): Promise<string> {
  const e = await start(vars).then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(Error);
  return (e as Error).message;
}

async function extract(base: string, file: string, query = "") {
  const f = fixture(file);
  const res = await fetch(`${base}/v1/extract${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": f.media_type },
    body: f.build() as Uint8Array<ArrayBuffer>,
  });
  return { status: res.status, cache: res.headers.get("x-extract-cache"), body: await res.json() };
}

const OCR_CONFIG = {
  tool_result_compaction_enabled: true,
  attachment_policy: "extract",
  attachment_ocr: true,
};

/** The image in the first user message, answered once (so no longer hot: the policy reads it). */
function conversation(image: Uint8Array) {
  const data = Buffer.from(image).toString("base64");
  return {
    model: "claude-sonnet-4-5",
    max_tokens: 256,
    messages: [
      {
        role: "user",
        content: [
          { type: "image", source: { type: "base64", media_type: "image/png", data } },
          { type: "text", text: "What is the total?" },
        ],
      },
      { role: "assistant", content: "EUR 1,250.00." },
      { role: "user", content: "Thanks. Who do I contact?" },
    ],
  };
}

async function compact(base: string, session: string, image: Uint8Array) {
  const res = await fetch(`${base}/v1/sessions/${session}/compact?format=anthropic`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${KEY}`,
      "content-type": "application/json",
      "x-offload-config": JSON.stringify(OCR_CONFIG),
    },
    body: JSON.stringify(conversation(image)),
  });
  expect(res.status).toBe(200);
  const summary = JSON.parse(res.headers.get("x-offload-summary")!);
  return { summary, text: await res.text() };
}

describe("serve with OCR on", { timeout: 60_000 }, () => {
  it("reads an image through /v1/extract?ocr=true, once", async () => {
    const { url, lines } = await start(OCR_ON);
    expect(lines.join("\n")).not.toMatch(/OCR|traineddata/);
    const t0 = performance.now();
    const first = await extract(url, "ocr-text.png", "?ocr=true");
    console.log(`serve: ocr-text.png read by OCR in ${Math.round(performance.now() - t0)} ms`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ ok: true, format: "png", cached: false });
    expect(charAccuracy(READ.join("\n"), first.body.text)).toBeGreaterThanOrEqual(0.95);
    const again = await extract(url, "ocr-text.png", "?ocr=true");
    expect([first.cache, again.cache]).toEqual(["miss", "hit"]);
    expect(again.body.text).toBe(first.body.text);
    // The Worker's ceilings: asking more than the deployment allows is a 400 naming the parameter.
    const raised = await extract(url, "ocr-text.png", "?ocr=true&ocr_max_pixels=999999999");
    expect(raised.status).toBe(400);
    expect(raised.body.error.path).toBe("ocr_max_pixels");
  });

  it("reads an image the attachment policy replaces, once per file and tenant", async () => {
    const { url } = await start(OCR_ON);
    const image = fixture("ocr-text.png").build();
    const read = await compact(url, "ocr-one", image);
    expect(read.summary.attachments).toMatchObject({
      replaced: 1,
      extracted: 1,
      ocr: { read: 1, not_read: 0 },
    });
    expect(read.text).toContain("Text read from the image (OCR)");
    for (const line of READ.slice(2)) expect(read.text).toContain(line);
    // Another session of the tenant sends the same file: the cache answers, nothing is decoded.
    const again = await compact(url, "ocr-two", image);
    expect(again.summary.attachments).toMatchObject({ extracted: 0, ocr: { read: 1 } });
    expect(again.text).toContain(READ[3]!);
  });

  it("never loads the engine for a server that does not OCR", async () => {
    let loads = 0;
    const { url } = await start(OCR_ON, {
      ocrWasm: async () => {
        loads++;
        throw new Error("not to be loaded");
      },
    });
    expect((await extract(url, "table.csv")).body).toMatchObject({ ok: true, format: "csv" });
    expect((await extract(url, "ocr-text.png")).body.error.type).toBe("unsupported_attachment");
    expect(loads).toBe(0);
  });
});

describe("serve with OCR on, without what it needs", { timeout: 60_000 }, () => {
  it("without tesseract-wasm: the Worker's extraction_dependency_missing, not cached", async () => {
    const { url } = await start(OCR_ON, { ocrWasm: () => packagedTesseractWasm(() => null) });
    for (let i = 0; i < 2; i++) {
      const r = await extract(url, "ocr-text.png", "?ocr=true");
      expect(r.status).toBe(422);
      expect(r.body).toMatchObject({
        error: {
          type: "extraction_dependency_missing",
          dependency: "ocr_engine",
          format: "png",
          fallback: "native",
          message: expect.stringMatching(/npm install tesseract-wasm/),
        },
        cached: false,
      });
    }
    // The attachment policy keeps the image native and says why; the turn itself succeeds.
    const turn = await compact(url, "no-engine", fixture("ocr-text.png").build());
    expect(turn.summary.attachments).toMatchObject({ replaced: 0, ocr: { read: 0, not_read: 1 } });
  });

  it("without a model dir, or with one that is not a readable directory: serve does not start", async () => {
    expect(await refused({ OFFLOAD_OCR: "on" })).toMatch(
      /OFFLOAD_OCR is on but OFFLOAD_OCR_MODEL_DIR is not set/,
    );
    const missing = join(work, "no-such-dir");
    expect(await refused({ OFFLOAD_OCR: "on", OFFLOAD_OCR_MODEL_DIR: missing })).toMatch(
      /OFFLOAD_OCR_MODEL_DIR .*no-such-dir does not exist/,
    );
    const file = join(work, "a-file");
    writeFileSync(file, "x");
    expect(await refused({ OFFLOAD_OCR: "on", OFFLOAD_OCR_MODEL_DIR: file })).toMatch(
      /is not a directory/,
    );
    // A language the limits' pattern refuses never becomes a path.
    expect(
      await refused({ ...OCR_ON, OFFLOAD_OCR_LIMITS: JSON.stringify({ languages: ["../eng"] }) }),
    ).toMatch(/OFFLOAD_OCR_LIMITS is invalid/);
    // OCR off: the directory is not looked at.
    await start({ OFFLOAD_OCR: "off", OFFLOAD_OCR_MODEL_DIR: missing });
  });

  it.skipIf(process.getuid?.() === 0)("an unreadable model dir: serve does not start", async () => {
    const locked = join(work, "locked");
    mkdirSync(locked);
    chmodSync(locked, 0);
    try {
      expect(await refused({ OFFLOAD_OCR: "on", OFFLOAD_OCR_MODEL_DIR: locked })).toMatch(
        /cannot be read/,
      );
    } finally {
      chmodSync(locked, 0o755);
    }
  });

  it("a language without its trained data: said at startup, then the Worker's ocr_model answer", async () => {
    const dir = join(work, "models-missing");
    mkdirSync(dir);
    const limits = JSON.stringify({ languages: ["eng", "deu"] });
    const { url, lines } = await start({
      OFFLOAD_OCR: "on",
      OFFLOAD_OCR_MODEL_DIR: dir,
      OFFLOAD_OCR_LIMITS: limits,
    });
    expect(lines.join("\n")).toMatch(
      /has no eng\.traineddata, deu\.traineddata: OCR in eng, deu answers extraction_dependency_missing/,
    );
    const absent = await extract(url, "ocr-text.png", "?ocr=true&ocr_lang=deu");
    expect(absent.status).toBe(422);
    expect(absent.body).toMatchObject({
      error: { type: "extraction_dependency_missing", dependency: "ocr_model", fallback: "native" },
      cached: false,
    });
    // A language the deployment does not list is the caller's 400, never a file looked for.
    const other = await extract(url, "ocr-text.png", "?ocr=true&ocr_lang=..%2Feng");
    expect(other.status).toBe(400);
    expect(other.body.error.path).toBe("ocr_lang");
    // A model file that cannot be read (here: a directory of that name) answers the same, and is
    // looked up again on the next image: added later, it is read without a restart.
    mkdirSync(join(dir, "eng.traineddata"));
    const unreadable = await extract(url, "ocr-text.png", "?ocr=true");
    expect(unreadable.body.error).toMatchObject({
      type: "extraction_dependency_missing",
      dependency: "ocr_model",
    });
    rmSync(join(dir, "eng.traineddata"), { recursive: true });
    copyFileSync(MODEL_FILE, join(dir, "eng.traineddata.gz"));
    expect((await extract(url, "ocr-text.png", "?ocr=true")).body).toMatchObject({ ok: true });
  });
});

describe("serve's OCR model directory", () => {
  it("reads <language>.traineddata plain or gzipped, and nothing that is not a language", async () => {
    const dir = join(work, "models-plain");
    mkdirSync(dir);
    writeFileSync(join(dir, "abc.traineddata"), "plain model");
    copyFileSync(MODEL_FILE, join(dir, "eng.traineddata.gz"));
    const model = (await nodeOcrHost({ modelDir: dir })).model({} as never);
    expect(new TextDecoder().decode((await model.load("abc"))!)).toBe("plain model");
    const eng = (await model.load("eng"))!;
    expect(eng.byteLength).toBeGreaterThan(1_000_000); // inflated (the gzipped file is smaller)
    expect(await model.load("../models-plain/abc")).toBeNull();
    expect(await model.load("fra")).toBeNull();
  });
});

describe("serve's extraction cache", () => {
  for (const store of ["sqlite::memory:", "memory:"])
    it(`a file sent twice is extracted once (${store})`, async () => {
      const { url } = await start({}, { store });
      const first = await extract(url, "table.csv");
      const second = await extract(url, "table.csv");
      expect([first.cache, second.cache]).toEqual(["miss", "hit"]);
      expect(second.body).toMatchObject({ ok: true, cached: true, text: first.body.text });
    });

  it("is bounded in entries and bytes, least recently used out first", async () => {
    const entry = (text: string) =>
      ({ ok: true, result: { format: "txt", text } }) as unknown as Parameters<
        MemoryExtractionCache["putExtraction"]
      >[2];
    const byCount = new MemoryExtractionCache({ maxEntries: 2 });
    await byCount.putExtraction("t", "a", entry("A"));
    await byCount.putExtraction("t", "b", entry("B"));
    await byCount.getExtraction("t", "a"); // a is now the most recent
    await byCount.putExtraction("t", "c", entry("C"));
    expect(byCount.size).toBe(2);
    expect(await byCount.getExtraction("t", "b")).toBeNull();
    expect(await byCount.getExtraction("t", "a")).not.toBeNull();

    const byBytes = new MemoryExtractionCache({ maxBytes: 10_000 });
    for (let i = 0; i < 10; i++) await byBytes.putExtraction("t", `k${i}`, entry("x".repeat(2000)));
    expect(byBytes.bytes).toBeLessThanOrEqual(10_000);
    expect(byBytes.size).toBe(2);
    expect(await byBytes.getExtraction("t", "k9")).not.toBeNull();
    // One entry over the whole bound is not kept (it would empty the cache for itself).
    await byBytes.putExtraction("t", "huge", entry("x".repeat(10_000)));
    expect(await byBytes.getExtraction("t", "huge")).toBeNull();
    expect(byBytes.size).toBe(2);
  });
});

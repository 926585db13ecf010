/**
 * OCR's cost, measured in one run: `node bench/ocr.ts`. The tesseract-wasm engine (English best_int model) in
 * Node reads the OCR fixtures and a full page of text (A4 at 150 dpi, 40 lines); prints the CPU of starting
 * the engine, the CPU per image (median of interleaved rounds, each a fresh extraction: no cache), the
 * character accuracy and confidence, and the engine's WebAssembly memory. In workerd the same work costs
 * about as much (V8 either way); the README gives the figures of a run under `wrangler dev`.
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { bytesModelSource, extractText } from "../src/extract/entry.ts";
import { tesseractEngine } from "../src/extract/ocr-tesseract.ts";
import { OCR_TEXT } from "../test/fixtures/build.ts";
import { greyPng } from "../test/fixtures/image-writer.ts";
import { loadFixture } from "../test/fixtures/load.ts";
import { renderText } from "../test/fixtures/text-image.ts";
import { charAccuracy, MODEL_FILE, WASM_FILE } from "../test/support/ocr-node.ts";

const ROUNDS = Number(process.env.OCR_ROUNDS ?? 3);
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const t0 = cpu();
const wasm = new WebAssembly.Module(readFileSync(WASM_FILE));
const compileMs = cpu() - t0;
const t1 = cpu();
const model = new Uint8Array(gunzipSync(readFileSync(MODEL_FILE)));
const gunzipMs = cpu() - t1;
const engine = tesseractEngine({ wasm });
const ocr = { enabled: true, engine, model: bytesModelSource(model, "eng") };

// Varied lines (identical ones would line their word gaps up into columns, which layout analysis reads apart).
const WORDS =
  "the report lists revenue costs and margins by region for each quarter while staff numbers rose in most offices but fell sharply where contracts ended early".split(
    " ",
  );
let seed = 7;
const next = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed;
};
const PAGE_LINES = Array.from({ length: 40 }, (_, i) => {
  let line = `${i + 1}.`;
  while (line.length < 62) line += ` ${WORDS[next() % WORDS.length]}`;
  return `${line} ${next() % 1000}.`;
});
const page = greyPng(renderText(PAGE_LINES, { cap: 17, margin: 90, width: 1240, height: 1754 }));
const inputs: { name: string; attachment: Parameters<typeof extractText>[0]; expected: string }[] =
  [
    ...["ocr-text.png", "ocr-text.jpg", "ocr-scan.pdf"].map((f) => ({
      name: f,
      attachment: loadFixture(f),
      expected: OCR_TEXT[f]!.join("\n"),
    })),
    {
      name: "A4 page, 150 dpi, 40 lines (PNG)",
      attachment: { data: page, media_type: "image/png" },
      expected: PAGE_LINES.join("\n"),
    },
  ];

// The first image starts the engine: instantiate the module and load the model.
const t2 = cpu();
await extractText(inputs[1]!.attachment, { ocr });
const firstMs = cpu() - t2;

const times = new Map<string, number[]>(inputs.map((i) => [i.name, []]));
const results = new Map<string, { accuracy: number; confidence: number | undefined }>();
let heap = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (const input of inputs) {
    const t = cpu();
    const r = await extractText(input.attachment, { ocr });
    times.get(input.name)!.push(cpu() - t);
    heap = Math.max(heap, engine.heapBytes());
    results.set(input.name, {
      accuracy: charAccuracy(input.expected, r.text),
      confidence: r.confidence,
    });
  }
}
const steadyJpg = median(times.get("ocr-text.jpg")!);
console.log(
  `compile tesseract-core.wasm (Node; wrangler uploads it precompiled): ${compileMs.toFixed(0)} ms`,
);
console.log(`gunzip the model (2.9 → 5.2 MB, once per isolate): ${gunzipMs.toFixed(0)} ms`);
console.log(
  `engine start (instantiate + load model), first image minus a later one: ${(firstMs - steadyJpg).toFixed(0)} ms`,
);
console.log("| image | pixels | CPU (median) | character accuracy | confidence |");
console.log("|---|---|---|---|---|");
for (const input of inputs) {
  const r = results.get(input.name)!;
  console.log(
    `| ${input.name} | | ${median(times.get(input.name)!).toFixed(0)} ms | ${(r.accuracy * 100).toFixed(1)}% | ${r.confidence} |`,
  );
}
console.log(
  `engine memory (WebAssembly heap, largest seen): ${(heap / 1024 / 1024).toFixed(1)} MiB`,
);

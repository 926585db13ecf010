/**
 * OCR in plain Node for the tests and the benchmark: the tesseract-wasm engine (Node may compile wasm from
 * bytes, so the file is read and compiled here) and the English model of @tesseract.js-data/eng, inflated once.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { gunzipSync } from "node:zlib";
import { bytesModelSource, type OcrOptions } from "../../src/extract/entry.ts";
import { tesseractEngine } from "../../src/extract/ocr-tesseract.ts";

const require = createRequire(import.meta.url);
const root = dirname(dirname(dirname(require.resolve("vitest/package.json"))));

/** The model file the service's setup uploads to R2 (gzipped, as the package ships it). */
export const MODEL_FILE = join(
  root,
  "node_modules/@tesseract.js-data/eng/4.0.0_best_int/eng.traineddata.gz",
);
export const WASM_FILE = join(root, "node_modules/tesseract-wasm/dist/tesseract-core.wasm");

let model: Uint8Array | undefined;
let engine: ReturnType<typeof tesseractEngine> | undefined;

/** OCR options with the real engine and model (one engine per process, as in an isolate). */
export function nodeOcr(extra: Partial<OcrOptions> = {}): OcrOptions {
  model ??= new Uint8Array(gunzipSync(readFileSync(MODEL_FILE)));
  engine ??= tesseractEngine({ wasm: new WebAssembly.Module(readFileSync(WASM_FILE)) });
  return { enabled: true, engine, model: bytesModelSource(model, "eng-best-int"), ...extra };
}

/** Levenshtein distance (two rows: the texts here are a few hundred characters). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(
        prev[j]! + 1,
        row[j - 1]! + 1,
        prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    prev = row;
  }
  return prev[b.length]!;
}

/** 1 − edit distance / expected length, after collapsing whitespace (line breaks and blank lines alike). */
export function charAccuracy(expected: string, actual: string): number {
  const norm = (s: string) => s.replace(/\s+/g, " ").trim();
  const e = norm(expected);
  return Math.max(0, 1 - editDistance(e, norm(actual)) / e.length);
}

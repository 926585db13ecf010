/**
 * OCR of hostile inputs in a process of its own, measured: the budgets suite (and `npm run bench -- ocr`)
 * writes each case of test/fixtures/ocr-hostile.ts to a file, then runs
 *   node --max-old-space-size=128 --expose-gc --experimental-strip-types test/support/ocr-probe.ts \
 *     <case> <file> [<case> <file> …]
 * (with MALLOC_MMAP_THRESHOLD_=131072 in its environment, so that glibc gives a freed block of 128 KB or
 * more back at once, as V8's accounting of a Worker's memory does, rather than keeping it resident) and
 * reads one JSON line per case: `{case, bytes, ms, peak_mb, outcome}`. `peak_mb` is the process's peak
 * resident memory during the case above what it held before (Linux's VmHWM, reset per case through
 * /proc/self/clear_refs): WebAssembly memory and array buffers included, which V8's heap limit does not
 * see. The engine is dropped after any image that grows its memory past its resting size (a deployment
 * drops it past 48 MiB) and a small image starts it again before each case, so every case begins from the
 * same idle engine, started, its model loaded and its code compiled: what is measured is the case's own
 * work. `outcome` is "ok" or the failure's reason. `peak_mb` is null where the platform has no such files.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { extractText } from "../../src/extract/extract.ts";
import { bytesModelSource } from "../../src/extract/ocr.ts";
import { tesseractEngine } from "../../src/extract/ocr-tesseract.ts";
import { greyPng } from "../fixtures/image-writer.ts";
import { OCR_CASES } from "../fixtures/ocr-hostile.ts";
import { renderText } from "../fixtures/text-image.ts";
import { MODEL_FILE, WASM_FILE } from "./ocr-node.ts";

const MB = 1024 * 1024;

function status(key: string): number | null {
  try {
    const m = readFileSync("/proc/self/status", "utf8").match(new RegExp(`${key}:\\s+(\\d+) kB`));
    return m === null ? null : Number(m[1]) * 1024;
  } catch {
    return null;
  }
}

function resetPeak(): boolean {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    return true;
  } catch {
    return false;
  }
}

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const ocr = {
  enabled: true,
  // The idle engine's memory is 27.75 MiB with the English model: anything larger is dropped.
  engine: tesseractEngine({
    wasm: new WebAssembly.Module(readFileSync(WASM_FILE)),
    max_heap_bytes: 29 * MB,
  }),
  model: bytesModelSource(new Uint8Array(gunzipSync(readFileSync(MODEL_FILE))), "eng-best-int"),
};
const WARM = greyPng(
  renderText(
    Array.from({ length: 16 }, (_, i) => `${i + 1}. the report lists revenue, costs and margins`),
    { cap: 24 },
  ),
);

async function settle(): Promise<void> {
  // The engine is started (again, when the last case dropped it) and its code compiled before measuring.
  await extractText({ data: WARM, media_type: "image/png" }, { ocr });
  gc();
  // The collector's helper threads give memory back a little later.
  await new Promise((r) => setTimeout(r, 200));
  gc();
}

async function main(name: string, file: string): Promise<void> {
  const c = OCR_CASES[name];
  if (c === undefined) throw new Error(`unknown case ${name}`);
  const bytes = new Uint8Array(readFileSync(file));
  await settle();
  const measured = resetPeak();
  const base = status("VmRSS");
  const t = performance.now();
  let outcome = "ok";
  try {
    await extractText({ data: bytes, media_type: c.media_type }, { ocr });
  } catch (e) {
    // A refusal (too large, corrupt, empty) is a fine outcome; anything else is not.
    if (!(e instanceof Error) || !("body" in e)) throw e;
    outcome = (e as { reason?: string; type?: string }).reason ?? (e as { type: string }).type;
  }
  const ms = Math.round(performance.now() - t);
  const peak = status("VmHWM");
  console.log(
    JSON.stringify({
      case: name,
      bytes: bytes.length,
      ms,
      peak_mb:
        measured && peak !== null && base !== null
          ? Math.round(((peak - base) / MB) * 10) / 10
          : null,
      outcome,
    }),
  );
}

// Once before the first case: the largest image the cases read, so that no case is the process's first at
// its size (the first such image measures lower, and not because it costs less in a deployment).
await extractText({ data: OCR_CASES["plain-ceiling"]!.build(), media_type: "image/png" }, { ocr });

const args = process.argv.slice(2);
for (let i = 0; i + 1 < args.length; i += 2) await main(args[i]!, args[i + 1]!);

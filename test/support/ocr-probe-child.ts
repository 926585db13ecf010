/**
 * Runs OCR's hostile cases (test/fixtures/ocr-hostile.ts) in a child process with a Worker's heap
 * (ocr-probe.ts says what it measures), for the budgets suite and `npm run bench -- ocr-hostile`.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ocrCaseBytes } from "../fixtures/ocr-hostile.ts";

export interface OcrRun {
  case: string;
  bytes: number;
  ms: number;
  /** Peak resident memory above the idle engine, MiB (null where the platform cannot say). */
  peak_mb: number | null;
  /** "ok", or the failure's reason (or type). */
  outcome: string;
}

/** The cases `names`, one after the other in one child (their inputs written to `dir`), by name. */
export function ocrProbe(names: readonly string[], dir: string): Promise<Map<string, OcrRun>> {
  const args = names.flatMap((name) => {
    const file = join(dir, name);
    writeFileSync(file, ocrCaseBytes(name));
    return [name, file];
  });
  return new Promise((resolve, reject) => {
    const p = spawn(
      process.execPath,
      [
        "--max-old-space-size=128",
        "--expose-gc",
        "--experimental-strip-types",
        "--disable-warning=ExperimentalWarning",
        join(import.meta.dirname, "ocr-probe.ts"),
        ...args,
      ],
      // glibc gives freed blocks of 128 KB or more back at once (see ocr-probe.ts).
      {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, MALLOC_MMAP_THRESHOLD_: "131072" },
      },
    );
    let out = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (out += d));
    p.on("close", (code) => {
      if (code !== 0)
        return reject(new Error(`the OCR probe failed (${code}): ${out.slice(-800)}`));
      const runs = out
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as OcrRun);
      resolve(new Map(runs.map((r) => [r.case, r])));
    });
  });
}

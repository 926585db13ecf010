/**
 * OCR's hostile inputs measured twice, in one run (`npm run bench -- ocr-hostile`):
 * 1. in a Node child with a Worker's heap (test/support/ocr-probe.ts, what the budgets suite asserts): the
 *    peak resident memory of each case above an idle engine, its time, and both as ratios to the plain image
 *    of the same dimensions;
 * 2. under `wrangler dev` (workerd, production's rules), the rows of issue 24's audit, each in a `wrangler
 *    dev` of its own (workerd keeps memory it once touched, so a second case would reuse the first's): the
 *    file POSTed to `/v1/extract?ocr=true` once a small image has started the engine, workerd's peak
 *    resident memory during the request above what it held before (VmHWM, reset) and the request's wall
 *    time. It is a fresh isolate's first large request, so it includes V8 compiling the engine's hot code
 *    (once per isolate), which the Node child's warmed engine does not. workerd does not enforce the 128 MB isolate limit locally; a deployment would kill
 *    an isolate past it. Skipped with `--node-only`; `--workerd-only` skips part 1. Run from another
 *    checkout's directory (`cd ../main && node …/bench/ocr-hostile.ts --workerd-only`), part 2 measures
 *    that checkout's Worker. Case names after the flags measure only those.
 * Times are this shared machine's: read the ratios.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OCR_CASES, ocrCaseBytes } from "../test/fixtures/ocr-hostile.ts";
import { startDevServer } from "../test/smoke/dev-server.ts";
import { type OcrRun, ocrProbe } from "../test/support/ocr-probe-child.ts";

const dir = mkdtempSync(join(tmpdir(), "edge-offload-ocr-bench-"));
const kb = (n: number) => `${Math.round(n / 1024).toLocaleString("en")} KB`;

function printNode(runs: Map<string, OcrRun>): void {
  console.log("Node child (128 MB heap), peak resident memory above an idle engine:\n");
  console.log("| case | input | outcome | peak | time | against its plain image |");
  console.log("|---|---:|---|---:|---:|---|");
  for (const x of runs.values()) {
    const c = OCR_CASES[x.case]!;
    const p = c.plain === undefined ? undefined : runs.get(c.plain);
    const vs =
      p === undefined
        ? ""
        : `${c.plain}: memory ${(x.peak_mb! / Math.max(1, p.peak_mb!)).toFixed(2)}×, time ${(x.ms / Math.max(1, p.ms)).toFixed(2)}×`;
    console.log(
      `| ${x.case} | ${kb(x.bytes)} | ${x.outcome} | ${x.peak_mb ?? "?"} MiB | ${x.ms} ms | ${vs} |`,
    );
  }
}

/**
 * The workerd that runs the Worker, in the group wrangler dev started: wrangler starts two (one proxies),
 * and the Worker's is the one that grew while it served.
 */
function workerdPid(group: number): number {
  let best: [number, number] | undefined;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) !== group || !stat.includes("(workerd)")) continue;
      const rss = status(Number(entry), "VmRSS");
      if (best === undefined || rss > best[1]) best = [Number(entry), rss];
    } catch {
      // gone
    }
  }
  if (best === undefined) throw new Error("no workerd process in wrangler's group");
  return best[0];
}

const status = (pid: number, key: string) =>
  Number(
    readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`${key}:\\s+(\\d+) kB`))![1],
  ) / 1024;

/** The audit's rows, in its order. */
const AUDIT = [
  "png-bomb-64m",
  "png-bomb-512m",
  "png-bomb-512m-chunked",
  "pdf-60-images",
  "pdf-60-lab",
  "png-8bit-8.4mp",
  "png-16bit-8.4mp",
  "jpeg-8.4mp",
  "plain-ceiling",
  "png-16bit-ceiling",
  "jpeg-ceiling",
];

const KEY = "sk-bench-ocr-key-0001";

/** One case in a `wrangler dev` of its own (see the file's comment). */
async function workerdCase(name: string): Promise<string> {
  const server = await startDevServer(
    {
      OFFLOAD_API_KEYS: `bench:${KEY}`,
      OFFLOAD_SECRET: "bench-secret-0123456789abcdef0123",
      OFFLOAD_OCR: "on",
    },
    120_000,
    (state) =>
      execFileSync(process.execPath, ["scripts/ocr-model.mjs", "--local", "--persist-to", state]),
  );
  try {
    const post = async (n: string) => {
      const body = ocrCaseBytes(n);
      const t = performance.now();
      const res = await fetch(`${server.base}/v1/extract?ocr=true`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": OCR_CASES[n]!.media_type },
        body: body as Uint8Array<ArrayBuffer>,
      });
      const json = (await res.json()) as { error?: { reason?: string; type: string } };
      const answer =
        json.error === undefined
          ? `${res.status}`
          : `${res.status} ${json.error.reason ?? json.error.type}`;
      return { ms: Math.round(performance.now() - t), answer, bytes: body.length };
    };
    // A fresh isolate's first large request: the engine started on a small image (module, model from the
    // bucket), its code not yet optimised for a page (V8 compiles it during the case: included, once).
    await post("plain-100");
    await new Promise((r) => setTimeout(r, 500));
    const pid = workerdPid(server.group!);
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    const before = status(pid, "VmRSS");
    const r = await post(name);
    const peak = status(pid, "VmHWM") - before;
    return `| ${name} | ${kb(r.bytes)} | ${r.answer} | ${r.ms} ms | +${peak.toFixed(0)} MB |`;
  } finally {
    await server.stop();
  }
}

async function workerdRuns(): Promise<void> {
  console.log(
    "\nwrangler dev (workerd), POST /v1/extract?ocr=true, peak resident memory of workerd:\n",
  );
  console.log("| input | size | answer | time | workerd peak above before |");
  console.log("|---|---:|---|---:|---:|");
  const named = process.argv.slice(2).filter((a) => !a.startsWith("-"));
  for (const name of named.length > 0 ? named : AUDIT) console.log(await workerdCase(name));
}

try {
  if (!process.argv.includes("--workerd-only"))
    printNode(await ocrProbe(Object.keys(OCR_CASES), dir));
  if (!process.argv.includes("--node-only")) await workerdRuns();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Per-format extraction speed, measured in one run on this machine: `node bench/extract.ts`.
 * Prints CPU ms per page (PDF), per 1,000 rows (XLSX), per MB of XML (DOCX) and per MB of input, each the
 * median of interleaved rounds, and every format's CPU cost per character of text produced relative to PDF in
 * the same rounds (absolute figures vary by machine and load; the ratios are what carries over).
 */
import { unzipSync } from "fflate";
import {
  type Attachment,
  type ExtractOptions,
  extractText,
  probeAttachment,
} from "../src/extract/entry.ts";
import { docx, gridXlsx, para, table } from "../test/fixtures/office-writer.ts";
import { textPdf } from "../test/fixtures/pdf-writer.ts";

const MB = 1024 * 1024;
const enc = new TextEncoder();

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

interface Sample {
  wall: number;
  cpu: number;
  chars: number;
}

/** One extraction: wall time and process CPU time (all threads, so zlib's pool counts too), in ms. */
async function once(attachment: Attachment, options: ExtractOptions): Promise<Sample> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await extractText(attachment, options);
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000, chars: r.text.length };
}

const DOCX_PARAGRAPHS = 4000;
const SENTENCE =
  "The quick brown fox jumps over the lazy dog while the invoice total stays at 1,250.00 EUR. ";
const PDF_PAGES = 50;
const pdfBytes = textPdf(
  Array.from({ length: PDF_PAGES }, (_, p) =>
    Array.from({ length: 40 }, (_, l) => `p${p + 1} l${l + 1} ${SENTENCE.slice(0, 70)}`),
  ),
);
const docxBytes = docx(
  Array.from({ length: DOCX_PARAGRAPHS }, (_, i) => para(`${i + 1}. ${SENTENCE}${SENTENCE}`)).join(
    "",
  ) + table(Array.from({ length: 1000 }, (_, r) => [`row ${r}`, `${r * 3}`, `${r % 7}`, "note"])),
);
const XLSX_ROWS = 20_000;
const xlsxBytes = gridXlsx(XLSX_ROWS, 10);
const html = enc.encode(
  `<html><body>${Array.from({ length: 6000 }, (_, i) => `<div class="row"><h3>Item ${i}</h3><p>${SENTENCE}<b>bold</b> &amp; <a href="#x">link</a></p><ul><li>a</li><li>b</li></ul></div>`).join("")}</body></html>`,
);
const csv = enc.encode(
  Array.from(
    { length: 100_000 },
    (_, i) => `${i},"name ${i}",${(i * 1.5).toFixed(2)},${SENTENCE.slice(0, 40)}`,
  ).join("\n"),
);

/** Inflated size of a ZIP's parts: what the XML scanner actually reads. */
const inflatedMb = (zip: Uint8Array): number =>
  Object.values(unzipSync(zip)).reduce((n, b) => n + b.length, 0) / MB;
const NO_CAPS: ExtractOptions = {
  max_pages: 10_000,
  max_chars: 50_000_000,
  max_rows: 1_000_000,
  max_cells: 10_000_000,
};

const cases: { name: string; attachment: Attachment; unit?: { label: string; count: number } }[] = [
  { name: "text/csv", attachment: { data: csv, media_type: "text/csv" } },
  { name: "html", attachment: { data: html, media_type: "text/html" } },
  {
    name: "pdf",
    attachment: { data: pdfBytes, media_type: "application/pdf" },
    unit: { label: "page", count: PDF_PAGES },
  },
  {
    name: "docx",
    attachment: {
      data: docxBytes,
      media_type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    },
    unit: { label: "MB xml", count: inflatedMb(docxBytes) },
  },
  {
    name: "xlsx",
    attachment: {
      data: xlsxBytes,
      media_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    },
    unit: { label: "1k rows", count: XLSX_ROWS / 1000 },
  },
];

// Rounds interleave the formats, so a change in machine load hits all of them alike; ratios are taken
// within each round (against plain-text decoding) and their median reported.
const ROUNDS = 9;
for (const c of cases) await once(c.attachment, NO_CAPS); // warm-up: pdf.js import, JIT
const samples = cases.map(() => [] as Sample[]);
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < cases.length; i++)
    samples[i]!.push(await once(cases[i]!.attachment, NO_CAPS));
}
// Reference: PDF, the format the issue measured in workerd. The comparable quantity across formats is the
// CPU cost per character of text produced (per input MB compares different things: compressed XML, PDF).
const baseIndex = cases.findIndex((c) => c.name === "pdf");
const rows = cases.map((c, i) => {
  const mb = (c.attachment as { data: Uint8Array }).data.length / MB;
  const s = samples[i]!;
  const cpu = median(s.map((x) => x.cpu));
  const ratio = median(
    s.map(
      (x, r) => x.cpu / x.chars / (samples[baseIndex]![r]!.cpu / samples[baseIndex]![r]!.chars),
    ),
  );
  return {
    name: c.name,
    mb,
    wall: median(s.map((x) => x.wall)),
    cpu,
    perMb: cpu / mb,
    usPerKChar: (cpu * 1000) / (s[0]!.chars / 1000),
    ratio,
    chars: s[0]!.chars,
    ...(c.unit ? { perUnit: `${(cpu / c.unit.count).toFixed(2)} ms/${c.unit.label}` } : {}),
  };
});

// The probe, for scale: it reads magic bytes and, for ZIPs, the central directory.
const probeRuns = 2000;
const t0 = performance.now();
for (let i = 0; i < probeRuns; i++) probeAttachment({ data: xlsxBytes });
const probeUs = ((performance.now() - t0) / probeRuns) * 1000;

console.log(
  `extraction speed (node ${process.version}; median of ${ROUNDS} interleaved rounds; caps lifted; CPU ms = process CPU time)\n`,
);
console.log(
  "format     input MB   wall ms    CPU ms   CPU ms/MB   CPU per unit         out chars   CPU µs/1k chars   vs pdf",
);
for (const r of rows) {
  console.log(
    `${r.name.padEnd(10)} ${r.mb.toFixed(2).padStart(8)} ${r.wall.toFixed(1).padStart(9)} ${r.cpu.toFixed(1).padStart(9)} ${r.perMb.toFixed(1).padStart(11)}   ${(r.perUnit ?? "").padEnd(18)} ${String(r.chars).padStart(10)}   ${r.usPerKChar.toFixed(1).padStart(15)}   ${r.ratio.toPrecision(2).padStart(6)}×`,
  );
}
console.log(
  `\ninputs: pdf ${PDF_PAGES} pages × 40 lines; docx ${DOCX_PARAGRAPHS} paragraphs + a 1,000-row table (${inflatedMb(docxBytes).toFixed(1)} MB of XML); xlsx ${XLSX_ROWS} rows × 10 columns (${inflatedMb(xlsxBytes).toFixed(1)} MB of XML)`,
);
console.log(
  `\nprobe (xlsx, ${(xlsxBytes.length / MB).toFixed(2)} MB): ${probeUs.toFixed(1)} µs per call`,
);

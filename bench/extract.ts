/**
 * Per-format extraction speed, measured in one run on this machine: `node bench/extract.ts`.
 * Prints ms per page (PDF), per 1,000 rows (XLSX) and per MB of input, each the median of several runs, and
 * every format's throughput relative to plain-text decoding in the same run (absolute figures vary by
 * machine; the ratios are what carries over).
 */
import { unzipSync } from "fflate";
import { extractText, probeAttachment, type Attachment } from "../src/lib.ts";
import { docx, para, table, gridXlsx } from "../test/fixtures/office-writer.ts";
import { textPdf } from "../test/fixtures/pdf-writer.ts";

const MB = 1024 * 1024;
const enc = new TextEncoder();

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function time(attachment: Attachment, runs: number, options = {}): Promise<{ ms: number; chars: number }> {
  let chars = 0;
  await extractText(attachment, options); // warm-up (pdf.js import, JIT)
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const r = await extractText(attachment, options);
    samples.push(performance.now() - t0);
    chars = r.text.length;
  }
  return { ms: median(samples), chars };
}

const DOCX_PARAGRAPHS = 4000;
const SENTENCE = "The quick brown fox jumps over the lazy dog while the invoice total stays at 1,250.00 EUR. ";
const PDF_PAGES = 50;
const pdfBytes = textPdf(Array.from({ length: PDF_PAGES }, (_, p) => Array.from({ length: 40 }, (_, l) => `p${p + 1} l${l + 1} ${SENTENCE.slice(0, 70)}`)));
const docxBytes = docx(
  Array.from({ length: DOCX_PARAGRAPHS }, (_, i) => para(`${i + 1}. ${SENTENCE}${SENTENCE}`)).join("") +
    table(Array.from({ length: 1000 }, (_, r) => [`row ${r}`, `${r * 3}`, `${r % 7}`, "note"])),
);
const XLSX_ROWS = 20_000;
const xlsxBytes = gridXlsx(XLSX_ROWS, 10);
const html = enc.encode(`<html><body>${Array.from({ length: 6000 }, (_, i) => `<div class="row"><h3>Item ${i}</h3><p>${SENTENCE}<b>bold</b> &amp; <a href="#x">link</a></p><ul><li>a</li><li>b</li></ul></div>`).join("")}</body></html>`);
const csv = enc.encode(Array.from({ length: 100_000 }, (_, i) => `${i},"name ${i}",${(i * 1.5).toFixed(2)},${SENTENCE.slice(0, 40)}`).join("\n"));

/** Inflated size of a ZIP's parts: what the XML scanner actually reads. */
const inflatedMb = (zip: Uint8Array): number => Object.values(unzipSync(zip)).reduce((n, b) => n + b.length, 0) / MB;
const NO_CAPS = { max_pages: 10_000, max_chars: 50_000_000, max_rows: 1_000_000, max_cells: 10_000_000 };

const cases: { name: string; attachment: Attachment; unit?: { label: string; count: number }; runs: number }[] = [
  { name: "text/csv", attachment: { data: csv, media_type: "text/csv" }, runs: 9 },
  { name: "html", attachment: { data: html, media_type: "text/html" }, runs: 9 },
  { name: "pdf", attachment: { data: pdfBytes, media_type: "application/pdf" }, unit: { label: "page", count: PDF_PAGES }, runs: 5 },
  { name: "docx", attachment: { data: docxBytes, media_type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document" }, unit: { label: "MB xml", count: inflatedMb(docxBytes) }, runs: 7 },
  { name: "xlsx", attachment: { data: xlsxBytes, media_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" }, unit: { label: "1k rows", count: XLSX_ROWS / 1000 }, runs: 5 },
];

const rows: { name: string; mb: number; ms: number; perMb: number; perUnit?: string; chars: number }[] = [];
for (const c of cases) {
  const bytes = (c.attachment as { data: Uint8Array }).data.length;
  const { ms, chars } = await time(c.attachment, c.runs, NO_CAPS);
  rows.push({ name: c.name, mb: bytes / MB, ms, perMb: ms / (bytes / MB), chars, ...(c.unit ? { perUnit: `${(ms / c.unit.count).toFixed(2)} ms/${c.unit.label}` } : {}) });
}

// The probe, for scale: it reads magic bytes and, for ZIPs, the central directory.
const probeRuns = 2000;
const t0 = performance.now();
for (let i = 0; i < probeRuns; i++) probeAttachment({ data: xlsxBytes });
const probeUs = ((performance.now() - t0) / probeRuns) * 1000;

const base = rows.find((r) => r.name === "text/csv")!;
console.log(`extraction speed (node ${process.version}, median of runs; caps lifted)\n`);
console.log("format     input MB   ms total    ms/MB   per unit            out chars   ×text/csv time per MB");
for (const r of rows) {
  console.log(
    `${r.name.padEnd(10)} ${r.mb.toFixed(2).padStart(8)} ${r.ms.toFixed(1).padStart(10)} ${r.perMb.toFixed(1).padStart(8)}   ${(r.perUnit ?? "").padEnd(18)} ${String(r.chars).padStart(10)}   ${(r.perMb / base.perMb).toFixed(1).padStart(6)}×`,
  );
}
console.log(`\ninputs: pdf ${PDF_PAGES} pages × 40 lines; docx ${DOCX_PARAGRAPHS} paragraphs + a 1,000-row table (${inflatedMb(docxBytes).toFixed(1)} MB of XML); xlsx ${XLSX_ROWS} rows × 10 columns (${inflatedMb(xlsxBytes).toFixed(1)} MB of XML)`);
console.log(`\nprobe (xlsx, ${(xlsxBytes.length / MB).toFixed(2)} MB): ${probeUs.toFixed(1)} µs per call`);

/**
 * The attachment policy's cost in CPU and its effect in tokens, measured in one run: `node bench/attachments.ts`.
 * A conversation opens with a 40-page PDF and a 1920×1080 screenshot, then goes on for a few turns; each turn
 * is compacted with attachment_policy "extract" and, on a copy, "native". Prints CPU per turn (median of
 * interleaved rounds) and the ratios that carry over to other machines: the first turn (extraction) and a
 * sticky turn against the same request under "native", and the tokens the policy saves.
 */

import { extractText } from "../src/extract/extract.ts";
import { compact } from "../src/lib.ts";
import { MemoryStore } from "../src/store/memory.ts";
import { png } from "../test/fixtures/image-writer.ts";
import { textPdf } from "../test/fixtures/pdf-writer.ts";

const ROUNDS = 7;
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const pages = Array.from({ length: 40 }, (_, p) =>
  Array.from(
    { length: 40 },
    (_, l) => `Page ${p + 1} line ${l + 1}: revenue, costs and margins for the quarter.`,
  ),
);
const pdf = Buffer.from(textPdf(pages)).toString("base64");
const screenshot = Buffer.from(png(1920, 1080)).toString("base64");

function request(turns: number, round: number): string {
  const messages: unknown[] = [
    {
      role: "user",
      content: [
        { type: "text", text: `Summarise the report (round ${round}).` },
        {
          type: "document",
          source: { type: "base64", media_type: "application/pdf", data: pdf },
          title: "q3.pdf",
        },
        { type: "image", source: { type: "base64", media_type: "image/png", data: screenshot } },
      ],
    },
  ];
  for (let k = 0; k < turns; k++)
    messages.push(
      { role: "assistant", content: `answer ${k}` },
      { role: "user", content: `question ${k}` },
    );
  return JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 256, messages });
}

// pdf.js is loaded by the first PDF of an isolate: measured once, apart.
const c0 = cpu();
await extractText(
  { data: Buffer.from(pdf, "base64"), media_type: "application/pdf" },
  { max_pages: 1 },
);
const coldLoad = cpu() - c0;

const first: number[] = [];
const sticky: number[] = [];
const native: number[] = [];
let saved = { native: 0, sent: 0, usd: 0 };
for (let round = 0; round < ROUNDS; round++) {
  // A fresh store per round: the first turn really extracts (no cached extraction), later turns replay.
  const store = new MemoryStore();
  const on = { tool_result_compaction_enabled: true, attachment_policy: "extract" };
  let t = cpu();
  await compact({ request: request(0, round), session: "b", store, config: on });
  first.push(cpu() - t);
  const later = request(2, round);
  t = cpu();
  const out = await compact({ request: later, session: "b", store, config: on });
  sticky.push(cpu() - t);
  const a = out.report.attachments!;
  saved = { native: a.native_tokens, sent: a.sent_tokens, usd: a.saved_usd };
  t = cpu();
  await compact({
    request: later,
    session: "n",
    store: new MemoryStore(),
    config: { tool_result_compaction_enabled: true },
  });
  native.push(cpu() - t);
}

// What a turn pays per MB of attachments it only has to recognise: each block's id hashes its base64 once.
const blob = "QUJD".repeat(1_000_000); // 4 MB of base64 in one (hot) image block
const withBlob = (turns: number) => {
  const r = JSON.parse(request(turns, 0)) as { messages: { content: unknown }[] };
  (r.messages[0]!.content as unknown[]).push({
    type: "image",
    source: { type: "base64", media_type: "image/png", data: blob },
  });
  return JSON.stringify(r);
};
const hashStore = new MemoryStore();
const hot = {
  tool_result_compaction_enabled: true,
  attachment_policy: "extract",
  attachment_image_hot_turns: 1000,
};
await compact({ request: withBlob(0), session: "h", store: hashStore, config: hot });
const perMb: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const req = withBlob(1 + round);
  let t = cpu();
  await compact({ request: req, session: "h", store: hashStore, config: hot });
  const on = cpu() - t;
  t = cpu();
  await compact({
    request: req,
    session: "h2",
    store: new MemoryStore(),
    config: { tool_result_compaction_enabled: true },
  });
  perMb.push((on - (cpu() - t)) / (blob.length / 1e6));
}

const [f, s, n] = [median(first), median(sticky), median(native)];
console.log(
  `request: 40-page PDF (${(pdf.length / 1e6).toFixed(2)} MB base64) + 1920x1080 PNG, Sonnet 4.5 prices; median of ${ROUNDS} rounds, CPU ms`,
);
console.log(`pdf.js first load in this process          ${coldLoad.toFixed(1)} ms`);
console.log(
  `turn 0, "extract" (extracts the PDF)       ${f.toFixed(1)} ms   = ${(f / n).toFixed(1)}x the same request under "native"`,
);
console.log(
  `turn 2, "extract" (sticky: nothing parsed) ${s.toFixed(1)} ms   = ${(s / n).toFixed(2)}x "native" (${n.toFixed(1)} ms)`,
);
console.log(
  `recognising blocks on a turn with nothing new: ≈ ${median(perMb).toFixed(1)} ms per MB of base64 (the id hash)`,
);
console.log(
  `tokens on turn 2: native ≈ ${saved.native}, sent ≈ ${saved.sent} (${((1 - saved.sent / saved.native) * 100).toFixed(0)}% less), ≈ $${saved.usd.toFixed(4)} saved this turn`,
);

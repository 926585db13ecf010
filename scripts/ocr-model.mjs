// Puts the OCR model (English trained data, gzipped as @tesseract.js-data/eng ships it) where the Worker reads
// it: the LEDGER bucket's key ocr/eng.traineddata.
//   node scripts/ocr-model.mjs --remote                   the deployed bucket (`npm run ocr:setup`)
//   node scripts/ocr-model.mjs --local [--persist-to D]   the local bucket of `npm start` (default .wrangler/state);
//                                                         skipped when already done for this model file
// --bucket NAME overrides the bucket name (default edge-offload-ledger, as in wrangler.toml).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i === -1 ? fallback : args[i + 1];
};
const remote = args.includes("--remote");
if (remote === args.includes("--local")) {
  console.error(
    "usage: node scripts/ocr-model.mjs --remote | --local [--persist-to DIR] [--bucket NAME]",
  );
  process.exit(2);
}
const bucket = opt("--bucket", "edge-offload-ledger");
const persist = opt("--persist-to", ".wrangler/state");
let file;
try {
  file = join(
    createRequire(import.meta.url).resolve("@tesseract.js-data/eng/package.json"),
    "../4.0.0_best_int/eng.traineddata.gz",
  );
} catch {
  console.error(
    "edge-offload: @tesseract.js-data/eng is not installed (npm install): OCR stays without a model",
  );
  process.exit(remote ? 1 : 0);
}
const stamp = `${file}:${statSync(file).size}`;
const marker = join(persist, "ocr-model.stamp");
if (!remote && existsSync(marker) && readFileSync(marker, "utf8") === stamp) process.exit(0);

const wrangler = join(
  createRequire(import.meta.url).resolve("wrangler/package.json"),
  "../bin/wrangler.js",
);
const put = spawnSync(
  process.execPath,
  [
    wrangler,
    "r2",
    "object",
    "put",
    `${bucket}/ocr/eng.traineddata`,
    "--file",
    file,
    ...(remote ? ["--remote"] : ["--local", "--persist-to", persist]),
  ],
  { stdio: remote ? "inherit" : "pipe", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
);
if (put.status !== 0) {
  if (!remote) process.stderr.write(put.stderr ?? "");
  console.error("edge-offload: the OCR model could not be uploaded");
  process.exit(1);
}
if (!remote) {
  mkdirSync(persist, { recursive: true });
  writeFileSync(marker, stamp);
  console.log(`edge-offload: OCR model seeded in the local bucket (${persist})`);
}

/**
 * `npm run bench`: every benchmark, each printing ratios measured in this same run (the machine is shared and
 * noisy, so absolute times are context, not results). `npm run bench -- transform` runs only the named ones.
 */
import { spawnSync } from "node:child_process";
import { benchAgents } from "./agents.ts";
import { benchAgreement, optionsFrom } from "./agreement.ts";
import { benchAgreementAiSdk } from "./agreement-ai-sdk.ts";
import {
  benchAgreement as benchAgreementReplay,
  optionsFrom as replayOptionsFrom,
} from "./agreement-replay.ts";
import { benchEndingsDraws } from "./endings-draws.ts";
import { benchEndingsExplain } from "./endings-explain.ts";
import { benchEval } from "./eval.ts";
import { benchFormats } from "./formats.ts";
import { benchInProcess } from "./in-process.ts";
import { benchLatency, benchLatencyWorkerd } from "./latency.ts";
import { benchMemory } from "./memory.ts";
import { benchProxy } from "./proxy.ts";
import { benchReplay, type ReplayPart } from "./replay.ts";
import { benchScale } from "./scale-sim.ts";
import { benchStores } from "./stores.ts";
import { benchTransform } from "./transform.ts";

/** Benchmarks written as scripts run in a child process of their own. */
async function script(file: string): Promise<void> {
  const r = spawnSync(
    process.execPath,
    [
      "--experimental-strip-types",
      "--disable-warning=ExperimentalWarning",
      new URL(file, import.meta.url).pathname,
    ],
    { stdio: "inherit" },
  );
  if (r.status !== 0) throw new Error(`${file} failed`);
}

const benches: Record<string, () => Promise<unknown>> = {
  transform: () => benchTransform(),
  formats: () => benchFormats(),
  memory: () => benchMemory(),
  proxy: () => benchProxy(),
  "in-process": () => benchInProcess(),
  toolkit: () => script("toolkit.ts"),
  extract: () => script("extract.ts"),
  // A second serve process reading what the first extracted, from each store (docs/stores.md).
  "extract-cache": () => script("extract-cache.ts"),
  attachments: () => script("attachments.ts"),
  hardening: () => script("hardening.ts"),
  ocr: () => script("ocr.ts"),
  // OCR's hostile inputs in a 128 MB Node child and under wrangler dev (issue 24's table).
  "ocr-hostile": () => script("ocr-hostile.ts"),
  // `--only=main|switches|cold|endings|halves`: one part of it; `--no-usage`: the gate never calibrated.
  replay: () => {
    const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length);
    return benchReplay({
      markdown: true,
      usage: !process.argv.includes("--no-usage"),
      ...(only === undefined ? {} : { only: only as ReplayPart }),
    });
  },
  // Why the sessions edge-offload makes dearer are dearer, call by call (realistic endings).
  "endings-explain": () => benchEndingsExplain(process.argv),
  // The sessions the defaults make dearer as a share over many draws of the realistic endings.
  "endings-draws": () => benchEndingsDraws(process.argv),
  agreement: () => benchAgreement(optionsFrom(process.argv)),
  "agreement-replay": () => benchAgreementReplay(replayOptionsFrom(process.argv)),
  // The same agreement for the AI SDK middleware, in process (@ai-sdk/anthropic and @ai-sdk/openai).
  "agreement-ai-sdk": () => benchAgreementAiSdk(process.argv),
  agents: () => benchAgents(process.argv),
  eval: () => benchEval(),
  scale: async () => benchScale(),
  latency: async () => {
    await benchLatency();
    benchLatencyWorkerd();
  },
  // The SessionDO's rows written per steady turn, in workerd (what Durable Objects bill per row).
  rows: async () => benchLatencyWorkerd("bench/workerd/rows.test.ts"),
  stores: () => benchStores(),
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
for (const name of wanted.length > 0 ? wanted : Object.keys(benches)) {
  const run = benches[name];
  if (run === undefined) {
    console.error(
      `unknown bench ${JSON.stringify(name)}; known: ${Object.keys(benches).join(", ")}`,
    );
    process.exit(2);
  }
  console.log(`\n== ${name} ==`);
  await run();
}

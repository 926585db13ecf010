/**
 * The agreement bench: does the replay's prediction hold for the bytes the proxy really sends, billed the way
 * the provider bills? A fixed sample of the swe and large corpus files is replayed call by call through the
 * real proxy (the Worker in workerd, wrangler's programmatic dev server) to the billing fake, with offload off
 * (`none`), with the product's defaults (`edge-offload`) and with everything on (`edge-offload+all`), for the
 * cached and the uncached client, the fake's clock moving 30 s per call. It prints:
 * - the fake's bill against the replay's prediction for the same sessions and config (target: within 3%), and
 *   the gap broken down step by step (bytes, cache rules one at a time, tokenizer);
 * - the savings the proxy claimed (`x-offload-summary` saved_usd summed over calls) against the difference
 *   between the off and on bills (target: within 5%), with what the claim leaves out.
 * `npm run bench -- agreement-replay` (about 5 minutes); `--markdown` adds the README tables.
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { ratesFor, resolveModel, usd } from "../src/core/pricing.ts";
import { CHARS_PER_TOKEN, type ContentKind, detectKind } from "../src/core/tokens.ts";
import { textOfResult } from "../src/replay/blocks.ts";
import { requestFor } from "../src/replay/run.ts";
import { parseSessions } from "../src/replay/sessions.ts";
import type { Client, ReplaySession } from "../src/replay/types.ts";
import { estimateCounter } from "../test/support/agreement/estimates.ts";
import {
  type AgreementFile,
  type AgreementRow,
  API_LEDGER,
  LEDGERS,
  runAgreement,
} from "../test/support/agreement/run.ts";
import { promptOf } from "../test/support/billing/anthropic-prompt.ts";
import { type BillTokens, promptTokens } from "../test/support/billing/bill.ts";
import { tokenizerCounter } from "../test/support/billing/counter.ts";
import { countTokens } from "../test/support/billing/tokenizer.ts";
import { corpusFile } from "./lib/corpus.ts";
import { markdownTable, textTable } from "./lib/table.ts";

const MODEL = "claude-sonnet-4-6";
const POLICIES = ["none", "edge-offload", "edge-offload+all"];
const CLIENTS: Client[] = ["cached", "uncached"];
/** Every n-th session of each file, from the first: a fixed sample (5 swe sessions, 8 large ones). */
const EVERY: Record<string, number> = { swe: 25, large: 5 };
const GAP_SECONDS = 30;

function sample(name: "swe" | "large"): ReplaySession[] {
  const all = parseSessions(gunzipSync(readFileSync(corpusFile(name))).toString("utf8"), name);
  return all.filter((_, i) => i % EVERY[name]! === 0);
}

/** The columns that name a row. */
const KEYS = ["file", "client", "config"];

const pct = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;
const money = (x: number) => `$${x.toFixed(3)}`;

/** Dollars by rate for some tokens (Sonnet 4.6 has no long-context tier, so rates do not depend on size). */
function dollars(t: BillTokens): Record<keyof BillTokens, number> {
  const r = ratesFor(resolveModel(MODEL)!, promptTokens(t));
  return {
    input: usd(t.input, r.input),
    cache_read: usd(t.cache_read, r.cache_read),
    cache_write_5m: usd(t.cache_write_5m, r.cache_write_5m),
    cache_write_1h: usd(t.cache_write_1h, r.cache_write_1h),
    output: usd(t.output, r.output),
  };
}

/** The bill against the prediction, and the steps between them as shares of the prediction. */
function agreementTable(rows: AgreementRow[]): { head: string[]; rows: string[][] } {
  const names = Object.keys(LEDGERS);
  const head = [
    ...KEYS,
    "calls (hops)",
    "replay $",
    "bill $",
    "bill vs replay",
    "bytes sent",
    "replay sim → block model",
    ...names.slice(1),
    "tokenizer: prompt",
    "tokenizer: output",
  ];
  const out = rows.map((r) => {
    const base = r.replay.usd;
    const steps: number[] = [r.sent.usd - base];
    let prev = r.sent.usd;
    for (const n of names) {
      steps.push(r.ledgers[n]!.usd - prev);
      prev = r.ledgers[n]!.usd;
    }
    const outDelta = dollars(r.fake.tokens).output - dollars(r.ledgers[API_LEDGER]!.tokens).output;
    steps.push(r.fake.usd - prev - outDelta, outDelta);
    return [
      r.file,
      r.client,
      r.policy,
      `${r.provider_calls} (${r.hops})`,
      money(base),
      money(r.fake.usd),
      pct(r.fake.usd / base - 1),
      ...steps.map((s) => pct(s / base)),
    ];
  });
  return { head, rows: out };
}

/** The short form: the bill against the prediction, the cache rules' share and the tokenizer's. */
function summaryTable(rows: AgreementRow[]): { head: string[]; rows: string[][] } {
  const head = [...KEYS, "replay $", "billed $", "billed vs replay", "cache rules", "tokenizer"];
  return {
    head,
    rows: rows.map((r) => {
      const rules = r.ledgers[API_LEDGER]!.usd - r.sent.usd;
      const tokenizer = r.fake.usd - r.ledgers[API_LEDGER]!.usd;
      return [
        r.file,
        r.client,
        r.policy,
        r.replay.usd.toFixed(3),
        r.fake.usd.toFixed(3),
        pct(r.fake.usd / r.replay.usd - 1),
        pct(rules / r.replay.usd),
        pct(tokenizer / r.replay.usd),
      ];
    }),
  };
}

/** Claimed savings against the bills' difference, and what the claim leaves out (in the last ledger). */
function savingsTable(rows: AgreementRow[]): { head: string[]; rows: string[][] } {
  const head = [
    ...KEYS,
    "bill off − on $",
    "claimed $",
    "claimed vs bills",
    "report est. $",
    "est. vs bills",
    "report billed $",
    "billed vs bills",
    "report bill vs bill",
    "counterfactual vs bill off",
    "replay's saving $",
    "ledger saving $",
    "Δ reads",
    "Δ writes",
    "Δ input",
    "Δ output",
    "hop calls $",
  ];
  const out: string[][] = [];
  for (const r of rows) {
    if (r.policy === "none") continue;
    const off = rows.find((x) => x.file === r.file && x.client === r.client && x.policy === "none");
    if (off === undefined) continue;
    const actual = off.fake.usd - r.fake.usd;
    const [a, b] = [
      dollars(off.ledgers[API_LEDGER]!.tokens),
      dollars(r.ledgers[API_LEDGER]!.tokens),
    ];
    const ledgerSaving = off.ledgers[API_LEDGER]!.usd - r.ledgers[API_LEDGER]!.usd;
    const vs = (x: number) => (actual > 0 ? pct(x / actual - 1) : "—");
    out.push([
      r.file,
      r.client,
      r.policy,
      money(actual),
      money(r.claimed_saved_usd),
      vs(r.claimed_saved_usd),
      money(r.report.saved_usd),
      vs(r.report.saved_usd),
      money(r.report.billed_saved_usd),
      vs(r.report.billed_saved_usd),
      pct(r.report.billed_usd / r.fake.usd - 1),
      pct(r.report.counterfactual_usd / off.fake.usd - 1),
      money(off.replay.usd - r.replay.usd),
      money(ledgerSaving),
      money(a.cache_read - b.cache_read),
      money(a.cache_write_5m + a.cache_write_1h - b.cache_write_5m - b.cache_write_1h),
      money(a.input - b.input),
      money(a.output - b.output),
      money(r.hop_usd.ledger),
    ]);
  }
  return { head, rows: out };
}

/**
 * The estimates' prompt-token error against the fake's counts, as the proxy's calibration saw it (the
 * tenant's, learned over the run's sessions in order): before calibration, and with the ratios known
 * before each turn once warm; and the ratios it ended with.
 */
function calibrationTable(rows: AgreementRow[]): { head: string[]; rows: string[][] } {
  const head = [
    ...KEYS,
    "turns",
    "error before",
    "error after",
    "bias before",
    "bias after",
    "ratios",
  ];
  const p = (x: number | null | undefined) => (x === null || x === undefined ? "—" : pct(x));
  return {
    head,
    rows: rows
      .filter((r) => r.calibration !== null)
      .map((r) => {
        const c = r.calibration!;
        return [
          r.file,
          r.client,
          r.policy,
          String(c.turns),
          p(c.error_raw),
          p(c.error_calibrated),
          p(c.bias_raw),
          p(c.bias_calibrated),
          Object.entries(c.ratios)
            .sort((a, b) => a[0].localeCompare(b[0]))
            .map(([k, v]) => `${k} ${v.toFixed(2)}`)
            .join(", "),
        ];
      }),
  };
}

/** Tokens the fake counted per token the replay estimated, on what was sent (prompt) and answered (output). */
function tokenTable(rows: AgreementRow[]): { head: string[]; rows: string[][] } {
  const head = [...KEYS, "prompt tokens: fake / estimate", "output: fake / estimate"];
  return {
    head,
    rows: rows.map((r) => {
      const est = r.ledgers[API_LEDGER]!.tokens;
      return [
        r.file,
        r.client,
        r.policy,
        (promptTokens(r.fake.tokens) / promptTokens(est)).toFixed(3),
        (r.fake.tokens.output / est.output).toFixed(3),
      ];
    }),
  };
}

/** Chars per token of the sample's tool results by content kind: the estimate's table against the fake's tokenizer. */
function kindTable(files: AgreementFile[]): { head: string[]; rows: string[][] } {
  const by = new Map<string, { chars: number; fake: number }>();
  for (const f of files)
    for (const s of f.sessions)
      for (const m of s.messages) {
        if (typeof m.content === "string") continue;
        for (const b of m.content) {
          if (b.type !== "tool_result") continue;
          const text = textOfResult(b.content);
          const key = `${f.name}\u0000${detectKind(text)}`;
          const e = by.get(key) ?? { chars: 0, fake: 0 };
          e.chars += text.length;
          e.fake += countTokens(text);
          by.set(key, e);
        }
      }
  const head = ["file", "kind", "chars", "estimate: chars/token", "fake: chars/token"];
  const rows = [...by.entries()]
    .filter(([, e]) => e.chars >= 10_000)
    .sort((a, b) => b[1].chars - a[1].chars)
    .map(([key, e]) => {
      const [file, kind] = key.split("\u0000") as [string, ContentKind];
      return [
        file,
        kind,
        e.chars.toLocaleString("en-US"),
        CHARS_PER_TOKEN[kind].toFixed(1),
        (e.chars / e.fake).toFixed(2),
      ];
    });
  return { head, rows };
}

/**
 * Where the token counts differ: the fake's tokens and the replay's estimates by part of the prompt (framing
 * and the tool-use system prompt included), each block weighted by the calls that send it (offload off).
 */
function sectionTable(files: AgreementFile[]): { head: string[]; rows: string[][] } {
  const rows: string[][] = [];
  for (const f of files) {
    const by = new Map<string, { fake: number; est: number }>();
    for (const s of f.sessions) {
      const last = s.calls[s.calls.length - 1]!;
      const request = requestFor(s, last, MODEL, "uncached") as unknown as Record<string, unknown>;
      const prompt = promptOf(request);
      const fake = tokenizerCounter.prompt(prompt, request);
      const est = estimateCounter.prompt(prompt, request);
      prompt.blocks.forEach((b, i) => {
        const at = Number(/^messages\[(\d+)\]/.exec(b.path)?.[1] ?? -1);
        const weight = s.calls.filter((n) => n > at).length;
        const part =
          b.section === "messages" ? `${b.role} ${b.type === "text" ? "text" : b.type}` : b.section;
        const e = by.get(part) ?? { fake: 0, est: 0 };
        e.fake += fake[i]! * weight;
        e.est += est[i]! * weight;
        by.set(part, e);
      });
    }
    const total = [...by.values()].reduce((n, e) => n + e.est, 0);
    for (const [part, e] of [...by.entries()].sort((a, b) => b[1].est - a[1].est))
      rows.push([
        f.name,
        part,
        `${((e.est / total) * 100).toFixed(1)}%`,
        (e.fake / e.est).toFixed(3),
      ]);
  }
  return { head: ["file", "part of the prompt", "share (estimate)", "fake / estimate"], rows };
}

function print(
  tables: readonly (readonly [string, { head: string[]; rows: string[][] }])[],
  md: boolean,
) {
  for (const [title, t] of tables) console.log(`\n${title}\n${textTable(t.head, t.rows, 3)}`);
  if (md)
    for (const [title, t] of tables)
      console.log(`\n${title}\n\n${markdownTable(t.head, t.rows, 3)}`);
}

export interface AgreementBenchOptions {
  markdown?: boolean;
  /** The token-count tables alone (no proxy run; a second or two). */
  tokensOnly?: boolean;
  /** Seconds between calls on the fake's clock (default 30): larger gaps let cache entries expire. */
  gapSeconds?: number;
  /** Some of the files and clients only. */
  files?: ("swe" | "large")[];
  clients?: Client[];
}

/** Options from the command line: `--markdown`, `--tokens`, `--gap=240`, `--files=large`, `--clients=cached`. */
export function optionsFrom(argv: readonly string[]): AgreementBenchOptions {
  const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
  const gap = value("gap");
  return {
    markdown: argv.includes("--markdown"),
    tokensOnly: argv.includes("--tokens"),
    ...(gap === undefined ? {} : { gapSeconds: Number(gap) }),
    ...(value("files") === undefined
      ? {}
      : { files: value("files")!.split(",") as ("swe" | "large")[] }),
    ...(value("clients") === undefined
      ? {}
      : { clients: value("clients")!.split(",") as Client[] }),
  };
}

export async function benchAgreement(opts: AgreementBenchOptions = {}): Promise<AgreementRow[]> {
  const t0 = performance.now();
  const gapSeconds = opts.gapSeconds ?? GAP_SECONDS;
  const files: AgreementFile[] = (opts.files ?? ["swe", "large"]).map((name) => ({
    name,
    sessions: sample(name),
  }));
  const tokenTables = [
    ["Prompt tokens by part", sectionTable(files)],
    ["Tool results by kind", kindTable(files)],
  ] as const;
  if (opts.tokensOnly) {
    print(tokenTables, opts.markdown === true);
    return [];
  }
  const rows = await runAgreement({
    files,
    policies: POLICIES,
    clients: opts.clients ?? CLIENTS,
    model: MODEL,
    gapSeconds,
    log: (l) => console.log(`  ${l}`),
  });
  const mismatches = rows.reduce((n, r) => n + r.usage_mismatches, 0);
  const lost = rows.reduce((n, r) => n + r.lost, 0);
  console.log(
    `\nagreement: ${rows.reduce((n, r) => n + r.provider_calls, 0)} provider calls through the proxy in ${((performance.now() - t0) / 1000).toFixed(0)} s; model ${MODEL}, ${gapSeconds} s between calls; ${mismatches} client answers whose usage differs from the fake's bill, ${lost} lost references`,
  );
  print(
    [
      ["The bill against the replay's prediction", summaryTable(rows)],
      ["Step by step (shares of the prediction)", agreementTable(rows)],
      ["Claimed savings against the bills", savingsTable(rows)],
      ["Calibration (prompt tokens, estimate vs the fake's count)", calibrationTable(rows)],
      ["Token counts", tokenTable(rows)],
      ...tokenTables,
    ],
    opts.markdown === true,
  );
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`)
  await benchAgreement(optionsFrom(process.argv));

/**
 * The agreement bench: does the saving the reports claim match the bills? Each scenario is one kind of client
 * (provider format, cache breakpoints, streaming, history kept, route) driving a fixed sample of corpus
 * sessions (large, swe and api files) through the real Worker (workerd, wrangler's programmatic dev server) to
 * a billing fake of its provider that applies that provider's documented cache rules to the bytes it receives
 * (test/support/billing-fake.ts, its own prices and tokenizer, no code shared with src/). Every session runs
 * three times: offload off (the true counterfactual), on with nothing to change, and on at the defaults.
 *
 * Targets (issue 26): the claimed billed saving (`billed.saved_usd`) within 5% of (bill off − bill on)
 * wherever that saving exceeds 1% of the bill, exactly 0 where nothing changed, never of the wrong sign; the
 * estimate (`saved_usd`) within 15% where the gate fired and usage was measured.
 *
 * `npm run bench -- agreement` (about 10 minutes); `--scenarios=a,b` runs some; `--sessions` prints every
 * session's row; `--markdown` adds the docs tables. `npm run bench -- agreement-replay`: the replay's
 * prediction against the bill (bench/agreement-replay.ts).
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { parseSessions } from "../src/replay/sessions.ts";
import type { ReplaySession } from "../src/replay/types.ts";
import type { Client } from "../test/support/agreement/clients.ts";
import {
  RUN_CONFIG,
  type RunKind,
  runScenario,
  type Scenario,
  type ScenarioRun,
  type SessionRun,
  startEnv,
} from "../test/support/agreement/scenario.ts";
import { BillingFake } from "../test/support/billing-fake.ts";
import { corpusFile } from "./lib/corpus.ts";
import { markdownTable, textTable } from "./lib/table.ts";

type File = "large" | "swe" | "api";
/** The sample: fixed sessions of each file (large ones under 800K chars: every prompt fits 200K tokens). */
const SAMPLE: Record<File, number[]> = { large: [0, 10, 20, 30], swe: [0], api: [0] };
export const MAX_CALLS = 24;

export function sample(): { file: string; session: ReplaySession }[] {
  return (Object.keys(SAMPLE) as File[]).flatMap((file) => {
    const all = parseSessions(gunzipSync(readFileSync(corpusFile(file))).toString("utf8"), file);
    return SAMPLE[file].map((i) => ({ file, session: all[i]! }));
  });
}

const SONNET = "claude-sonnet-4-6";
/** A model that takes the recall tool defined mid-conversation (the inline declaration). */
const OPUS_INLINE = "claude-opus-5-5";
const GPT = "gpt-5.4";
const GPT_WRITES = "gpt-5.6";

function scenarios(sessions: Scenario["sessions"]): Scenario[] {
  const anthropic = (caching: Client["caching"], stream = false, model = SONNET): Client => ({
    format: "anthropic",
    model,
    caching,
    stream,
  });
  const openai = (format: Client["format"], stream = false, model = GPT): Client => ({
    format,
    model,
    caching: "openai",
    stream,
    cacheKey: true,
  });
  const proxy = (name: string, about: string, client: Client, more: Partial<Scenario> = {}) => ({
    name,
    about,
    client,
    route: "proxy" as const,
    maxCalls: MAX_CALLS,
    sessions,
    ...more,
  });
  return [
    proxy("anthropic-last", "Anthropic, breakpoint on the last block", anthropic("last-block")),
    proxy("anthropic-last-stream", "the same, streamed", anthropic("last-block", true)),
    proxy(
      "anthropic-system",
      "Anthropic, breakpoint on the system prompt only",
      anthropic("system"),
    ),
    proxy("anthropic-none", "Anthropic, no breakpoint", anthropic("none")),
    proxy("anthropic-auto", "Anthropic, automatic caching (top-level)", anthropic("auto")),
    proxy("anthropic-1h", "Anthropic, last block, 1-hour TTL", anthropic("last-block-1h")),
    proxy(
      "anthropic-inline",
      "Anthropic, last block, Opus 5.5: the recall tool declared in a system message",
      anthropic("last-block", false, OPUS_INLINE),
    ),
    proxy("anthropic-window", "Anthropic, last block, keeps its last 4 exchanges", {
      ...anthropic("last-block"),
      window: 4,
    }),
    proxy("chat", "OpenAI Chat (gpt-5.4), buffered", openai("openai-chat")),
    proxy(
      "chat-stream",
      "OpenAI Chat, streamed without include_usage",
      openai("openai-chat", true),
    ),
    proxy("chat-writes", "OpenAI Chat, gpt-5.6 (bills cache writes)", {
      ...openai("openai-chat", false, GPT_WRITES),
    }),
    proxy("chat-window", "OpenAI Chat, keeps its last 4 exchanges", {
      ...openai("openai-chat"),
      window: 4,
    }),
    proxy(
      "chat-ending",
      "OpenAI Chat, sessions end 2 calls after the first stub",
      openai("openai-chat"),
      {
        endAfterStub: 2,
      },
    ),
    proxy("responses", "OpenAI Responses, buffered", openai("openai-responses")),
    proxy("responses-stream", "OpenAI Responses, streamed", openai("openai-responses", true)),
    {
      name: "compact-missing",
      about: "Anthropic via the compact route, the stub's turn usage never posted",
      client: anthropic("last-block"),
      route: "compact",
      missingUsage: true,
      maxCalls: MAX_CALLS,
      sessions,
    },
    {
      name: "compact-inline",
      about:
        "Anthropic via the compact route, Opus 5.5, the client sends the betas the summary names",
      client: anthropic("last-block", false, OPUS_INLINE),
      route: "compact",
      sendsBetas: true,
      maxCalls: MAX_CALLS,
      sessions,
    },
    {
      name: "compact-restart",
      about: "Anthropic via the compact route, the Worker restarted halfway",
      client: anthropic("last-block"),
      route: "compact",
      restart: true,
      maxCalls: MAX_CALLS,
      sessions,
    },
  ];
}

const money = (x: number) => `${x < 0 ? "−" : ""}$${Math.abs(x).toFixed(4)}`;
const pct = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}%`;

interface Verdict {
  /** Bill off − bill on, the claim, the estimate. */
  truth: number;
  claimed: number;
  estimate: number;
  bill: number;
  /** The "nothing changed" run: its claim (must be exactly 0) and its bill against off. */
  same_claim: number;
  same_bill_gap: number;
  /** The saving exceeds 1% of the bill: the 5% target applies. */
  significant: boolean;
  within5: boolean | null;
  sign_ok: boolean;
  estimate_within15: boolean | null;
  unmeasured: number;
  complete: boolean;
  removed: number;
  removed_measured: number;
  model_turns: number;
  model_error: number | null;
  leaks: number;
  /** Recall hops of the "on" run, and its calls that declared the recall tool in a system message. */
  hops: number;
  inline: number;
}

function verdict(on: SessionRun[], off: SessionRun[], same: SessionRun[]): Verdict {
  const sum = (xs: SessionRun[], f: (r: SessionRun) => number) => xs.reduce((n, r) => n + f(r), 0);
  const truth = sum(off, (r) => r.bill) - sum(on, (r) => r.bill);
  const claimed = sum(on, (r) => r.claim?.billed_saved_usd ?? 0);
  const estimate = sum(on, (r) => r.claim?.saved_usd ?? 0);
  const bill = sum(off, (r) => r.bill);
  const significant = Math.abs(truth) > 0.01 * bill;
  const fired = on.some((r) => (r.claim?.gate_fired ?? 0) > 0);
  const measured = on.some((r) => (r.claim?.turns_measured ?? 0) > 0);
  const turns = sum(on, (r) => r.claim?.model_check.turns ?? 0);
  return {
    truth,
    claimed,
    estimate,
    bill,
    same_claim: sum(same, (r) => Math.abs(r.claim?.billed_saved_usd ?? 0)),
    same_bill_gap: sum(same, (r) => r.bill) - bill,
    significant,
    within5: significant ? Math.abs(claimed - truth) <= 0.05 * Math.abs(truth) : null,
    sign_ok:
      Math.abs(truth) < 1e-6
        ? Math.abs(claimed) < 1e-6 || significant === false
        : Math.sign(claimed) === Math.sign(truth) || claimed === 0,
    estimate_within15:
      fired && measured && significant
        ? Math.abs(estimate - truth) <= 0.15 * Math.abs(truth)
        : null,
    unmeasured: sum(on, (r) => r.claim?.turns_unmeasured ?? 0),
    complete: on.every((r) => r.claim === null || r.claim.complete),
    removed: sum(on, (r) => r.claim?.removed.results ?? 0),
    removed_measured: sum(on, (r) => r.claim?.removed.measured ?? 0),
    model_turns: turns,
    model_error:
      turns === 0
        ? null
        : sum(
            on,
            (r) => (r.claim?.model_check.read_share_error ?? 0) * (r.claim?.model_check.turns ?? 0),
          ) / turns,
    leaks: sum(on, (r) => r.usage_leaks),
    hops: sum(on, (r) => r.hops),
    inline: sum(on, (r) => r.declared_inline),
  };
}

const HEAD = [
  "scenario",
  "calls",
  "hops",
  "declared inline",
  "bill off",
  "true saving",
  "claimed",
  "claimed vs true",
  "estimate",
  "est. vs true",
  "nothing changed: claim",
  "unmeasured turns",
  "removed measured",
  "cache model gap",
  "verdict",
];

/** Usage a restart lost (compact-restart): the bench's known failure until issue 25 lands. */
function restartLost(on: SessionRun[]): boolean {
  return on.some(
    (x) =>
      x.restart !== undefined &&
      (x.restart.retry !== "unchanged" ||
        x.restart.duplicate_seq ||
        x.restart.measured < x.restart.recorded),
  );
}

function row(name: string, calls: number, v: Verdict, knownFailure = false): string[] {
  const vs = (x: number) =>
    Math.abs(v.truth) < 1e-9 ? (Math.abs(x) < 1e-9 ? "0 = 0" : "≠ 0") : pct(x / v.truth - 1);
  const fails: string[] = [];
  if (v.same_claim !== 0) fails.push("nothing-changed ≠ 0");
  if (!v.sign_ok) fails.push("wrong sign");
  if (v.within5 === false) fails.push("> 5%");
  if (v.estimate_within15 === false) fails.push("estimate > 15%");
  if (v.leaks > 0) fails.push("usage leaked to the stream");
  return [
    name,
    String(calls),
    String(v.hops),
    v.inline === 0 ? "—" : `${v.inline} calls`,
    money(v.bill),
    money(v.truth),
    money(v.claimed),
    vs(v.claimed),
    money(v.estimate),
    vs(v.estimate),
    v.same_claim === 0 ? "0 (exact)" : money(v.same_claim),
    v.complete ? "0" : `${v.unmeasured} (flagged)`,
    v.removed === 0 ? "—" : `${((v.removed_measured / v.removed) * 100).toFixed(0)}%`,
    v.model_error === null ? "—" : `${(v.model_error * 100).toFixed(1)}% (${v.model_turns})`,
    knownFailure
      ? `known failure, pending issue 25: usage lost in a restart${fails.length === 0 ? "" : ` (${fails.join(", ")})`}`
      : fails.length === 0
        ? v.significant
          ? "pass"
          : "pass (saving < 1%)"
        : fails.join(", "),
  ];
}

export interface AgreementOptions {
  scenarios?: string[];
  sessions?: boolean;
  markdown?: boolean;
}

export function optionsFrom(argv: readonly string[]): AgreementOptions {
  const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
  const list = value("scenarios");
  return {
    ...(list === undefined ? {} : { scenarios: list.split(",") }),
    sessions: argv.includes("--sessions"),
    markdown: argv.includes("--markdown"),
  };
}

export async function benchAgreement(o: AgreementOptions = {}): Promise<ScenarioRun[]> {
  const t0 = performance.now();
  const all = scenarios(sample());
  const chosen = o.scenarios === undefined ? all : all.filter((s) => o.scenarios!.includes(s.name));
  const fake = new BillingFake();
  await fake.start();
  const runs = chosen.flatMap((s) =>
    (Object.keys(RUN_CONFIG) as RunKind[]).map((k) => `${s.name}.${k}`),
  );
  const env = await startEnv(fake, runs);
  const results: ScenarioRun[] = [];
  try {
    for (const s of chosen) {
      const t = performance.now();
      const r = await runScenario(env, s);
      results.push(r);
      const v = verdict(r.runs.on, r.runs.off, r.runs.same);
      console.log(
        `  ${s.name}: true ${money(v.truth)}, claimed ${money(v.claimed)}, estimate ${money(v.estimate)} (${((performance.now() - t) / 1000).toFixed(0)} s)`,
      );
    }
  } finally {
    await env.close();
    await fake.stop();
  }
  const rows = results.map((r) =>
    row(
      r.scenario.name,
      r.runs.on.reduce((n, x) => n + x.calls, 0),
      verdict(r.runs.on, r.runs.off, r.runs.same),
      restartLost(r.runs.on),
    ),
  );
  // Session by session (the restart scenario apart): the same targets, one session at a time.
  const each = results
    .filter((r) => !restartLost(r.runs.on))
    .flatMap((r) => r.runs.on.map((on, i) => verdict([on], [r.runs.off[i]!], [r.runs.same[i]!])));
  const significant = each.filter((v) => v.significant);
  const worst = significant.reduce(
    (w, v) => (Math.abs(v.claimed / v.truth - 1) > Math.abs(w) ? v.claimed / v.truth - 1 : w),
    0,
  );
  const calls = results.reduce(
    (n, r) => n + r.runs.on.length + r.runs.off.length + r.runs.same.length,
    0,
  );
  console.log(
    `\nagreement: ${results.length} scenarios × ${calls / Math.max(1, results.length) / 3} sessions × 3 runs (off, nothing changed, on) in ${((performance.now() - t0) / 1000).toFixed(0)} s; claims are the session reports' billed.saved_usd (claimed) and saved_usd (estimate)`,
  );
  console.log(`\n${textTable(HEAD, rows, 1)}`);
  // The sessions offloading made dearer: on the fake's bills (on dearer than off), and as the reports count
  // them (a billed saving below 0, the rule of GET /v1/report's totals.billed.dearer).
  const dearerBill = each.filter((v) => v.truth < -1e-9);
  const dearerReport = each.filter((v) => v.claimed < 0);
  console.log(
    `\nsession by session (${each.length}): nothing changed ⇒ exactly 0 in ${each.filter((v) => v.same_claim === 0).length}; of ${significant.length} with a saving over 1% of their bill, ${significant.filter((v) => v.within5).length} within 5% (worst ${pct(worst)}), wrong sign in ${each.filter((v) => !v.sign_ok).length}; made dearer: ${dearerBill.length} on the bills, ${dearerReport.length} in the reports, ${dearerBill.filter((v) => v.claimed < 0).length} in both`,
  );
  for (const r of results) {
    const restarts = r.runs.on.flatMap((x) => (x.restart === undefined ? [] : [x.restart]));
    if (restarts.length === 0) continue;
    const lost = restarts.filter(
      (x) => x.retry !== "unchanged" || x.duplicate_seq || x.measured < x.recorded,
    );
    const refused = r.runs.on.flatMap((x) => x.usage_refused);
    console.log(
      `\n${r.scenario.name}: ${restarts.length} restarts; ${refused.length} later usage posts refused (${[...new Set(refused)].join(", ") || "none"}); retried usage answered ${[...new Set(restarts.map((x) => x.retry))].join(", ")}; seq issued twice in ${restarts.filter((x) => x.duplicate_seq).length}; usage recorded ${restarts.reduce((n, x) => n + x.recorded, 0)}, measured in the reports ${restarts.reduce((n, x) => n + x.measured, 0)}` +
        (lost.length === 0
          ? " — durable"
          : " — EXPECTED KNOWN FAILURE, pending issue 25 (durable usage across a restart of the session object)"),
    );
  }
  if (o.sessions)
    for (const r of results) {
      const srows = r.runs.on.map((on, i) =>
        row(
          `${r.scenario.name} ${on.file}/${on.session}`,
          on.calls,
          verdict([on], [r.runs.off[i]!], [r.runs.same[i]!]),
          restartLost([on]),
        ),
      );
      console.log(`\n${textTable(HEAD, srows, 1)}`);
    }
  if (o.markdown) console.log(`\n${markdownTable(HEAD, rows, 1)}`);
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`)
  await benchAgreement(optionsFrom(process.argv));

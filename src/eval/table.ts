/**
 * The eval's report as the terminal shows it (and as the estimate reads before a run): the
 * agreement rows with their intervals, the difference and what it says, B's recall hops, and what
 * each arm was billed.
 */
import type { EvalPlan } from "./evaluate.ts";
import type { Agreement, EvalReport } from "./summary.ts";
import type { Spend } from "./types.ts";

const pct = (x: number | null) => (x === null ? "–" : `${(x * 100).toFixed(1)}%`);
const points = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}`;
const money = (x: number) => `$${x < 10 ? x.toFixed(4) : x.toFixed(2)}`;
const count = (x: number) => x.toLocaleString("en-US");

function row(cells: readonly string[], widths: readonly number[]): string {
  return cells
    .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
    .join("  ")
    .trimEnd();
}

function agreementRow(name: string, a: Agreement): string[] {
  const ci = a.agree.low === null ? "–" : `[${pct(a.agree.low)}, ${pct(a.agree.high)}]`;
  return [
    name,
    String(a.agree.n),
    pct(a.agree.rate),
    ci,
    pct(a.action.rate),
    pct(a.text_exact.rate),
    a.mean_similarity === null ? "–" : a.mean_similarity.toFixed(2),
  ];
}

function spendRow(name: string, s: Spend): string[] {
  return [name, String(s.calls), count(s.prompt_tokens), count(s.output_tokens), money(s.usd)];
}

/** What the difference says, in one sentence. */
export function verdictLine(r: EvalReport): string {
  const d = r.difference;
  if (d === null)
    return "no A/A pairs, so no noise floor: read the A/B agreement against 100% (its interval above)";
  const head = `A/B − A/A: ${points(d.estimate)} points, 95% CI [${points(d.low)}, ${points(d.high)}] (Newcombe)`;
  return r.verdict === "regression"
    ? `${head}: REGRESSION, offload changes the model's answers beyond its own noise`
    : `${head}: no regression detected (at worst ${points(d.low)} points against the model's own noise)`;
}

/** The report as the terminal table the CLI prints. */
export function renderTable(r: EvalReport): string {
  const s = r.settings;
  const lines = [
    `edge-offload eval: ${r.evaluated} of ${r.sampled} sampled calls compared (${r.candidates} of ${count(r.calls)} calls in ${r.sessions} sessions changed by the config), ${s.model} via ${s.provider}, seed ${s.seed}`,
    `config: ${JSON.stringify(s.config)}${s.judge === null ? "" : `; judge ${s.judge}`}`,
    "",
  ];
  const w1 = [16, 5, 7, 17, 11, 10, 10];
  lines.push(
    row(
      ["pair", "pairs", "agree", "95% CI (Wilson)", "same action", "same text", "similarity"],
      w1,
    ),
    row(agreementRow("A/B on vs off", r.ab), w1),
    row(agreementRow("A/A off twice", r.aa), w1),
    "",
    verdictLine(r),
    `B's recall hops: ${r.hops.total} on ${r.hops.calls_with_hops} of ${r.ab.agree.n} calls (at most ${r.hops.max} on one), ${r.hops.recalls} recall calls${r.hops.exhausted === 0 ? "" : `, ${r.hops.exhausted} stopped at the hop limit`}`,
    "",
  );
  const w2 = [18, 5, 12, 11, 10];
  const ratio =
    r.spend.b_over_a === null ? "" : `   B/A ${r.spend.b_over_a.toFixed(2)} on the same calls`;
  lines.push(
    row(["billed (usage)", "calls", "prompt tok", "output tok", "dollars"], w2),
    row(spendRow("A  offload off", r.spend.a), w2),
    row(spendRow("B  offload on", r.spend.b), w2) + ratio,
    row(spendRow("A2 repeats", r.spend.aa), w2),
    row(spendRow("judge", r.spend.judge), w2),
    `total ${money(r.spend.total_usd)} (estimated ${money(r.spend.estimate_usd)}); each call is sent once with a cold cache: the saving over a whole session is what \`edge-offload replay\` measures`,
  );
  if (r.temperature === null)
    lines.push("temperature: the model refused 0, so its default was used (more run-to-run noise)");
  if (r.stopped === "max_usd")
    lines.push(
      `stopped at the --max-usd ceiling after ${r.evaluated} of ${r.sampled} calls: run again with a higher ceiling to go on (the results file resumes)`,
    );
  if (r.stopped === "aborted")
    lines.push(`interrupted after ${r.evaluated} of ${r.sampled} calls: run again to go on`);
  if (r.b_problems.length > 0)
    lines.push(
      `${r.b_problems.length} B call(s) met a problem in the proxy (their comparison may not test the config); the first: ${r.b_problems[0]!.problems[0]}`,
    );
  if (r.failures.length > 0)
    lines.push(
      `${r.failures.length} provider call(s) failed and were left out (a rerun tries them again); the first: ${r.failures[0]!.message}`,
    );
  return lines.join("\n");
}

/** The estimate printed before anything is sent. */
export function renderPlan(p: EvalPlan, confirmed: boolean): string {
  const aa = p.sample.filter((c) => c.aa).length;
  const lines = [
    `edge-offload eval: ${p.sample.length} calls sampled of ${p.candidates} the config changes (${count(p.calls)} calls in ${p.sessions} sessions), ${aa} also sent twice with offload off`,
    `about ${p.estimate.provider_calls} provider calls before recall hops${p.settings.judge === null ? "" : " and judge calls"}; estimated ${money(p.estimate.expected_usd)} from the sample's token counts`,
  ];
  if (!confirmed)
    lines.push(
      "nothing was sent: run again with --yes, or with --max-usd X to stop before the spend would pass X",
    );
  return lines.join("\n");
}

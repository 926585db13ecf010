/**
 * The eval's report from what the results log holds: every pair compared, the agreement rates
 * with their intervals, the difference A/B − A/A and what it says, B's recall hops, and what the
 * provider billed for each arm. Pure: the same records give the same report, so a resumed run's
 * report covers the calls of every run before it.
 */
import { promptOf } from "../core/billing.ts";
import { comparePair } from "./compare.ts";
import type { LoggedResults } from "./results-log.ts";
import { armKey, judgeKey } from "./results-log.ts";
import { type Difference, newcombe, type Verdict, verdictOf, wilson } from "./stats.ts";
import type {
  AnswerView,
  ArmRecord,
  Failure,
  PairComparison,
  Proportion,
  RecallCall,
  SampledCall,
  ShownResult,
  Spend,
} from "./types.ts";

/** The settings a report states (everything that decides what was sent and how it was judged). */
export interface EvalSettings {
  input: string;
  provider: string;
  model: string;
  endpoint: string;
  /** The config under test, as given over the recommended settings. */
  config: Record<string, unknown>;
  sample: number;
  seed: number;
  aa_share: number;
  judge: string | null;
  similarity: number;
  client: string;
  max_tokens: number;
  max_hops: number;
}

export interface Agreement {
  /** The verdict per pair (same action, and for text answers the same text). */
  agree: Proportion;
  /** The next action alone. */
  action: Proportion;
  /** Normalised texts equal. */
  text_exact: Proportion;
  /** Mean word similarity, null without pairs. */
  mean_similarity: number | null;
}

export interface Disagreement {
  id: string;
  session: string;
  call: number;
  pair: "AB" | "AA";
  why: string;
  similarity: number;
  judge_reason: string | null;
  /** A, and B (or A's repeat for an A/A pair). */
  first: AnswerView;
  second: AnswerView;
  /** B only: its recall calls, hops, how its loop ended, and the changed results as it saw them. */
  recalls: RecallCall[];
  hops: number;
  ending: string | null;
  shown: ShownResult[];
}

export interface EvalReport {
  settings: EvalSettings;
  sessions: number;
  /** Calls in the input, and those whose request the config changes. */
  calls: number;
  candidates: number;
  sampled: number;
  /** Sampled calls with both A and B answered (the A/B pairs). */
  evaluated: number;
  /** Why the run stopped before the end, null when it did not. */
  stopped: "max_usd" | "aborted" | null;
  ab: Agreement;
  aa: Agreement;
  /** p(A/B) − p(A/A), Newcombe's 95% interval; null without A/A pairs. */
  difference: Difference | null;
  verdict: Verdict;
  hops: { total: number; calls_with_hops: number; max: number; recalls: number; exhausted: number };
  spend: {
    a: Spend;
    b: Spend;
    aa: Spend;
    judge: Spend;
    total_usd: number;
    /** B's billed dollars over A's, on the calls that have both. */
    b_over_a: number | null;
    estimate_usd: number;
  };
  /** B calls for which the proxy reported a problem (a store fault, the request sent as it was). */
  b_problems: { id: string; problems: string[] }[];
  /** The temperature sent: 0, or null when the model refused it (its default). */
  temperature: number | null;
  pairs: PairComparison[];
  disagreements: Disagreement[];
  failures: Failure[];
}

export interface SummaryInput {
  settings: EvalSettings;
  sessions: number;
  calls: number;
  candidates: number;
  sample: readonly SampledCall[];
  results: LoggedResults;
  failures: Failure[];
  stopped: EvalReport["stopped"];
  estimate: { expected_usd: number };
}

function spendOf(
  records: readonly { usage: ArmRecord["usage"]; usd: number }[],
  calls: number[],
): Spend {
  return {
    answers: records.length,
    calls: calls.reduce((s, n) => s + n, 0),
    prompt_tokens: records.reduce((s, r) => s + promptOf(r.usage), 0),
    output_tokens: records.reduce((s, r) => s + r.usage.output, 0),
    usd: records.reduce((s, r) => s + r.usd, 0),
  };
}

function agreementOf(pairs: readonly PairComparison[]): Agreement {
  const count = (f: (p: PairComparison) => boolean) => pairs.filter(f).length;
  return {
    agree: wilson(
      count((p) => p.agree),
      pairs.length,
    ),
    action: wilson(
      count((p) => p.action),
      pairs.length,
    ),
    text_exact: wilson(
      count((p) => p.text_exact),
      pairs.length,
    ),
    mean_similarity:
      pairs.length === 0 ? null : pairs.reduce((s, p) => s + p.similarity, 0) / pairs.length,
  };
}

/** The report from the log's records for the sampled calls. */
export function summarise(input: SummaryInput): EvalReport {
  const { results, settings } = input;
  const arm = (c: SampledCall, a: "A" | "B" | "A2") => results.arms.get(armKey(c.id, a));
  const pairs: PairComparison[] = [];
  const disagreements: Disagreement[] = [];
  const as: ArmRecord[] = [];
  const bs: ArmRecord[] = [];
  const a2s: ArmRecord[] = [];
  let ratioA = 0;
  let ratioB = 0;
  for (const c of input.sample) {
    const a = arm(c, "A");
    const b = arm(c, "B");
    const a2 = arm(c, "A2");
    if (a !== undefined) as.push(a);
    if (b !== undefined) bs.push(b);
    if (a2 !== undefined) a2s.push(a2);
    if (a !== undefined && b !== undefined) {
      ratioA += a.usd;
      ratioB += b.usd;
    }
    for (const [pair, second] of [
      ["AB", b],
      ["AA", a2],
    ] as const) {
      if (a === undefined || second === undefined) continue;
      const judged = results.judges.get(judgeKey(c.id, pair));
      const p = comparePair(c.id, pair, a.answer, second.answer, {
        threshold: settings.similarity,
        judge: judged?.equivalent ?? null,
      });
      pairs.push(p);
      if (p.agree) continue;
      disagreements.push({
        id: c.id,
        session: c.session,
        call: c.call,
        pair,
        why: p.why,
        similarity: p.similarity,
        judge_reason: judged?.reason ?? null,
        first: a.answer,
        second: second.answer,
        recalls: second.recalls,
        hops: second.hops,
        ending: second.ending,
        shown: second.shown ?? [],
      });
    }
  }
  const ab = agreementOf(pairs.filter((p) => p.pair === "AB"));
  const aa = agreementOf(pairs.filter((p) => p.pair === "AA"));
  const difference = newcombe(ab.agree, aa.agree);
  const judges = [...results.judges.values()].filter((j) =>
    input.sample.some((c) => c.id === j.id),
  );
  const spend = {
    a: spendOf(
      as,
      as.map((r) => r.provider_calls),
    ),
    b: spendOf(
      bs,
      bs.map((r) => r.provider_calls),
    ),
    aa: spendOf(
      a2s,
      a2s.map((r) => r.provider_calls),
    ),
    judge: spendOf(
      judges,
      judges.map(() => 1),
    ),
  };
  const temperatures = new Set([...as, ...bs, ...a2s].map((r) => r.temperature));
  return {
    settings,
    sessions: input.sessions,
    calls: input.calls,
    candidates: input.candidates,
    sampled: input.sample.length,
    evaluated: ab.agree.n,
    stopped: input.stopped,
    ab,
    aa,
    difference,
    verdict: verdictOf(difference),
    hops: {
      total: bs.reduce((s, r) => s + r.hops, 0),
      calls_with_hops: bs.filter((r) => r.hops > 0).length,
      max: bs.reduce((m, r) => Math.max(m, r.hops), 0),
      recalls: bs.reduce((s, r) => s + r.recalls.length, 0),
      exhausted: bs.filter((r) => r.ending === "exhausted").length,
    },
    spend: {
      ...spend,
      total_usd: spend.a.usd + spend.b.usd + spend.aa.usd + spend.judge.usd,
      b_over_a: ratioA > 0 ? ratioB / ratioA : null,
      estimate_usd: input.estimate.expected_usd,
    },
    b_problems: bs.flatMap((r) =>
      r.problems === undefined ? [] : [{ id: r.id, problems: r.problems }],
    ),
    temperature: temperatures.has(null) ? null : 0,
    pairs,
    disagreements,
    failures: input.failures,
  };
}

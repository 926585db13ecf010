/**
 * The billing counterfactual of a session: turn by turn, the client's own requests (C) and the
 * requests sent (A), each run through the provider's cache rules (provider-cache.ts) from their
 * sketches (sketch.ts), in provider tokens. The report sets the difference of the two against the
 * bill: what offloading changed is priced, what it did not change cancels, so a session where
 * nothing changed saves exactly nothing whatever the provider reports as cached.
 *
 * Tokens: a turn's sketch counts estimated tokens; the request sent is scaled so its total is the
 * prompt the provider measured (or, unmeasured, by the session's measured ratio), and what
 * offloading took out is measured where it can be: a result sent in full on a turn that only
 * appended to the one before is the growth of the measured prompt between the two (less the rest
 * of what was new), a result stubbed on arrival is the provider's count of it (the proxy asks), and
 * the estimate calibrated only where neither exists. A prefix of the client's request whose bytes went
 * out before and were measured (an untouched turn's whole prompt, a read's end) is taken at those tokens.
 *
 * Pure: the session states and the report routes both run it over the logged turns.
 */
import { promptOf, type TurnUsage } from "./billing.ts";
import { type Calibration, calibrationReady, claimedTokens } from "./calibration.ts";
import { resolveModel } from "./pricing.ts";
import { type CacheRules, type CacheSplit, PromptCache } from "./provider-cache.ts";
import { decodeSketch, type SketchMark } from "./sketch.ts";
import type { TurnEstimate } from "./types.ts";

/** A logged turn as the counterfactual reads it. */
export interface CounterfactualTurn {
  at: number;
  shadow: boolean;
  estimate?: TurnEstimate;
  usage?: TurnUsage;
}

export interface TurnCounterfactual {
  /** The turn's sketch could be read: the figures below are modelled. */
  modelled: boolean;
  measured: boolean;
  /** The request went out as the client sent it (nothing removed, declared or anchored). */
  untouched: boolean;
  /** Prompt tokens by rate: the client's request, and the request sent, under the provider's rules. */
  client: CacheSplit;
  sent: CacheSplit;
  /** Tokens offloading took out of the client's request (net of the stubs and the tool). */
  removed: number;
  /** The results taken out, in tokens, and the part of them measured rather than estimated. */
  removed_results: number;
  removed_measured: number;
}

export interface CounterfactualOptions {
  /**
   * "billed": each measured turn scaled to its measured prompt. "estimated": every turn at the
   * session's measured ratio (no turn's own measure). Both take a removed result's tokens from
   * its measure where the session has one.
   */
  mode: "billed" | "estimated";
  /** The tenant's calibration per price-table model (used where ready). */
  tenant?: Readonly<Record<string, Calibration>>;
  /** The session's own calibration, fitted on its measured turns. */
  session: Calibration | null;
}

const NONE: CacheSplit = { read: 0, write_5m: 0, write_1h: 0, input: 0 };
/** A measured result's tokens are trusted within this factor of its estimate. */
const MEASURED_BOUNDS = { min: 0.5, max: 2 } as const;
/**
 * A provider's count is trusted within this factor of the estimate (wider than a growth's: it is the
 * result's own, with nothing else in it; beyond it, the count is of something else).
 */
const COUNTED_BOUNDS = { min: 0.25, max: 4 } as const;
/** The growth between two turns is the new results' when they are at least this share of it. */
const RESULTS_SHARE = 0.5;

/** The estimate's own count (slope classes are corrections, not tokens). */
function tokensOf(est: Readonly<Record<string, number>>): number {
  let s = 0;
  for (const [cls, t] of Object.entries(est)) if (!cls.endsWith("~ws")) s += t;
  return s;
}

/** The cache rules of a turn's model, null when the model is unknown (nothing is modelled). */
function cacheRulesOf(model: string | null | undefined, scope = ""): CacheRules | null {
  const price = resolveModel(model);
  if (price === null) return null;
  const kind =
    price.provider === "anthropic"
      ? "anthropic"
      : price.cache_write_5m > price.input
        ? "openai-writes"
        : "openai";
  return { kind, min: price.min_cacheable_tokens, scope: `${price.id}\u0000${scope}` };
}

/** A logged turn with its sketch read (readTurns): what the counterfactual runs over. */
export interface Sketched {
  turn: CounterfactualTurn;
  marks: SketchMark[] | null;
  /** The price-table model. */
  model: string | null;
  rules: CacheRules | null;
}

/** The turns' sketches read once, for every run of the counterfactual over them. */
export function readTurns(turns: readonly CounterfactualTurn[]): Sketched[] {
  return turns.map((turn) => {
    const e = turn.estimate;
    const model = turn.usage?.model ?? e?.model;
    return {
      turn,
      marks: decodeSketch(e?.sketch),
      model: resolveModel(model)?.id ?? null,
      rules: cacheRulesOf(model, e?.cache_scope),
    };
  });
}

const endOf = (marks: readonly SketchMark[]) => marks[marks.length - 1]!;

/**
 * Provider tokens per estimated token of each result first sent in full on a turn whose request
 * only appended to the previous one, both measured: the prompt's growth between them, less the
 * rest of what was new (at the previous turn's own ratio), over the new results' estimates; and of
 * each result stubbed on arrival that the provider counted.
 */
function measuredRatios(list: readonly Sketched[]): Map<string, number> {
  const out = new Map<string, number>();
  // A result stubbed on arrival is never in a prompt: the provider's count of it (token-count.ts in
  // the proxy) is its measure. A prompt's growth, where a result has one, is the bill's own and wins.
  for (const { turn } of list) {
    const counted = turn.estimate?.counted;
    const cut = turn.estimate?.cut;
    if (counted === undefined || cut === undefined) continue;
    for (const [id, tokens] of Object.entries(counted)) {
      const est = cut[id];
      if (est === undefined || !(est > 0) || !(tokens > 0)) continue;
      const ratio = tokens / est;
      if (ratio >= COUNTED_BOUNDS.min && ratio <= COUNTED_BOUNDS.max) out.set(id, ratio);
    }
  }
  for (let k = 1; k < list.length; k++) {
    const { turn, marks } = list[k]!;
    const prev = list[k - 1]!;
    const fresh = turn.estimate?.fresh;
    if (fresh === undefined || marks === null || prev.marks === null) continue;
    if (turn.usage === undefined || prev.turn.usage === undefined) continue;
    const prevEnd = endOf(prev.marks);
    const join = marks.find((m) => m.ha === prevEnd.ha);
    if (join === undefined || prevEnd.a <= 0) continue;
    const grown = promptOf(turn.usage.first) - promptOf(prev.turn.usage.first);
    const estGrown = endOf(marks).a - join.a;
    const freshEst = tokensOf(fresh);
    if (grown <= 0 || freshEst <= 0 || freshEst < RESULTS_SHARE * estGrown) continue;
    const rest = (estGrown - freshEst) * (promptOf(prev.turn.usage.first) / prevEnd.a);
    const ratio = (grown - rest) / freshEst;
    if (ratio < MEASURED_BOUNDS.min || ratio > MEASURED_BOUNDS.max) continue;
    for (const id of Object.keys(fresh)) out.set(id, ratio);
  }
  return out;
}

/**
 * The values at `xs` (ascending) of the line through `points` (x ascending), extended by its last
 * segment: one walk over both.
 */
function along(points: readonly (readonly [number, number])[], xs: readonly number[]): number[] {
  const out: number[] = [];
  let i = 1;
  for (const x of xs) {
    while (i < points.length - 1 && x > points[i]![0]) i++;
    const [x0, y0] = points[i - 1]!;
    const [x1, y1] = points[i] ?? points[i - 1]!;
    out.push(x1 === x0 ? y1 : y0 + ((x - x0) * (y1 - y0)) / (x1 - x0));
  }
  return out;
}

/** Per turn (in order), the counterfactual; turns without a readable sketch are not modelled. */
export function counterfactualTurns(
  list: readonly Sketched[],
  o: CounterfactualOptions,
): TurnCounterfactual[] {
  const ratios = measuredRatios(list);
  // The scale of an unmeasured turn (and of every turn, estimated): the session's measured ratio of
  // prompt tokens to the sent request's estimate.
  let measured = 0;
  let estimated = 0;
  for (const { turn, marks } of list)
    if (turn.usage !== undefined && marks !== null && endOf(marks).a > 0) {
      measured += promptOf(turn.usage.first);
      estimated += endOf(marks).a;
    }
  const sessionScale = estimated > 0 ? measured / estimated : 1;
  const worlds = { client: new PromptCache(), sent: new PromptCache() };
  // The tokens of earlier requests sent, by the hash of their whole prompt: where this request
  // repeats one (an append), that prefix's tokens are known, measured, not scaled.
  const known = new Map<string, number>();
  return list.map(({ turn, marks, model, rules }) => {
    const e = turn.estimate;
    const u = turn.usage;
    const none: TurnCounterfactual = {
      modelled: false,
      measured: u !== undefined,
      untouched: false,
      client: NONE,
      sent: NONE,
      removed: 0,
      removed_results: 0,
      removed_measured: 0,
    };
    if (e === undefined || marks === null || rules === null) return none;
    const end = endOf(marks);
    const scale =
      o.mode === "billed" && u !== undefined && end.a > 0
        ? promptOf(u.first) / end.a
        : sessionScale;
    const untouched = marks.every((m) => m.c === m.a && m.hc === m.ha && m.bc === m.ba);
    // What offloading took out: the calibrated estimate, with measured results in place of theirs.
    const latest = o.tenant?.[model ?? ""];
    const cal = calibrationReady(latest) ? latest : o.session;
    const removedEst = tokensOf(e.removed);
    let removed = untouched
      ? 0
      : calibrationReady(latest)
        ? claimedTokens(latest, e.removed)
        : (u?.removed_calibrated ?? claimedTokens(o.session, e.removed));
    let removedResults = 0;
    let removedMeasured = 0;
    if (!untouched) {
      const positive = Object.fromEntries(Object.entries(e.removed).filter(([, t]) => t > 0));
      const pos = tokensOf(positive);
      const rho = pos > 0 ? claimedTokens(cal, positive) / pos : 1;
      for (const [id, est] of Object.entries(e.cut ?? {})) {
        const ratio = ratios.get(id);
        removedResults += est * (ratio ?? rho);
        if (ratio === undefined) continue;
        removed += est * (ratio - rho);
        removedMeasured += est * ratio;
      }
    }
    const span = end.c - end.a;
    const rate = span > 0.5 && removedEst > 0 ? removed / span : scale;
    const points: [number, number][] = [[0, 0]];
    if (o.mode === "billed")
      for (const m of marks) {
        const y = known.get(m.ha);
        const [x0, y0] = points[points.length - 1]!;
        if (y !== undefined && m.a > x0 && y >= y0) points.push([m.a, y]);
      }
    const [x0, y0] = points[points.length - 1]!;
    if (end.a > x0) {
      const total = o.mode === "billed" && u !== undefined ? promptOf(u.first) : 0;
      points.push([end.a, total >= y0 && total > 0 ? total : y0 + (end.a - x0) * scale]);
    }
    const at = along(
      points,
      marks.map((m) => m.a),
    );
    known.set(end.ha, at[at.length - 1]!);
    const sent = marks.map((m, i) => ({
      tokens: at[i]!,
      blocks: m.b,
      hash: m.ha,
      ...(m.ba === undefined ? {} : { bp: m.ba }),
    }));
    // The client's prefix at a mark is the estimate moved by what offloading changed before it,
    // unless those very bytes went out before and were measured (an untouched turn's whole prompt,
    // or a read's end): then its tokens are known. A sliding window's shared head is such a prefix,
    // and whether it reaches the provider's minimum decides whether the client's calls read at all.
    // A longer prefix never has fewer tokens: a measured mark may sit above the estimates after it.
    let reached = 0;
    const client = marks.map((m, i) => {
      const measuredPrefix = o.mode === "billed" ? known.get(m.hc) : undefined;
      reached = Math.max(reached, measuredPrefix ?? sent[i]!.tokens + (m.c - m.a) * rate);
      return {
        tokens: reached,
        blocks: m.b,
        hash: m.hc,
        ...(m.bc === undefined ? {} : { bp: m.bc }),
      };
    });
    const billed = worlds.sent.bill(sent, rules, turn.at);
    // Where the provider read the request sent, the mark that prefix ends at is now known in
    // tokens (OpenAI reports reads in 128-token steps: the middle of the step).
    const read = u?.first.cache_read ?? 0;
    if (o.mode === "billed" && read > 0 && billed.matched >= 0)
      known.set(marks[billed.matched]!.ha, read + (rules.kind === "openai" ? 64 : 0));
    return {
      modelled: true,
      measured: u !== undefined,
      untouched,
      client: worlds.client.bill(client, rules, turn.at),
      sent: billed,
      removed: Math.max(0, removed),
      removed_results: Math.round(removedResults),
      removed_measured: Math.round(removedMeasured),
    };
  });
}

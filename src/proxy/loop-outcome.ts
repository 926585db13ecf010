/**
 * What a proxied call's outcome becomes: the summary's proxy part, the billed figures (the recall
 * hops' calls apart, a cost of offloading), and the hops, usage and memos noted on the turn's log
 * line.
 */
import { type TurnUsage, turnUsage, usageUsd } from "../core/billing.ts";
import type { TurnFinish } from "../core/ports.ts";
import { resolveModel } from "../core/pricing.ts";
import type { Format } from "../core/types.ts";
import { proxyPart, type Summary } from "../http/summary.ts";
import type { Ending } from "./dialect.ts";
import type { ProxyCall } from "./loop-steps.ts";
import type { ProxyMemo } from "./port.ts";

/**
 * How long the turn's finish waits for the provider's counts once the answer is in: they were asked
 * beside the call and are nearly always back by then; a late one is dropped (the result's tokens stay
 * estimated) rather than hold the client's answer.
 */
export const COUNT_GRACE_MS = 1_500;

/** Counts asked beside a call, or none if they are not back within COUNT_GRACE_MS. */
export async function countsWithin(
  counts: Promise<Record<string, number>> | undefined,
): Promise<Record<string, number>> {
  if (counts === undefined) return {};
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Record<string, number>>((resolve) => {
    timer = setTimeout(() => resolve({}), COUNT_GRACE_MS);
  });
  try {
    return await Promise.race([counts, late]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** What one proxied call came to: its hops, recalls, ending, memos and usage objects. */
export interface TurnOutcome {
  hops: number;
  recalls: number;
  /** "failed": a hop could not be made or the provider refused it; the client got that error. */
  ending: Ending | "failed";
  memos: ProxyMemo[];
  /** Each provider call's usage object as the answer reported it, the client's call first. */
  usages: unknown[];
}

/** The call's summary with its proxy part (and, once measured, what the provider billed). */
export function withProxy(
  summary: Summary,
  outcome: TurnOutcome | null,
  stream: boolean,
  billed: Billed | null = null,
): Summary {
  const proxy = proxyPart(stream, summary.proxy?.spliced ?? 0);
  if (outcome !== null)
    Object.assign(proxy, {
      hops: outcome.hops,
      recalls: outcome.recalls,
      ending: outcome.ending,
      memos: outcome.memos.length,
    });
  if (billed === null) return { ...summary, proxy };
  // What the provider billed for this call; the recall hops' calls are a cost of offloading, so the
  // estimated saving is net of them.
  Object.assign(proxy, { usd: billed.usd, hop_usd: billed.hop_usd });
  return { ...summary, saved_usd: roundUsd(summary.saved_usd - billed.hop_usd), proxy };
}

export interface Billed {
  usage: TurnUsage;
  /** Dollars for every call, and for the recall hops' calls alone (null: an unpriced model). */
  usd: number;
  hop_usd: number;
}

const roundUsd = (x: number) => Math.round(x * 1e9) / 1e9;

/** The call's measured usage (summed over hops) and its price, null when no answer carried usage. */
export function billedOf(call: ProxyCall, outcome: TurnOutcome): Billed | null {
  return billedFrom(call.dialect.format, outcome.usages, call.model);
}

/** The same from the usage objects of a call's answers (the client's first), in `format`'s shape. */
export function billedFrom(
  format: Format,
  usages: readonly unknown[],
  model: string | null,
): Billed | null {
  const usage = turnUsage(format, usages, model, "proxy");
  if (usage === null) return null;
  const price = resolveModel(usage.model);
  if (price === null) return { usage, usd: 0, hop_usd: 0 };
  return {
    usage,
    usd: roundUsd(usageUsd(price, usage.tokens)),
    hop_usd: roundUsd(usageUsd(price, usage.tokens) - usageUsd(price, usage.first)),
  };
}

/**
 * What a proxied call adds to its turn's line: nothing when it made no hop, ran no recall, kept no
 * memo and measured no usage (the line then has no proxy note), else its note, memos and usage.
 */
export function finishOf(
  outcome: Pick<TurnOutcome, "hops" | "recalls" | "ending" | "memos">,
  usage?: TurnUsage,
): TurnFinish {
  if (outcome.hops === 0 && outcome.recalls === 0 && outcome.memos.length === 0 && !usage)
    return {};
  return {
    proxy: {
      hops: outcome.hops,
      recalls: outcome.recalls,
      exhausted: outcome.ending === "exhausted",
    },
    memos: outcome.memos,
    ...(usage === undefined ? {} : { usage }),
  };
}

/**
 * Finishes the call's turn: its log line (a steady turn's is written only now), the hops, the
 * provider's usage and the memos. A failure loses only that (logged, and said in the summary).
 */
export async function finishTurn(
  call: ProxyCall,
  outcome: TurnOutcome,
  summary: Summary | null,
): Promise<void> {
  const billed = billedOf(call, outcome);
  const counted = await countsWithin(call.counts);
  try {
    await call.turn.finish({
      ...finishOf(outcome, billed?.usage),
      ...(Object.keys(counted).length === 0 ? {} : { counted }),
    });
  } catch {
    // The store logged the cause. The answer stands; a lost memo only means a later turn is sent as
    // the client holds it.
    if (summary !== null) {
      summary.errors.push({
        code: "storage_error",
        message:
          "the proxy's turn could not be saved; a mixed turn's recall answer will not be spliced into later requests",
      });
      summary.errors_total++;
    }
  }
}

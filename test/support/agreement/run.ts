/**
 * The agreement run: corpus sessions replayed through the real proxy (the Worker in workerd, as `wrangler dev`
 * runs it) to the billing fake, under each config, next to the replay's prediction for the same sessions and
 * config. Besides the fake's bill it keeps, for every provider call, what separates the two:
 * - `sent`: the replay's own pricing (its token estimates and cache simulation) of the bytes the fake
 *   received: against the prediction, it says whether the proxy sent what the replay simulated;
 * - ledgers: the same calls billed with the replay's token estimates under the API's cache rules, added one
 *   at a time (entries only at breakpoints, the 20-position lookback, TTLs on the fake's clock): each step's
 *   difference is what that rule costs;
 * - the fake's bill: the API's rules with the fake's tokenizer; its step from the last ledger is the tokenizer.
 */
import { edgeOffload } from "../../../src/replay/policies/edge-offload.ts";
import { EDGE_OFFLOAD_CONFIGS, policyByName } from "../../../src/replay/policies/index.ts";
import { replay } from "../../../src/replay/run.ts";
import type { Client, ReplaySession } from "../../../src/replay/types.ts";
import { API_RULES } from "../billing/anthropic-cache.ts";
import { addTokens, type BillTokens, NO_TOKENS } from "../billing/bill.ts";
import { BillingFake, type ShadowLedger } from "../billing-fake.ts";
import { startProxyWorker } from "../worker.ts";
import { driveSession } from "./drive.ts";
import { estimateCounter, ReplayPricer } from "./estimates.ts";

/** The request config layer of each replay policy the bench runs ("none": offload off, a pass-through). */
export function configOf(policy: string): Record<string, unknown> {
  if (policy === "none") return { tool_result_compaction_enabled: false };
  const c = EDGE_OFFLOAD_CONFIGS[policy];
  if (c === undefined) throw new Error(`no edge-offload config named ${JSON.stringify(policy)}`);
  // The replay has no provider usage to calibrate with: the gate must price what the replay priced
  // for the bytes to match. The proxy still learns the calibration (the bench reports its error). Nor
  // do the two sides share session lengths (the Worker's store learns them from the tenant's ended
  // sessions, the replay from its own file order): both price the configured horizon.
  return {
    ...c.config,
    tool_result_calibration_enabled: false,
    tool_result_offload_horizon_learned: false,
  };
}

/** The diagnostic ledgers, in the order their rules are added (the last one is the API's rules). */
export const LEDGERS: Record<string, ShadowLedger> = {
  "replay rules": {
    counter: estimateCounter,
    rules: { lookback: Infinity, expiry: false, entries: "every-block" },
    scoped: true,
  },
  "+ entries at breakpoints": {
    counter: estimateCounter,
    rules: { lookback: Infinity, expiry: false, entries: "breakpoints" },
    scoped: true,
  },
  "+ 20-position lookback": {
    counter: estimateCounter,
    rules: { lookback: 20, expiry: false, entries: "breakpoints" },
    scoped: true,
  },
  "+ TTLs": { counter: estimateCounter, rules: API_RULES },
};

export interface AgreementFile {
  name: string;
  sessions: ReplaySession[];
}

export interface AgreementOptions {
  files: AgreementFile[];
  policies: string[];
  clients: Client[];
  model: string;
  gapSeconds: number;
  stream?: boolean;
  log?: (line: string) => void;
}

export interface AgreementRow {
  file: string;
  client: Client;
  policy: string;
  sessions: number;
  client_calls: number;
  provider_calls: number;
  hops: number;
  lost: number;
  usage_mismatches: number;
  claimed_saved_usd: number;
  /** The session reports' figures summed over the run's sessions (drive.ts). */
  report: {
    saved_usd: number;
    billed_usd: number;
    counterfactual_usd: number;
    billed_saved_usd: number;
  };
  /** The tenant's calibration after the run: the estimates' prompt-token error before and after. */
  calibration: {
    turns: number;
    error_raw: number | null;
    error_calibrated: number | null;
    bias_raw: number | null;
    bias_calibrated: number | null;
    ratios: Record<string, number>;
  } | null;
  replay: { usd: number; prompt_tokens: number; read_share: number; hops: number; lost: number };
  /** The replay's pricing of the bytes the fake received. */
  sent: { usd: number; tokens: BillTokens };
  ledgers: Record<string, { usd: number; tokens: BillTokens }>;
  fake: { usd: number; tokens: BillTokens };
  /** What the recall hops (the provider calls after a client call's first) cost: billed, and in the last ledger. */
  hop_usd: { fake: number; ledger: number };
  seconds: number;
}

interface Acc {
  sent: { usd: number; tokens: BillTokens };
  ledgers: Record<string, { usd: number; tokens: BillTokens }>;
}

/** The last ledger: the API's rules with the replay's token estimates. */
export const API_LEDGER = "+ TTLs";

export async function runAgreement(o: AgreementOptions): Promise<AgreementRow[]> {
  const runs = o.files.flatMap((f) =>
    o.clients.flatMap((client) => o.policies.map((policy) => ({ file: f, client, policy }))),
  );
  const keys = runs.map((_, i) => `agree${i}:agreement-key-${i}-0123456789`);
  const pricer = new ReplayPricer(o.model);
  let acc: Acc | null = null;
  const fake = new BillingFake({
    shadows: LEDGERS,
    observe: (call, request) => {
      if (acc === null) return;
      const c = pricer.price(call.conversation, request, call.answer);
      acc.sent.usd += c.usd;
      acc.sent.tokens = addTokens(acc.sent.tokens, {
        input: c.input_tokens,
        cache_read: c.read_tokens,
        cache_write_5m: c.write_tokens,
        cache_write_1h: 0,
        output: c.output_tokens,
      });
      for (const [name, s] of Object.entries(call.shadows)) {
        const l = (acc.ledgers[name] ??= { usd: 0, tokens: NO_TOKENS });
        l.usd += s.usd ?? 0;
        l.tokens = addTokens(l.tokens, s.tokens);
      }
    },
  });
  await fake.start();
  const worker = await startProxyWorker({
    provider: fake.url,
    secrets: {
      OFFLOAD_API_KEYS: keys.join(","),
      OFFLOAD_SECRET: "agreement-bench-secret-0123456789",
    },
  });
  const rows: AgreementRow[] = [];
  try {
    const predictions = new Map<string, Awaited<ReturnType<typeof replay>>>();
    for (const [i, r] of runs.entries()) {
      const t0 = performance.now();
      const pkey = `${r.file.name}\u0000${r.client}`;
      let predicted = predictions.get(pkey);
      if (predicted === undefined) {
        // Fresh policies per file and client, as the replay bench builds them (the learning gate's store).
        predicted = await replay(r.file.sessions, {
          model: o.model,
          client: r.client,
          // the proxy runs hops out of the client's sight: later prompts do not carry the exchange
          hops: "dropped",
          // the proxy's gate runs with calibration off (the bytes must match), so the prediction too
          usage: false,
          policies: o.policies.map((p) =>
            p === "none" ? policyByName(p)! : edgeOffload(p, configOf(p), p),
          ),
        });
        predictions.set(pkey, predicted);
      }
      const p = predicted.policies.find((x) => x.policy === r.policy)!;
      acc = { sent: { usd: 0, tokens: NO_TOKENS }, ledgers: {} };
      const from = fake.calls.length;
      const row: AgreementRow = {
        file: r.file.name,
        client: r.client,
        policy: r.policy,
        sessions: r.file.sessions.length,
        client_calls: 0,
        provider_calls: 0,
        hops: 0,
        lost: 0,
        usage_mismatches: 0,
        claimed_saved_usd: 0,
        report: { saved_usd: 0, billed_usd: 0, counterfactual_usd: 0, billed_saved_usd: 0 },
        calibration: null,
        replay: {
          usd: p.total_usd,
          prompt_tokens: p.prompt_tokens,
          read_share: p.cache_read_share,
          hops: p.recall_hops,
          lost: p.lost_references,
        },
        sent: acc.sent,
        ledgers: acc.ledgers,
        fake: { usd: 0, tokens: NO_TOKENS },
        hop_usd: { fake: 0, ledger: 0 },
        seconds: 0,
      };
      const hops = new Set<number>();
      for (const session of r.file.sessions) {
        const s = await driveSession(session, fake, {
          proxy: worker.base,
          key: keys[i]!.split(":")[1]!,
          config: configOf(r.policy),
          model: o.model,
          client: r.client,
          conversation: `${i}.${session.id}`.replace(/[^A-Za-z0-9._:-]/g, "_").slice(0, 128),
          gapSeconds: o.gapSeconds,
          ...(o.stream === undefined ? {} : { stream: o.stream }),
        });
        row.client_calls += s.client_calls;
        row.provider_calls += s.provider_calls;
        row.hops += s.hops;
        row.lost += s.lost;
        row.usage_mismatches += s.usage_mismatches;
        row.claimed_saved_usd += s.claimed_saved_usd;
        for (const k of Object.keys(row.report) as (keyof typeof row.report)[])
          row.report[k] += s.report[k];
        for (const seq of s.hop_seqs) hops.add(seq);
      }
      const tenantReport = await fetch(`${worker.base}/v1/report?limit=1`, {
        headers: { authorization: `Bearer ${keys[i]!.split(":")[1]!}` },
      });
      if (tenantReport.ok) {
        const cal = (
          (await tenantReport.json()) as {
            calibration: Record<string, AgreementRow["calibration"]> | null;
          }
        ).calibration;
        row.calibration = cal?.[o.model] ?? null;
      }
      const billed = fake.calls.slice(from);
      row.fake = fake.total(billed);
      for (const c of billed.filter((x) => hops.has(x.seq))) {
        row.hop_usd.fake += c.usd ?? 0;
        row.hop_usd.ledger += c.shadows[API_LEDGER]?.usd ?? 0;
      }
      row.seconds = (performance.now() - t0) / 1000;
      rows.push(row);
      o.log?.(
        `${r.file.name} ${r.client} ${r.policy}: fake $${row.fake.usd.toFixed(4)} replay $${row.replay.usd.toFixed(4)} (${row.provider_calls} calls, ${row.seconds.toFixed(0)} s)`,
      );
      // Later runs must not read this run's entries (they are other conversations on other tenants).
      fake.flush();
    }
  } finally {
    acc = null;
    await worker.dispose();
    await fake.stop();
  }
  return rows;
}

// SQLite rows written (and transactions) per steady turn in the SessionDO, what Durable Objects bill per row:
// each line written with its turn (OFFLOAD_TURN_LOG_WINDOW_MS=0, as before lines were held) against held
// lines written in batches (the timer writing each alone in a quiet session, the cap writing 32 in a busy
// one), on a fresh turn log and on a full one (every line then trims an old one). A compact turn commits its
// line; a proxied one also notes the provider's usage on it (the calibration sample it teaches included:
// written with its call when nothing is held, else held and written with the lines).
// Not part of `npm test`: it prints, it asserts only that it measured something.
import { env, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { TurnUsage } from "../../src/core/billing.ts";
import type { TurnDecision, TurnEstimate, TurnLog } from "../../src/core/types.ts";
import { HOLD_CAP } from "../../src/session/held-writes.ts";
import { SessionDO } from "../../src/session/session-do.ts";
import { sessionObjectName, TURN_LOG_LIMIT } from "../../src/session/state.ts";
import { record } from "../../test/support/records.ts";
import { writesOf } from "../../test/support/sql-writes.ts";

const TURNS = 2 * HOLD_CAP;
let sessions = 0;

const estimate: TurnEstimate = {
  sent: { text: 40_000 },
  removed: { text: 20_000 },
  cached_share: 0.9,
  ttl: "5m",
  calibrated: false,
  model: "claude-sonnet-4-6",
};
const usage: TurnUsage = {
  source: "proxy",
  model: "claude-sonnet-4-6",
  calls: 1,
  tokens: { input: 2_000, cache_read: 36_000, cache_write_5m: 0, cache_write_1h: 0, output: 300 },
  first: { input: 2_000, cache_read: 36_000, cache_write_5m: 0, cache_write_1h: 0, output: 300 },
  answer_output: 300,
};
/** The decisions a steady turn of the latency bench's request commits (29 results, all sticky). */
const decisions: TurnDecision[] = Array.from({ length: 29 }, (_, i) => ({
  tool_use_id: `toolu_${i}`,
  tool_name: "bash",
  path: `messages[${2 * i + 2}].content[0]`,
  tier: i === 0 ? "large" : "small",
  action: i === 0 ? "offloaded" : "kept",
  mem_id: i === 0 ? `trm_${"a".repeat(24)}` : null,
  chars: i === 0 ? 70_000 : 500,
  tokens: i === 0 ? 20_000 : 150,
  sent_tokens: i === 0 ? 200 : 150,
  sticky: true,
  reason: "sticky",
}));
const log = (turn: number): TurnLog => ({
  turn,
  results: 29,
  kept: 28,
  compacted: 0,
  offloaded: 1,
  new_decisions: 0,
  tokens_before: 40_000,
  tokens_after: 20_000,
  saved_usd: 0.01,
  errors: 0,
  shadow: false,
  gate_fired: 0,
  gate_declined: 0,
  estimate,
});

interface Case {
  kind: "compact" | "proxy";
  windowMs: number;
  /** Lines written together (1: the timer writes each alone; HOLD_CAP: the cap). */
  batch: number;
  full: boolean;
}

async function measure(c: Case): Promise<{ rows: number; transactions: number }> {
  sessions++;
  const ref = { tenant: "bench", session: `rows-${Date.now().toString(36)}-${sessions}` };
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(sessionObjectName(ref)));
  return runInDurableObject(stub, async (_i, state) => {
    const o = new SessionDO(state, { ...env, OFFLOAD_TURN_LOG_WINDOW_MS: String(c.windowMs) });
    await o.commit(ref, {
      records: [record("toolu_0", { turn: 1 })],
      recall_declared: true,
      log: log(1),
      decisions,
    });
    const sql = state.storage.sql;
    if (c.full)
      sql.exec(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) INSERT INTO turns (log, at) SELECT (SELECT log FROM turns LIMIT 1), 0 FROM n",
        TURN_LOG_LIMIT,
      );
    const { rows, transactions } = await writesOf(state.storage, async () => {
      for (let turn = 2; turn < 2 + TURNS; turn++) {
        const { turn_seq } = await o.commit(ref, {
          records: [],
          recall_declared: true,
          log: log(turn),
          decisions,
        });
        if (c.kind === "proxy")
          await o.finishProxyTurn(ref, {
            turn_seq,
            note: { hops: 0, recalls: 0, exhausted: false },
            memos: [],
            usage,
            estimate,
          });
        // What the timer does in a quiet session: the held lines written, one transaction.
        if ((turn - 1) % c.batch === 0) o.report(ref, { turns: false });
      }
      o.report(ref, { turns: false });
    });
    return { rows: rows / TURNS, transactions: transactions / TURNS };
  });
}

it("rows written per steady turn, each line written with its turn against held lines", async () => {
  const lines: string[] = [];
  for (const kind of ["compact", "proxy"] as const)
    for (const full of [false, true]) {
      const each = await measure({ kind, windowMs: 0, batch: 1, full });
      const alone = await measure({ kind, windowMs: 60_000, batch: 1, full });
      const busy = await measure({ kind, windowMs: 60_000, batch: HOLD_CAP, full });
      expect(each.rows).toBeGreaterThan(0);
      const f = (m: { rows: number; transactions: number }) =>
        `${m.rows.toFixed(2)} rows, ${m.transactions.toFixed(2)} tx`;
      lines.push(
        `  ${kind.padEnd(8)} ${full ? "full log " : "fresh log"}   written with its turn ${f(each)}   held, written alone ${f(alone)}   held, ${HOLD_CAP} at once ${f(busy)}`,
      );
    }
  console.log(`SessionDO rows written per steady turn (${TURNS} turns each):\n${lines.join("\n")}`);
});

/**
 * Added latency, as ratios measured in one run against the real `wrangler dev` on 127.0.0.1 (workerd with its
 * local Durable Objects, R2 and KV), with a fake Anthropic next to it:
 * - a steady compact (everything already decided) against the pass-through of the same body (the session's
 *   config has compaction off), p50 and p99, ~82 KB with one offloaded result and 28 small ones;
 * - the proxy's time to the first streamed byte against a direct call to the same fake provider, and
 *   against the Worker's own hop (a provider path it passes through untouched, same body and fake);
 * - recall p50/p99 on a 1 MB and a 10 MB body.
 * Calls are sequential and interleaved round by round, so drift on the shared machine hits each side alike.
 * The same compact/pass-through pair is measured inside workerd too (vitest's workers pool, no HTTP between
 * client and Worker): bench/workerd/latency.test.ts.
 */
import { spawnSync } from "node:child_process";
import { KEY, ms, ON, percentile, type Rig, startRig, timed } from "./lib/loopback.ts";
import { latencyRequest } from "./lib/requests.ts";

const auth = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

function compactCall(rig: Rig, session: string, body: string, config?: object) {
  return timed(`${rig.base}/v1/sessions/${session}/compact`, {
    method: "POST",
    headers: config === undefined ? auth : { ...auth, "x-offload-config": JSON.stringify(config) },
    body,
  });
}

function summaryOf(headers: Headers): Record<string, unknown> {
  return JSON.parse(headers.get("x-offload-summary") ?? "{}") as Record<string, unknown>;
}

export async function benchLatency(rounds = Number(process.env.LATENCY_ROUNDS ?? 200)) {
  const rig = await startRig();
  try {
    const body = latencyRequest();
    const first = await compactCall(rig, "lat-steady", body, ON);
    if (summaryOf(first.headers).offloaded !== 1)
      throw new Error("the large result was not offloaded");

    const health: number[] = [];
    const pass: number[] = [];
    const steady: number[] = [];
    for (let i = 0; i < rounds + 10; i++) {
      const h = await timed(`${rig.base}/healthz`, {});
      const p = await compactCall(rig, "lat-off", body);
      const s = await compactCall(rig, "lat-steady", body, ON);
      if (p.status !== 200 || s.status !== 200) throw new Error(`status ${p.status}/${s.status}`);
      if (summaryOf(s.headers).new_decisions !== 0) throw new Error("not a steady turn");
      if (i < 10) continue; // warm-up
      health.push(h.ms);
      pass.push(p.ms);
      steady.push(s.ms);
    }

    // The proxy's time to the first streamed byte against the provider's own, same body.
    const streamed = JSON.stringify({ ...JSON.parse(body), stream: true });
    const proxyHeaders = {
      "content-type": "application/json",
      "x-offload-key": KEY,
      "x-offload-session": "lat-proxy",
      "x-offload-config": JSON.stringify(ON),
      "x-api-key": "sk-fake",
      "anthropic-version": "2023-06-01",
    };
    const viaProxy: number[] = [];
    const direct: number[] = [];
    const hop: number[] = [];
    for (let i = 0; i < rounds + 10; i++) {
      const d = await timed(
        `${rig.provider}/v1/messages`,
        { method: "POST", headers: proxyHeaders, body: streamed },
        true,
      );
      // The Worker's own hop: a provider path the proxy passes through untouched (no session, no
      // transform), the same body to the same fake; what is left above it is the proxy's work.
      const h = await timed(
        `${rig.base}/anthropic/v1/messages-untouched`,
        { method: "POST", headers: proxyHeaders, body: streamed },
        true,
      );
      if (h.status !== 200) throw new Error(`pass-through status ${h.status}`);
      const p = await timed(
        `${rig.base}/anthropic/v1/messages`,
        { method: "POST", headers: proxyHeaders, body: streamed },
        true,
      );
      if (p.status !== 200) throw new Error(`proxy status ${p.status}: ${p.text.slice(0, 200)}`);
      if (i < 10) continue;
      direct.push(d.ms);
      hop.push(h.ms);
      viaProxy.push(p.ms);
    }

    // Recall on large bodies.
    const recalls: Record<string, number[]> = {};
    for (const [label, size] of [
      ["1 MB", 1_000_000],
      ["10 MB", 10_000_000],
    ] as const) {
      const row = "2026-11-30T12:00:00Z INFO request handled path=/api/items status=200 ms=12\n";
      const big = row.repeat(Math.ceil(size / row.length));
      const request = JSON.stringify({
        model: "claude-opus-4-5",
        max_tokens: 100,
        messages: [
          { role: "user", content: "Read the log." },
          {
            role: "assistant",
            content: [{ type: "tool_use", id: "toolu_log", name: "cat", input: {} }],
          },
          {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: "toolu_log", content: big }],
          },
          {
            role: "assistant",
            content: [{ type: "tool_use", id: "toolu_ok", name: "ok", input: {} }],
          },
          {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: "toolu_ok", content: "ok" }],
          },
        ],
      });
      const session = `lat-recall-${size}`;
      const out = await compactCall(rig, session, request, ON);
      const mem = /trm_[0-9a-f]{24}/.exec(out.text)?.[0];
      if (mem === undefined) throw new Error(`the ${label} body was not offloaded`);
      const times: number[] = [];
      const n = Math.max(20, Math.floor(rounds / 4));
      for (let i = 0; i < n + 3; i++) {
        const r = await timed(`${rig.base}/v1/sessions/${session}/recall`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ mem_id: mem, query: "status=200", window: 40 }),
        });
        if (r.status !== 200 || (JSON.parse(r.text) as { is_error: boolean }).is_error)
          throw new Error(`recall failed: ${r.text.slice(0, 200)}`);
        if (i >= 3) times.push(r.ms);
      }
      recalls[label] = times;
    }

    const p = (xs: number[], q: number) => percentile(xs, q);
    const out = {
      rounds,
      request_bytes: body.length,
      healthz_p50_ms: p(health, 50),
      passthrough_p50_ms: p(pass, 50),
      passthrough_p99_ms: p(pass, 99),
      steady_p50_ms: p(steady, 50),
      steady_p99_ms: p(steady, 99),
      steady_ratio_p50: p(steady, 50) / p(pass, 50),
      steady_ratio_p99: p(steady, 99) / p(pass, 99),
      direct_ttfb_p50_ms: p(direct, 50),
      direct_ttfb_p99_ms: p(direct, 99),
      proxy_ttfb_p50_ms: p(viaProxy, 50),
      proxy_ttfb_p99_ms: p(viaProxy, 99),
      proxy_added_p50_ms: p(viaProxy, 50) - p(direct, 50),
      proxy_added_p99_ms: p(viaProxy, 99) - p(direct, 99),
      worker_hop_ttfb_p50_ms: p(hop, 50),
      proxy_work_p50_ms: p(viaProxy, 50) - p(hop, 50),
      recall_1mb_p50_ms: p(recalls["1 MB"]!, 50),
      recall_1mb_p99_ms: p(recalls["1 MB"]!, 99),
      recall_10mb_p50_ms: p(recalls["10 MB"]!, 50),
      recall_10mb_p99_ms: p(recalls["10 MB"]!, 99),
    };
    console.log(
      `latency against wrangler dev (${rounds} sequential rounds, ${(body.length / 1000).toFixed(0)} KB request):`,
    );
    console.log(`  /healthz                 p50 ${ms(out.healthz_p50_ms)} ms`);
    console.log(
      `  compact, session off     p50 ${ms(out.passthrough_p50_ms)} ms   p99 ${ms(out.passthrough_p99_ms)} ms   (pass-through)`,
    );
    console.log(
      `  compact, steady turn     p50 ${ms(out.steady_p50_ms)} ms   p99 ${ms(out.steady_p99_ms)} ms   ratio p50 ${out.steady_ratio_p50.toFixed(2)}  p99 ${out.steady_ratio_p99.toFixed(2)}  (target ≤ 1.3)`,
    );
    console.log(
      `  first streamed byte      direct p50 ${ms(out.direct_ttfb_p50_ms)} / p99 ${ms(out.direct_ttfb_p99_ms)} ms; through the proxy p50 ${ms(out.proxy_ttfb_p50_ms)} / p99 ${ms(out.proxy_ttfb_p99_ms)} ms (added p50 ${ms(out.proxy_added_p50_ms)} ms)`,
    );
    console.log(
      `                           through the Worker untouched p50 ${ms(out.worker_hop_ttfb_p50_ms)} ms: the proxy's own work p50 ${ms(out.proxy_work_p50_ms)} ms`,
    );
    console.log(
      `  recall, 1 MB body        p50 ${ms(out.recall_1mb_p50_ms)} ms   p99 ${ms(out.recall_1mb_p99_ms)} ms`,
    );
    console.log(
      `  recall, 10 MB body       p50 ${ms(out.recall_10mb_p50_ms)} ms   p99 ${ms(out.recall_10mb_p99_ms)} ms`,
    );
    return out;
  } finally {
    await rig.stop();
  }
}

/** The same pair inside workerd (vitest's workers pool): its own config, so `npm test` does not run it. */
export function benchLatencyWorkerd(file = "bench/workerd/latency.test.ts"): void {
  const r = spawnSync(
    process.execPath,
    ["node_modules/vitest/vitest.mjs", "run", "--config", "bench/workerd/vitest.config.ts", file],
    { stdio: "inherit", env: { ...process.env } },
  );
  if (r.status !== 0) throw new Error(`the workerd bench ${file} failed`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchLatency();
  benchLatencyWorkerd();
}

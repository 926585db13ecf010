// A steady compact against the pass-through of the same body, inside workerd: the ratio without the HTTP
// hop between client and Worker (bench/latency.ts measures it against `wrangler dev`).
import { SELF } from "cloudflare:test";
import { expect, it } from "vitest";
import { latencyRequest } from "../lib/requests.ts";

const auth = {
  authorization: "Bearer loopback-bench-key-0001",
  "content-type": "application/json",
};
const ON = JSON.stringify({
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
});

async function time(session: string, body: string, config?: string): Promise<number> {
  const t0 = performance.now();
  const res = await SELF.fetch(`https://bench.test/v1/sessions/${session}/compact`, {
    method: "POST",
    headers: config === undefined ? auth : { ...auth, "x-offload-config": config },
    body,
  });
  await res.text();
  expect(res.status).toBe(200);
  return performance.now() - t0;
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

it("steady compact ÷ pass-through, in workerd", async () => {
  const rounds = Number(process.env.LATENCY_ROUNDS ?? 200);
  const body = latencyRequest();
  await time("w-steady", body, ON);
  const pass: number[] = [];
  const steady: number[] = [];
  for (let i = 0; i < rounds + 10; i++) {
    const p = await time("w-off", body);
    const s = await time("w-steady", body, ON);
    if (i < 10) continue;
    pass.push(p);
    steady.push(s);
  }
  console.log(
    `in workerd (${rounds} rounds): pass-through p50 ${pct(pass, 50).toFixed(2)} / p99 ${pct(pass, 99).toFixed(2)} ms; steady p50 ${pct(steady, 50).toFixed(2)} / p99 ${pct(steady, 99).toFixed(2)} ms; ratio p50 ${(pct(steady, 50) / pct(pass, 50)).toFixed(2)}, p99 ${(pct(steady, 99) / pct(pass, 99)).toFixed(2)}`,
  );
});

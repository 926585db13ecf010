/**
 * The eval's report file: one self-contained HTML page (no script, no external asset) with the
 * settings, a chart of agreement and cost per config (offload off, offload on), the figures of the
 * terminal table, and every disagreement with both answers side by side, B's recall calls and the
 * stubbed results it saw. Everything from the traces is escaped: a trace is hostile input.
 */
import type { Disagreement, EvalReport } from "./summary.ts";
import { verdictLine } from "./table.ts";
import type { AnswerView, Proportion } from "./types.ts";

/** Text made safe inside HTML elements and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  );
}

const pct = (x: number | null) => (x === null ? "–" : `${(x * 100).toFixed(1)}%`);
const money = (x: number) => `$${x.toFixed(4)}`;

function ci(p: Proportion): string {
  return p.low === null ? "–" : `${pct(p.low)} – ${pct(p.high)}`;
}

/** Two panels: agreement with its 95% interval, and billed dollars per call, for each config. */
function chart(r: EvalReport): string {
  const W = 640;
  const H = 260;
  const top = 48;
  const base = H - 40;
  const span = base - top;
  const bar = 70;
  const bars: string[] = [];
  const label = (x: number, y: number, text: string, anchor = "middle") =>
    `<text x="${x}" y="${y}" text-anchor="${anchor}">${escapeHtml(text)}</text>`;
  // Agreement panel (left): A/A is the noise floor, A/B the config under test.
  const agree: [string, Proportion, string][] = [
    ["A/A (off, twice)", r.aa.agree, "#8a8f98"],
    ["A/B (off vs on)", r.ab.agree, "#2f6fdb"],
  ];
  for (const tick of [0, 0.5, 1]) {
    const y = base - tick * span;
    bars.push(`<line x1="40" y1="${y}" x2="290" y2="${y}" stroke="#e3e3e3"/>`);
    bars.push(label(36, y + 4, pct(tick).replace(".0", ""), "end"));
  }
  agree.forEach(([name, p, color], i) => {
    const x = 60 + i * 110;
    if (p.rate !== null) {
      const h = p.rate * span;
      bars.push(`<rect x="${x}" y="${base - h}" width="${bar}" height="${h}" fill="${color}"/>`);
      const lo = base - p.low! * span;
      const hi = base - p.high! * span;
      const cx = x + bar / 2;
      bars.push(
        `<path d="M${cx} ${lo}V${hi}M${cx - 8} ${lo}H${cx + 8}M${cx - 8} ${hi}H${cx + 8}" stroke="#111" stroke-width="1.5"/>`,
      );
      bars.push(label(cx, hi - 6, pct(p.rate)));
    }
    bars.push(label(x + bar / 2, base + 16, name));
  });
  bars.push(label(155, 16, "agreement (95% Wilson interval)"));
  // Cost panel (right): billed dollars per sampled call, B's recall hops included.
  const perCall = (x: EvalReport["spend"]["a"]) => (x.answers === 0 ? 0 : x.usd / x.answers);
  const costs: [string, number, string][] = [
    ["A (offload off)", perCall(r.spend.a), "#8a8f98"],
    ["B (offload on)", perCall(r.spend.b), "#2f6fdb"],
  ];
  const most = Math.max(...costs.map(([, v]) => v), 1e-12);
  costs.forEach(([name, v, color], i) => {
    const x = 380 + i * 110;
    const h = (v / most) * span;
    bars.push(`<rect x="${x}" y="${base - h}" width="${bar}" height="${h}" fill="${color}"/>`);
    bars.push(label(x + bar / 2, base - h - 6, money(v)));
    bars.push(label(x + bar / 2, base + 16, name));
  });
  bars.push(label(475, 16, "billed dollars per call"));
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="agreement and cost per config" font-family="system-ui, sans-serif" font-size="12">
<line x1="40" y1="${base}" x2="${W - 20}" y2="${base}" stroke="#999"/>
${bars.join("\n")}
</svg>`;
}

function answerHtml(a: AnswerView): string {
  const calls = a.calls
    .map(
      (c) =>
        `<div class="call">→ ${escapeHtml(c.name)}<pre>${escapeHtml(JSON.stringify(c.args, null, 2))}</pre></div>`,
    )
    .join("");
  const text = a.text === "" ? "<em>(no text)</em>" : `<pre>${escapeHtml(a.text)}</pre>`;
  return `${text}${calls}<div class="meta">stop: ${escapeHtml(a.stop ?? "–")}</div>`;
}

function disagreementHtml(d: Disagreement): string {
  const second = d.pair === "AB" ? "B (offload on)" : "A again (offload off)";
  const recalls =
    d.pair === "AB"
      ? `<p class="meta">B made ${d.hops} recall hop(s)${d.ending === null ? "" : `, its loop ended ${escapeHtml(d.ending)}`}.</p>${
          d.recalls.length === 0
            ? ""
            : `<ul>${d.recalls.map((c) => `<li>hop ${c.hop}: <code>recall_tool_result ${escapeHtml(c.arguments)}</code></li>`).join("")}</ul>`
        }`
      : "";
  const shown = d.shown
    .map(
      (s) =>
        `<details><summary>${escapeHtml(s.tool_name)} <code>${escapeHtml(s.tool_use_id)}</code>: ${s.action}, ${s.chars.toLocaleString("en-US")} chars as sent by the client</summary><pre>${escapeHtml(s.shown)}</pre></details>`,
    )
    .join("");
  return `<section class="case">
<h3>${escapeHtml(d.session)}, call ${d.call} <span class="why">${escapeHtml(d.why)}</span></h3>
${d.judge_reason === null ? "" : `<p class="meta">judge: ${escapeHtml(d.judge_reason)}</p>`}
<table class="side"><tr><th>A (offload off)</th><th>${second}</th></tr>
<tr><td>${answerHtml(d.first)}</td><td>${answerHtml(d.second)}</td></tr></table>
${recalls}
${shown === "" ? "" : `<h4>Results the config changed, as B saw them</h4>${shown}`}
</section>`;
}

/** The report as one self-contained HTML page (the CLI's `--report`). */
export function renderHtml(r: EvalReport): string {
  const s = r.settings;
  const ab = r.disagreements.filter((d) => d.pair === "AB");
  const aa = r.disagreements.filter((d) => d.pair === "AA");
  const agreeRow = (name: string, a: EvalReport["ab"]) =>
    `<tr><td>${name}</td><td>${a.agree.n}</td><td>${pct(a.agree.rate)}</td><td>${ci(a.agree)}</td><td>${pct(a.action.rate)}</td><td>${pct(a.text_exact.rate)}</td><td>${a.mean_similarity === null ? "–" : a.mean_similarity.toFixed(2)}</td></tr>`;
  const spendRow = (name: string, x: EvalReport["spend"]["a"]) =>
    `<tr><td>${name}</td><td>${x.calls}</td><td>${x.prompt_tokens.toLocaleString("en-US")}</td><td>${x.output_tokens.toLocaleString("en-US")}</td><td>${money(x.usd)}</td></tr>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>edge-offload eval: ${escapeHtml(s.model)}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#111}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
table.side{width:100%;table-layout:fixed}pre{white-space:pre-wrap;word-break:break-word;margin:0;font-size:12px}
.meta{color:#555;font-size:12px}.why{font-weight:normal;color:#a33;font-size:13px}.case{border-top:1px solid #ccc;margin-top:1.5em}
.verdict{font-weight:600}code{font-size:12px}
</style></head><body>
<h1>Does the model still answer the same with offload on?</h1>
<p>${escapeHtml(s.input)}: ${r.evaluated} of ${r.sampled} sampled calls compared (${r.candidates} of ${r.calls} calls in ${r.sessions} sessions changed by the config). Model <code>${escapeHtml(s.model)}</code> via <code>${escapeHtml(s.provider)}</code> at <code>${escapeHtml(s.endpoint)}</code>, seed ${s.seed}, temperature ${r.temperature === null ? "the model's default (it refused 0)" : "0"}${s.judge === null ? "" : `, judge <code>${escapeHtml(s.judge)}</code>`}.</p>
<p>Config under test: <code>${escapeHtml(JSON.stringify(s.config))}</code></p>
${chart(r)}
<p class="verdict">${escapeHtml(verdictLine(r))}</p>
<table><tr><th>pair</th><th>pairs</th><th>agree</th><th>95% CI (Wilson)</th><th>same action</th><th>same text</th><th>similarity</th></tr>
${agreeRow("A/B: offload off vs on", r.ab)}${agreeRow("A/A: offload off, twice", r.aa)}</table>
<p>B's recall hops: ${r.hops.total} on ${r.hops.calls_with_hops} calls (at most ${r.hops.max} on one), ${r.hops.recalls} recall calls, ${r.hops.exhausted} stopped at the hop limit.</p>
<table><tr><th>billed (provider usage)</th><th>calls</th><th>prompt tokens</th><th>output tokens</th><th>dollars</th></tr>
${spendRow("A: offload off", r.spend.a)}${spendRow("B: offload on, recall hops included", r.spend.b)}${spendRow("A again (A/A)", r.spend.aa)}${spendRow("judge", r.spend.judge)}
<tr><td>total</td><td></td><td></td><td></td><td>${money(r.spend.total_usd)}</td></tr></table>
<p class="meta">Each call was sent once, with a cold cache: the dollars say what B's stubs remove from one call and what its recall hops add. The saving over whole sessions, with the cache warm, is what <code>edge-offload replay</code> measures. How to read this page: docs/measure.md.</p>
<h2>A/B disagreements (${ab.length})</h2>
${ab.length === 0 ? "<p>None.</p>" : ab.map(disagreementHtml).join("\n")}
<h2>A/A disagreements: the model's own noise (${aa.length})</h2>
${aa.length === 0 ? "<p>None.</p>" : aa.map(disagreementHtml).join("\n")}
${r.b_problems.length === 0 ? "" : `<h2>B calls with a problem in the proxy (${r.b_problems.length})</h2><ul>${r.b_problems.map((b) => `<li><code>${escapeHtml(b.id)}</code>: ${escapeHtml(b.problems.join("; "))}</li>`).join("")}</ul>`}
${r.failures.length === 0 ? "" : `<h2>Failed calls (${r.failures.length})</h2><ul>${r.failures.map((f) => `<li><code>${escapeHtml(f.id)}</code> ${escapeHtml(f.what)}: ${escapeHtml(f.message)}</li>`).join("")}</ul>`}
</body></html>
`;
}

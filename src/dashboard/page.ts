/**
 * The dashboard's two pages as HTML strings (bundled by wrangler like any module: no build step, no CDN). The
 * login page posts the key; the dashboard page carries the tenant and key in a JSON boot block that its inline
 * script (client.ts) reads. Every value put in markup here is escaped; the script renders the data with
 * textContent only.
 */
import { CLIENT_SCRIPT } from "./client.ts";

const HTML_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/**
 * JSON safe inside a <script> element: no "<" (so no "</script>" or "<!--"), and no U+2028/2029 (line breaks
 * for older JavaScript parsers). The escapes are JSON escapes, so JSON.parse gives the same value back.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

const STYLE = `
:root { color-scheme: light; --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bg: #f6f8fa; --before: #c2410c; --after: #15803d; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: #fff; }
header { display: flex; align-items: center; gap: 16px; padding: 12px 24px; border-bottom: 1px solid var(--line); background: var(--bg); }
header h1 { font-size: 16px; margin: 0; }
header .spacer { flex: 1; }
main { padding: 16px 24px 48px; max-width: 1400px; }
h2 { font-size: 18px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 20px 0 6px; }
.muted, .hint, .tick { color: var(--muted); }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 12px; margin-top: 8px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card .label { color: var(--muted); font-size: 12px; }
.card .value { font-size: 22px; font-weight: 600; }
.card .hint { font-size: 12px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.reason { min-width: 220px; max-width: 300px; }
td.fire { color: var(--after); white-space: nowrap; }
td.decline { color: var(--before); white-space: nowrap; }
tr.selected td { background: #ddf4ff; }
.scroll { overflow-x: auto; }
button { font: inherit; }
button.link { border: 0; background: none; padding: 0; color: var(--accent); cursor: pointer; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; text-align: left; word-break: break-all; }
button.action { border: 1px solid var(--line); background: #fff; border-radius: 6px; padding: 4px 10px; cursor: pointer; }
.mode { display: inline-block; font-size: 12px; padding: 0 6px; border-radius: 10px; border: 1px solid var(--line); font-weight: 500; vertical-align: middle; }
.mode.live { color: var(--after); border-color: var(--after); }
.mode.shadow { color: #8250df; border-color: #8250df; }
.mode.none { color: var(--muted); }
p.note { border-left: 3px solid #8250df; padding: 4px 10px; color: #8250df; }
#error { color: #cf222e; border: 1px solid #cf222e; border-radius: 6px; padding: 8px 12px; margin: 12px 0; }
#chart { width: 100%; max-width: 960px; height: auto; border: 1px solid var(--line); border-radius: 8px; background: #fff; }
#chart .grid { stroke: #eaeef2; stroke-width: 1; }
#chart .tick { font-size: 11px; fill: var(--muted); }
#chart .line { stroke-width: 2.5; }
#chart .line.before { stroke: var(--before); }
#chart .line.after { stroke: var(--after); }
#chart .dot.before { fill: var(--before); }
#chart .dot.after { fill: var(--after); }
#chart .dot.shadow { fill: #fff; stroke-width: 2; }
#chart .dot.shadow.before { stroke: var(--before); }
#chart .dot.shadow.after { stroke: var(--after); }
.legend { display: flex; gap: 18px; font-size: 12px; color: var(--muted); margin: 4px 0 6px; }
.legend .key::before { content: ""; display: inline-block; width: 18px; height: 3px; margin-right: 6px; vertical-align: middle; }
.legend .key.before::before { background: var(--before); }
.legend .key.after::before { background: var(--after); }
.legend .key.shadow::before { width: 9px; height: 9px; border-radius: 50%; border: 2px solid var(--after); background: #fff; }
.stats { display: grid; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); gap: 4px 16px; margin: 12px 0; }
.stat dt { color: var(--muted); font-size: 12px; }
.stat dd { margin: 0; font-weight: 600; }
form.login { max-width: 380px; margin: 12vh auto; border: 1px solid var(--line); border-radius: 10px; padding: 24px; }
form.login h1 { font-size: 18px; margin: 0 0 12px; }
form.login input { width: 100%; padding: 8px; font: inherit; border: 1px solid var(--line); border-radius: 6px; margin: 6px 0 12px; }
form.login button { padding: 8px 16px; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
form.login .message { color: #cf222e; }
`;

function htmlDocument(title: string, nonce: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<style nonce="${escapeHtml(nonce)}">${STYLE}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

/** The key form. It posts, so the key travels in the body, not in a URL that logs and history keep. */
export function loginPage(nonce: string, message?: string, localKey?: string): string {
  return htmlDocument(
    "edge-offload: sign in",
    nonce,
    `<form class="login" method="post" action="/" autocomplete="off">
<h1>edge-offload dashboard</h1>
${message === undefined ? "" : `<p class="message" id="login-message">${escapeHtml(message)}</p>`}
${localKey === undefined ? "" : `<p class="hint" id="login-hint">Running locally: <code>npm start</code>'s key (from .dev.vars) is <code>${escapeHtml(localKey)}</code>.</p>`}
<label for="key">API key</label>
<input id="key" name="key" type="password" required autofocus spellcheck="false">
<button type="submit">Show savings</button>
<p class="muted">The key of a tenant in OFFLOAD_API_KEYS. It stays in this page's memory and is sent only as the Authorization header of its API calls.</p>
</form>`,
  );
}

export function dashboardPage(nonce: string, boot: { tenant: string; key: string }): string {
  return htmlDocument(
    "edge-offload: savings",
    nonce,
    `<header>
<h1>edge-offload savings</h1>
<span class="muted">tenant <span class="mono" id="tenant"></span></span>
<span class="spacer"></span>
<button type="button" class="action" id="refresh">Refresh</button>
<a href="/">Sign out</a>
</header>
<main>
<div id="error" hidden></div>
<section class="cards" id="totals" aria-label="Totals"></section>
<p class="note" id="shadow-note" hidden></p>
<p class="muted" id="index-note"></p>
<h2>Sessions</h2>
<div class="scroll">
<table id="sessions">
<thead><tr><th>session</th><th>mode</th><th>turns</th><th>saved (estimate)</th><th>saved (billed)</th><th>would save</th><th>recall rate</th><th>last active</th></tr></thead>
<tbody id="sessions-body"></tbody>
</table>
</div>
<section id="session" hidden></section>
</main>
<script type="application/json" id="boot">${jsonForScript(boot)}</script>
<script nonce="${escapeHtml(nonce)}">${CLIENT_SCRIPT}</script>`,
  );
}

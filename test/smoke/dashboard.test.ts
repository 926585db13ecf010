/**
 * The dashboard in a real browser: `wrangler dev` (production runtime rules), two compacted turns of a live
 * session and two of a shadow session over HTTP, then Debian's headless Chromium (driven by playwright-core)
 * signs in with the form, sees the sessions, opens the live one and finds its chart and last-turn decisions in
 * the DOM. A screenshot goes to test/.artifacts/dashboard.png (git-ignored). Without /usr/bin/chromium the test
 * is skipped, and says so in the output, except in CI, where .ci/run installs it.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogMessages } from "../support/providers.ts";
import { type DevServer, startDevServer } from "./dev-server.ts";

/** Debian's Chromium; EDGE_OFFLOAD_CHROMIUM points elsewhere (test/unit/browser-skip.test.ts names a missing one). */
const CHROMIUM = process.env.EDGE_OFFLOAD_CHROMIUM || "/usr/bin/chromium";
const KEY = "sk-dashboard-smoke-key";
const OTHER_KEY = "sk-dashboard-other-tenant";
const ARTIFACTS = join(process.cwd(), "test", ".artifacts");
const EVIL_TOOL = '<img src=x onerror="document.title=1">';
const LIVE = {
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
  tool_result_tool_rules: [{ tool: "status", offload: "never" }],
};
const SHADOW = { ...LIVE, tool_result_offload_shadow: true };

const available = existsSync(CHROMIUM);
if (!available && process.env.CI === "true")
  throw new Error(`${CHROMIUM} is missing: .ci/run installs Debian's chromium with apt-get`);
/** Why the browser test did not run, in the test's output (a skipped test named for it, and a warning). */
const SKIPPED = `skipped: ${CHROMIUM} is missing (apt-get install chromium to run it; CI installs it)`;
if (!available) console.warn(`dashboard.test.ts: the browser test was ${SKIPPED}`);

let server: DevServer | undefined;
let context: BrowserContext | undefined;
let profile: string | undefined;

beforeAll(async () => {
  if (!available) return;
  server = await startDevServer({
    OFFLOAD_API_KEYS: `smoke:${KEY},other:${OTHER_KEY}`,
    OFFLOAD_DASHBOARD_URL_KEYS: "on",
    OFFLOAD_SECRET: "dashboard-smoke-secret-0123456789",
  });
  profile = mkdtempSync(join(tmpdir(), "edge-offload-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 1100 },
    // Without the background-networking flags Chromium keeps dialling out of this closed network.
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});

afterAll(async () => {
  await context?.close();
  await server?.stop();
  if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
});

type Message = { role: string; content: unknown };

function turn1(): { model: string; max_tokens: number; messages: Message[] } {
  return {
    model: "claude-opus-4-5",
    max_tokens: 512,
    messages: catalogMessages(EVIL_TOOL) as Message[],
  };
}

function appended(history: { messages: Message[] }, k: number) {
  return {
    ...history,
    messages: [
      ...history.messages,
      {
        role: "assistant",
        content: [{ type: "tool_use", id: `toolu_${k}`, name: "status", input: {} }],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: `toolu_${k}`, content: `still ok ${k}` }],
      },
    ],
  };
}

/** Two compacted turns: the client appends to whatever the service returned. */
async function twoTurns(session: string, config: object): Promise<string> {
  const url = `${server!.base}/v1/sessions/${session}/compact?format=anthropic`;
  const headers = {
    authorization: `Bearer ${KEY}`,
    "content-type": "application/json",
    "x-offload-config": JSON.stringify(config),
  };
  const first = await fetch(url, { method: "POST", headers, body: JSON.stringify(turn1()) });
  expect(first.status).toBe(200);
  const out1 = await first.text();
  const second = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify(appended(JSON.parse(out1) as { messages: Message[] }, 3)),
  });
  expect(second.status).toBe(200);
  await second.arrayBuffer();
  return out1;
}

if (!available) {
  describe("dashboard in headless Chromium", () => {
    it.skip(SKIPPED, () => {});
  });
}

describe.skipIf(!available)("dashboard in headless Chromium", () => {
  it("signs in with the form, lists the sessions, draws the session's chart and its last decisions", async () => {
    const stamp = Date.now().toString(36);
    const live = `dash-live-${stamp}`;
    const shadow = `dash-shadow-${stamp}`;
    const out1 = await twoTurns(live, LIVE);
    const mem = /trm_[0-9a-f]{24}/.exec(out1)![0];
    const recall = await fetch(`${server!.base}/v1/sessions/${live}/recall`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ mem_id: mem, json_path: "items[3]" }),
    });
    expect(((await recall.json()) as { is_error: boolean }).is_error).toBe(false);
    await twoTurns(shadow, SHADOW);

    const page = await context!.newPage();
    const problems: string[] = [];
    page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()}`);
    });

    const login = await page.goto(`${server!.base}/`);
    expect(login?.status()).toBe(200);
    expect(login?.headers()["cache-control"]).toBe("no-store");
    await page.fill("#key", KEY);
    await Promise.all([page.waitForURL(`${server!.base}/`), page.click("button[type=submit]")]);
    await page.waitForSelector(`#sessions-body tr[data-session="${live}"]`);
    expect(await page.textContent("#tenant")).toBe("smoke");
    expect(
      await page.locator(`#sessions-body tr[data-session="${shadow}"] .mode`).textContent(),
    ).toBe("shadow");
    // Shadow sessions say what they would save, and the one line that turns them live.
    expect(await page.textContent("#shadow-note")).toMatch(
      /^shadow: 1 session\(s\) would save \$0\.\d{4} so far; one line to go live: \{"tool_result_offload_shadow":false\}/,
    );

    await page.click(`#sessions-body tr[data-session="${live}"] button`);
    await page.waitForSelector(`#session-id:text-is("${live}")`);
    const chart = page.locator("#chart");
    expect(await chart.getAttribute("data-turns")).toBe("2");
    const points = async (series: string) =>
      (
        (await page.locator(`#chart polyline[data-series="${series}"]`).getAttribute("points")) ??
        ""
      )
        .trim()
        .split(/\s+/)
        .map((p) => p.split(",").map(Number));
    const before = await points("before");
    const after = await points("after");
    expect(before).toHaveLength(2);
    expect(after).toHaveLength(2);
    // Fewer tokens with offload: its line runs lower (a larger SVG y) on both turns.
    for (let i = 0; i < 2; i++) expect(after[i]![1]).toBeGreaterThan(before[i]![1]! + 20);
    expect(await page.locator('#chart circle[data-series="after"]').count()).toBe(2);
    expect(await page.locator("#chart circle.shadow").count()).toBe(0);

    const saved = await page.locator('#session [data-field="saved_usd"] dd').textContent();
    expect(saved).toMatch(/^\$0\.\d{4} \([\d,]+ tokens\)$/);
    expect(await page.locator('#session [data-field="recall_rate"] dd').textContent()).toBe("100%");
    const offloadedRow = page.locator('#decisions-table tr[data-tool-use-id="toolu_1"]');
    expect(await offloadedRow.textContent()).toContain("offloaded (sticky)");
    expect(await offloadedRow.locator("td.fire").textContent()).toMatch(/^fired \$/);
    // A client-sent tool name is shown as text, never as markup.
    expect(await page.locator("#decisions-table img").count()).toBe(0);
    expect(
      await page.locator('#decisions-table tr[data-tool-use-id="toolu_2"] td').nth(1).textContent(),
    ).toBe(EVIL_TOOL);
    // A tool rule's effect, with its reason.
    expect(
      await page.locator('#decisions-table tr[data-tool-use-id="toolu_3"] td.reason').textContent(),
    ).toBe("kept: tool rule `status` says never");
    expect(await page.locator("#session-note").count()).toBe(0);
    expect(await page.title()).toBe("edge-offload: savings");

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "dashboard.png"), fullPage: true });

    // The shadow session: hollow markers for "would have sent", and its saving as a would-save.
    await page.click(`#sessions-body tr[data-session="${shadow}"] button`);
    await page.waitForSelector(`#session-id:text-is("${shadow}")`);
    expect(await page.locator('#chart circle.shadow[data-series="after"]').count()).toBe(2);
    expect(await page.locator('#chart circle.shadow[data-series="before"]').count()).toBe(0);
    expect(await page.textContent("#session-note")).toMatch(
      /^shadow: would have saved \$0\.\d{4} so far; one line to go live: /,
    );
    expect(await page.locator('#session [data-field="saved_usd"] dd').textContent()).toBe(
      "$0.0000 (0 tokens)",
    );
    expect(await page.locator('#session [data-field="would_save_usd"] dd').textContent()).toMatch(
      /^\$0\.\d{4} \([\d,]+ tokens\)$/,
    );
    await page.screenshot({ path: join(ARTIFACTS, "dashboard-shadow.png"), fullPage: true });

    expect(problems).toEqual([]);
    // The key went in a form body and an Authorization header: neither wrangler nor the Worker printed it.
    expect(server!.output()).not.toContain(KEY);
    await page.close();
  });

  it("refuses a wrong key with the form again, and takes ?key= for local use, then drops it from the address bar", async () => {
    const page = await context!.newPage();
    await page.goto(`${server!.base}/`);
    await page.fill("#key", "not-a-key");
    const [res] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST"),
      page.click("button[type=submit]"),
    ]);
    expect(res.status()).toBe(401);
    expect(await page.textContent("#login-message")).toBe("Unknown API key.");

    await page.goto(`${server!.base}/?key=${encodeURIComponent(OTHER_KEY)}`);
    await page.waitForSelector("#totals [data-field=sessions]");
    expect(page.url()).toBe(`${server!.base}/`);
    expect(await page.textContent("#tenant")).toBe("other");
    // Another tenant sees none of smoke's sessions.
    expect(await page.locator("#sessions-body tr[data-session]").count()).toBe(0);
    expect(await page.locator("#session").isHidden()).toBe(true);
    await page.close();
  });
});

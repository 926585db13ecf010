// The savings report routes and shadow mode through the service (workerd, real local bindings).

import { createExecutionContext, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { SessionReportSchema, TenantReportSchema } from "../../src/routes/schemas/report.ts";
import { durableTenants } from "../../src/store/durable.ts";
import { indexSessionKey } from "../../src/store/keys.ts";
import {
  call,
  compactPath,
  conversation,
  expectError,
  KEYS,
  memIdIn,
  nextTurn,
  ON,
  request,
  sid,
  summary,
} from "./helpers.ts";

const SHADOW = { ...ON, tool_result_offload_shadow: true };

async function report(session: string, key: string = KEYS.acme) {
  const res = await call(`/v1/sessions/${session}/report`, { key });
  expect(res.status).toBe(200);
  expect(res.headers.get("cache-control")).toBe("no-store");
  return SessionReportSchema.parse(await res.json());
}

/** Every page of the tenant summary (bounded), rows and missing counts gathered. */
async function allPages(key: string = KEYS.acme, limit = 50) {
  const rows: ReturnType<typeof TenantReportSchema.parse>["sessions"] = [];
  let missing = 0;
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const res = await call(
      `/v1/report?limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
      { key },
    );
    expect(res.status).toBe(200);
    const page = TenantReportSchema.parse(await res.json());
    rows.push(...page.sessions);
    missing += page.missing;
    cursor = page.cursor;
    if (cursor === null) return { rows, missing };
  }
  throw new Error("too many pages");
}

describe("GET /v1/sessions/:id/report", () => {
  it("gives per-turn tokens with and without offload, savings, the recalls that followed, and the last turn's decisions", async () => {
    const session = sid("report-live");
    const first = await call(compactPath(session), { body: conversation(), config: ON });
    const mem = memIdIn(await first.text());
    const answer = (await (
      await call(`/v1/sessions/${session}/recall`, { body: { mem_id: mem, json_path: "items[3]" } })
    ).json()) as { is_error: boolean };
    expect(answer.is_error).toBe(false);
    const second = await call(compactPath(session), {
      body: nextTurn(conversation(), 3),
      config: ON,
    });
    const s2 = summary(second);

    const r = await report(session);
    expect(r).toMatchObject({ tenant: "acme", session, mode: "live" });
    expect(
      r.turns.map((t) => [t.turn, t.shadow, t.offloaded, t.recalls, t.gate_fired, t.gate_declined]),
    ).toEqual([
      [2, false, 1, 1, 1, 0],
      [3, false, 1, 0, 0, 0],
    ]);
    for (const t of r.turns) {
      expect(t.saved_tokens).toBe(t.tokens_before - t.tokens_after);
      expect(t.saved_tokens).toBeGreaterThan(20_000);
      expect(t.saved_usd).toBeGreaterThan(0);
      expect([t.would_save_tokens, t.would_save_usd]).toEqual([0, 0]);
    }
    expect(r.turns[1]).toMatchObject({
      tokens_before: s2.tokens_before,
      tokens_after: s2.tokens_after,
      saved_usd: s2.saved_usd,
    });
    expect(r.last_turn_at).toBe(r.turns[1]!.at);
    expect(r.totals).toMatchObject({
      calls: 2,
      turns_logged: 2,
      shadow_turns: 0,
      offloaded: 1,
      offloaded_recalled: 1,
      recalls: 1,
      recall_rate: 1,
      gate_fired: 1,
      gate_declined: 0,
      would_save_usd: 0,
    });
    expect(r.totals.saved_usd).toBeCloseTo(r.turns[0]!.saved_usd + r.turns[1]!.saved_usd, 9);

    const last = r.last_turn!;
    expect(last).toMatchObject({ turn: 3, shadow: false, decisions_total: 3 });
    expect(last.decisions.map((d) => [d.tool_use_id, d.action, d.sticky])).toEqual([
      ["toolu_1", "offloaded", true],
      ["toolu_2", "kept", false], // settled on this turn: decided now (small)
      ["toolu_3", "kept", false],
    ]);
    const gate = last.decisions[0]!.gate!;
    expect(gate.fire).toBe(true);
    expect(gate.net_usd).toBeCloseTo(
      gate.reprefill_saving_usd -
        gate.stub_carry_cost_usd -
        gate.invalidation_cost_usd -
        gate.expected_recall_hop_cost_usd -
        gate.tool_declaration_cost_usd,
      6,
    );
    expect(last.decisions[2]!.gate).toBeNull();
  });

  it("answers 404 for an unknown session or another tenant's, 400 for a bad id, 401 without a key", async () => {
    const session = sid("report-404");
    await call(compactPath(session), { body: conversation(), config: ON });
    await expectError(
      await call(`/v1/sessions/${sid("never")}/report`),
      404,
      "not_found",
      "session",
    );
    await expectError(
      await call(`/v1/sessions/${session}/report`, { key: KEYS.globex }),
      404,
      "not_found",
      "session",
    );
    await expectError(await call("/v1/sessions/bad%2Fid/report"), 400, "invalid_argument");
    await expectError(
      await call(`/v1/sessions/${session}/report`, { key: null }),
      401,
      "unauthorized",
    );
    await expectError(
      await call(`/v1/sessions/${session}/report`, { key: "wrong" }),
      401,
      "unauthorized",
    );
    // A session that only has a config layer exists, with nothing logged yet.
    const configured = sid("report-config-only");
    await call(`/v1/sessions/${configured}/config`, { method: "PUT", body: SHADOW });
    expect(await report(configured)).toMatchObject({
      mode: null,
      last_turn_at: null,
      turns: [],
      last_turn: null,
      totals: { turns_logged: 0, recall_rate: null },
    });
  });
});

describe("shadow mode through the service", () => {
  it("returns the same bytes, says would-save in the summary, records everything, and is sticky once turned off", async () => {
    const session = sid("shadow");
    await call(`/v1/sessions/${session}/config`, { method: "PUT", body: SHADOW });
    const body = JSON.stringify(conversation());
    const first = await call(compactPath(session), { body });
    expect(await first.text()).toBe(body);
    const s1 = summary(first);
    expect(s1).toMatchObject({
      enabled: true,
      shadow: true,
      changed: false,
      offloaded: 1,
      saved_tokens: 0,
      saved_usd: 0,
      recall_tool: "none",
      tokens_after: s1.tokens_before,
    });
    expect(s1.would_save_tokens).toBeGreaterThan(20_000);
    expect(s1.would_save_usd).toBeGreaterThan(0);

    const next = JSON.stringify(nextTurn(conversation(), 3));
    const second = await call(compactPath(session), { body: next });
    expect(await second.text()).toBe(next);
    expect(summary(second)).toMatchObject({ shadow: true, changed: false });

    // The decision and its body are stored as a live turn would store them.
    const view = (await (await call(`/v1/sessions/${session}`)).json()) as {
      tool_results: { tool_use_id: string; action: string; mem_id: string | null }[];
    };
    const offloaded = view.tool_results.find((r) => r.tool_use_id === "toolu_1")!;
    expect(offloaded.action).toBe("offloaded");
    const memory = await call(`/v1/sessions/${session}/memories/${offloaded.mem_id}`);
    expect(memory.status).toBe(200);

    const r = await report(session);
    expect(r.mode).toBe("shadow");
    expect(r.turns.map((t) => [t.shadow, t.saved_tokens, t.saved_usd])).toEqual([
      [true, 0, 0],
      [true, 0, 0],
    ]);
    expect(r.turns[0]!.would_save_tokens).toBe(s1.would_save_tokens);
    expect(r.turns[0]!.would_save_usd).toBe(s1.would_save_usd);
    expect(r.turns[0]!.tokens_after).toBeLessThan(r.turns[0]!.tokens_before); // "with offload": what it would have sent
    expect(r.totals).toMatchObject({
      shadow_turns: 2,
      saved_tokens: 0,
      saved_usd: 0,
      offloaded: 1,
      recall_rate: 0,
    });
    expect(r.totals.would_save_usd).toBeCloseTo(
      r.turns[0]!.would_save_usd + r.turns[1]!.would_save_usd,
      9,
    );
    expect(r.last_turn).toMatchObject({ shadow: true, turn: 3 });

    // Shadow off: the shadow decisions are sticky, so the next live turn stubs toolu_1 and declares the recall tool.
    await call(`/v1/sessions/${session}/config`, { method: "PUT", body: ON });
    const live = await call(compactPath(session), {
      body: JSON.stringify(nextTurn(nextTurn(conversation(), 3), 4)),
    });
    const out = await live.text();
    expect(out).toContain(offloaded.mem_id!);
    expect(summary(live)).toMatchObject({
      shadow: false,
      changed: true,
      offloaded: 1,
      new_decisions: 0, // the sticky shadow decision is replayed; small results are derived, not decided
      recall_tool: "added",
    });
    expect(summary(live).saved_usd).toBeGreaterThan(0);
    const after = await report(session);
    expect(after.mode).toBe("live");
    expect(after.turns.map((t) => t.shadow)).toEqual([true, true, false]);
    expect(after.totals.saved_usd).toBe(after.turns[2]!.saved_usd);
  });

  it("keeps the tenant's learning statistics free of shadow offloads", async () => {
    const session = sid("shadow-stats");
    const adaptive = { ...SHADOW, tool_result_offload_adaptive: true };
    await call(compactPath(session), { body: conversation(), config: adaptive });
    const offloaded = async () =>
      (await durableTenants(env.TENANTS).read("acme")).tools.dump?.offloaded ?? 0;
    const before = await offloaded();
    const shadow = sid("shadow-stats-2");
    await call(compactPath(shadow), { body: conversation(), config: adaptive });
    expect(await offloaded()).toBe(before);
    const live = sid("live-stats");
    await call(compactPath(live), {
      body: conversation(),
      config: { ...ON, tool_result_offload_adaptive: true },
    });
    expect(await offloaded()).toBe(before + 1);
  });
});

describe("GET /v1/report", () => {
  it("sums the tenant's sessions page by page, from their Durable Objects, and shows no other tenant's", async () => {
    const live = sid("summary-live");
    const shadow = sid("summary-shadow");
    const theirs = sid("summary-globex");
    await call(compactPath(live), { body: conversation(), config: ON });
    await call(compactPath(live), { body: nextTurn(conversation(), 3), config: ON });
    await call(compactPath(shadow), { body: conversation(), config: SHADOW });
    await call(compactPath(theirs), { body: conversation(), config: ON, key: KEYS.globex });

    const first = await call("/v1/report?limit=50");
    expect(first.headers.get("cache-control")).toBe("no-store");
    const page = TenantReportSchema.parse(await first.json());
    expect(page).toMatchObject({ tenant: "acme", consistency: "eventual" });
    // The page's totals are the sums of its rows; the recall rate is recomputed from them.
    const sum = (f: (r: (typeof page.sessions)[number]) => number) =>
      page.sessions.reduce((n, r) => n + f(r), 0);
    expect(page.totals).toMatchObject({
      sessions: page.sessions.length,
      turns_logged: sum((r) => r.turns_logged),
      offloaded: sum((r) => r.offloaded),
      tokens_before: sum((r) => r.tokens_before),
    });
    expect(page.totals.saved_usd).toBeCloseTo(
      sum((r) => r.saved_usd),
      9,
    );
    // The sessions offloading made dearer on the bill are counted from the same rows, not netted.
    const measured = page.sessions.filter((r) => r.billed.turns_measured > 0);
    expect(page.totals.billed.dearer).toMatchObject({
      sessions: measured.filter((r) => r.billed.saved_usd < 0).length,
      of: measured.length,
    });

    const { rows } = await allPages();
    const mine = rows.filter((r) => r.session === live || r.session === shadow);
    expect(mine.map((r) => r.session).sort()).toEqual([live, shadow].sort());
    expect(rows.map((r) => r.session)).not.toContain(theirs);
    const l = rows.find((r) => r.session === live)!;
    const s = rows.find((r) => r.session === shadow)!;
    expect(l).toMatchObject({ mode: "live", turns_logged: 2, offloaded: 1, would_save_usd: 0 });
    expect(l.saved_usd).toBeGreaterThan(0);
    expect(s).toMatchObject({ mode: "shadow", turns_logged: 1, saved_usd: 0, shadow_turns: 1 });
    expect(s.would_save_usd).toBeGreaterThan(0);
    // The same numbers as the session's own report.
    expect(l.saved_usd).toBe((await report(live)).totals.saved_usd);

    const globex = await allPages(KEYS.globex);
    expect(globex.rows.map((r) => r.session)).toContain(theirs);
    expect(globex.rows.map((r) => r.session)).not.toContain(live);
  });

  it("pages with a cursor and counts sessions the lagging index still lists but that are gone", async () => {
    const a = sid("summary-page-a");
    await call(compactPath(a), { body: conversation(), config: ON });
    // An index entry without state: as KV shows for a while after a session was purged elsewhere.
    const ghost = sid("summary-ghost");
    await env.INDEX.put(indexSessionKey({ tenant: "acme", session: ghost }), "", {
      metadata: { session: ghost, created_at: 1 },
    });
    const one = TenantReportSchema.parse(await (await call("/v1/report?limit=1")).json());
    expect(one.sessions.length + one.missing).toBe(1);
    expect(one.cursor).not.toBeNull();
    const { rows, missing } = await allPages(KEYS.acme, 7);
    expect(rows.map((r) => r.session)).toContain(a);
    expect(rows.map((r) => r.session)).not.toContain(ghost);
    expect(missing).toBeGreaterThanOrEqual(1);
  });

  it("validates its query and needs a key", async () => {
    await expectError(await call("/v1/report?limit=0"), 400, "invalid_request", "query.limit");
    await expectError(await call("/v1/report?limit=51"), 400, "invalid_request", "query.limit");
    await expectError(await call("/v1/report?limit=x"), 400, "invalid_request", "query.limit");
    await expectError(await call("/v1/report?page=2"), 400, "invalid_request", "query.page");
    await expectError(await call("/v1/report", { key: null }), 401, "unauthorized");
  });

  it("is described in /openapi.json", async () => {
    const doc = (await (await call("/openapi.json", { key: null })).json()) as {
      paths: Record<string, unknown>;
      components: { schemas: Record<string, unknown> };
    };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/v1/report", "/v1/sessions/{session_id}/report"]),
    );
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(["SessionReport", "TenantReport"]),
    );
  });
});

describe("GET / and POST / (the dashboard)", () => {
  const html = async (res: Response) => {
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-store");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+'/);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    return res.text();
  };
  const form = (key: string) =>
    request("/", {
      method: "POST",
      key: null,
      body: `key=${encodeURIComponent(key)}`,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });

  it("serves the login form without a key, with no data in it", async () => {
    const res = await call("/", { key: null });
    expect(res.status).toBe(200);
    const page = await html(res);
    expect(page).toContain('<form class="login" method="post" action="/"');
    expect(page).not.toContain('id="boot"');
  });

  const urlKeys = (path: string, vars: Record<string, string> = {}) =>
    createApp({ log: () => {} }).fetch(
      request(path, { key: null }),
      { ...env, OFFLOAD_DASHBOARD_URL_KEYS: "on", ...vars },
      createExecutionContext(),
    );

  it("signs in with the form, or ?key= where the deployment allows it, and puts the tenant and key only in the boot data", async () => {
    for (const res of [
      await urlKeys(`/?key=${KEYS.acme}`),
      await (await import("cloudflare:test")).SELF.fetch(form(KEYS.acme)),
    ]) {
      expect(res.status).toBe(200);
      const page = await html(res);
      const boot = /<script type="application\/json" id="boot">([^<]*)<\/script>/.exec(page);
      expect(JSON.parse(boot![1]!)).toEqual({ tenant: "acme", key: KEYS.acme });
      const nonce = /script-src 'nonce-([^']+)'/.exec(
        res.headers.get("content-security-policy")!,
      )![1]!;
      expect(page).toContain(`<script nonce="${nonce}">`);
      expect(page.split(KEYS.acme)).toHaveLength(2); // exactly once
    }
  });

  it("answers ?key= with the login form alone unless OFFLOAD_DASHBOARD_URL_KEYS is on", async () => {
    for (const res of [
      await call(`/?key=${KEYS.acme}`, { key: null }),
      await urlKeys(`/?key=${KEYS.acme}`, { OFFLOAD_DASHBOARD_URL_KEYS: "" }),
      await urlKeys(`/?key=${KEYS.acme}`, { OFFLOAD_DASHBOARD_URL_KEYS: "yes" }),
    ]) {
      expect(res.status).toBe(200);
      const page = await html(res);
      expect(page).toContain('<form class="login" method="post" action="/"');
      expect(page).not.toContain(KEYS.acme);
      expect(page).not.toContain('id="boot"');
    }
  });

  it("answers a wrong or empty key with the form again (401), never echoing it", async () => {
    const wrong = await urlKeys(`/?key=${encodeURIComponent("<b>nope</b>")}`);
    expect(wrong.status).toBe(401);
    const page = await html(wrong);
    expect(page).toContain("Unknown API key.");
    expect(page).not.toContain("nope");
    const empty = await (await import("cloudflare:test")).SELF.fetch(form("   "));
    expect(empty.status).toBe(401);
    expect(await html(empty)).toContain("Enter an API key.");
  });

  it("says so when the deployment has no keys, and refuses an oversize form", async () => {
    const app = createApp({ log: () => {} });
    const none = await urlKeys(`/?key=anything-long-enough`, { OFFLOAD_API_KEYS: "" });
    expect(none.status).toBe(401);
    expect(await html(none)).toContain("no API keys configured");
    const big = await app.fetch(
      request("/", {
        method: "POST",
        key: null,
        body: `key=${"x".repeat(70_000)}`,
        headers: { "content-type": "application/x-www-form-urlencoded" },
      }),
      env,
      createExecutionContext(),
    );
    await expectError(big, 413, "payload_too_large");
  });
});

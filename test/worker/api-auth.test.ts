import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createApp } from "../../src/app.ts";
import { RecallRequestSchema } from "../../src/routes/schemas/session.ts";
import { BASE, call, expectError, KEYS, request, sid } from "./helpers.ts";

const quiet = () => {};

describe("unauthenticated routes", () => {
  it("GET /healthz needs no key", async () => {
    const res = await SELF.fetch(`${BASE}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it("GET /openapi.json documents every route, with the schemas the routes validate with", async () => {
    const res = await SELF.fetch(`${BASE}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.openapi).toBe("3.1.0");
    const { $schema: _, ...recall } = z.toJSONSchema(RecallRequestSchema, {
      target: "draft-2020-12",
      io: "input",
    }) as Record<string, unknown>;
    expect(doc.components.schemas.RecallRequest).toEqual(recall);
    const routes = createApp()
      .routes.filter((r) => r.method !== "ALL")
      .map(
        (r) =>
          `${r.method.toLowerCase()} ${r.path
            .replace(":id", "{session_id}")
            .replace(":mem_id", "{mem_id}")
            .replace(/(.)\/$/, "$1")}`,
      );
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m} ${path}`),
    );
    expect(new Set(routes)).toEqual(new Set(documented));
  });
});

describe("auth", () => {
  const path = `/v1/sessions/${sid("auth")}`;

  it("401s without a key, with another scheme, or with an unknown key, and says which", async () => {
    const none = await call(path, { key: null });
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect((await expectError(none, 401, "unauthorized")).error.message).toContain(
      "missing Authorization",
    );
    const basic = await SELF.fetch(`${BASE}${path}`, {
      headers: { authorization: "Basic YWNtZTprZXk=" },
    });
    expect((await expectError(basic, 401, "unauthorized")).error.message).toContain("Bearer <key>");
    const unknown = await call(path, { key: "test-key-acmf" });
    expect((await expectError(unknown, 401, "unauthorized")).error.message).toBe("unknown API key");
    await expectError(await call(path, { key: `${KEYS.acme}x` }), 401, "unauthorized");
    // The unknown-route 404 is behind auth too: nothing to learn about the API without a key.
    await expectError(await call("/v1/nothing", { key: null }), 401, "unauthorized");
  });

  it("fails closed when the deployment has no keys, and ignores malformed or ambiguous entries", async () => {
    const app = createApp({ log: quiet });
    const send = (keys: string | undefined, key: string) =>
      app.fetch(
        request(path, { key }),
        { ...env, OFFLOAD_API_KEYS: keys },
        createExecutionContext(),
      );
    expect(
      (await expectError(await send(undefined, "anything"), 401, "unauthorized")).error.message,
    ).toContain("no API keys");
    expect(
      (await expectError(await send("", "anything"), 401, "unauthorized")).error.message,
    ).toContain("no API keys");
    const lines: string[] = [];
    const logged = createApp({ log: (l) => lines.push(l) });
    const keys =
      " just-a-key-without-tenant ,\nacme:k-acme-0123456789\n, bad tenant:k2-0123456789abc, x:shared-0123456789, y:shared-0123456789 ";
    const viaKeys = (key: string) =>
      logged.fetch(
        request(path, { key }),
        { ...env, OFFLOAD_API_KEYS: keys },
        createExecutionContext(),
      );
    expect((await viaKeys("k-acme-0123456789")).status).toBe(404); // authenticated; no such session
    await expectError(await viaKeys("just-a-key-without-tenant"), 401, "unauthorized");
    await expectError(await viaKeys("shared-0123456789"), 401, "unauthorized");
    expect(lines.join("\n")).toMatch(/entry #1 ignored/);
    expect(lines.join("\n")).not.toMatch(/just-a-key|k-acme|shared-|k2-/);
  });

  it("holds every key to one rule, checked when OFFLOAD_API_KEYS is read, and the same for every way in", async () => {
    const lines: string[] = [];
    // The provider, for the proxy calls a good key lets through: never the real one.
    const provider = async () =>
      new Response("{}", { headers: { "content-type": "application/json" } });
    const app = createApp({ log: (l) => lines.push(l), fetch: provider });
    const spaced = "key with spaces 0123456789";
    const keys = `a:${spaced},b:short-key,c:${"k".repeat(257)},d:key-with\ttab-0123456,ok:good-key-0123456789`;
    const vars = { ...env, OFFLOAD_API_KEYS: keys };
    const fetch = (req: Request) => app.fetch(req, vars, createExecutionContext());
    const dashboard = (key: string) =>
      fetch(
        new Request(`${BASE}/`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: `key=${encodeURIComponent(key)}`,
        }),
      );
    const proxy = (key: string) =>
      fetch(
        new Request(`${BASE}/anthropic/v1/messages`, {
          method: "POST",
          headers: {
            "x-offload-key": key,
            "x-offload-session": "s",
            "content-type": "application/json",
          },
          body: "{",
        }),
      );
    // A key the rule refuses is refused on every route; a good one works on every route, blanks around it
    // trimmed the same way.
    for (const key of [spaced, "short-key", "key-with\ttab-0123456"]) {
      expect((await fetch(request(path, { key }))).status).toBe(401);
      expect((await dashboard(key)).status).toBe(401);
      expect((await proxy(key)).status).toBe(401);
    }
    // The operator learns which entries were dropped and why (once, not per request), never what they held.
    for (const n of [1, 2, 3, 4]) expect(lines.join("\n")).toContain(`entry #${n} ignored`);
    expect(lines.join("\n")).toContain("16–256 printable ASCII characters");
    expect(lines.join("\n")).not.toMatch(/spaces 0123|short-key|kkkk|tab-0123/);
    expect(lines.length).toBe(4);
    for (const key of ["good-key-0123456789", "  good-key-0123456789 "]) {
      expect((await dashboard(key)).status).toBe(200);
      expect((await proxy(key)).status).not.toBe(401);
    }
    expect((await fetch(request(path, { key: "good-key-0123456789" }))).status).toBe(404);
  });

  it("names the tenant from the key: the same session id under two keys is two sessions", async () => {
    const session = sid("two-tenants");
    await call(`/v1/sessions/${session}/config`, {
      method: "PUT",
      body: { tool_result_compaction_enabled: true },
    });
    const mine = (await (await call(`/v1/sessions/${session}`)).json()) as {
      tenant: string;
      config: object;
    };
    expect(mine).toMatchObject({
      tenant: "acme",
      config: { tool_result_compaction_enabled: true },
    });
    await expectError(
      await call(`/v1/sessions/${session}`, { key: KEYS.globex }),
      404,
      "not_found",
    );
  });
});

describe("errors", () => {
  it("404s an unknown route with the one error shape", async () => {
    await expectError(
      await call("/v1/sessions/x/explode", { method: "POST", body: "{}" }),
      404,
      "not_found",
    );
    await expectError(await SELF.fetch(`${BASE}/nope`), 404, "not_found");
  });

  it("500s without internals for an unexpected failure, and for a broken deployment config", async () => {
    const lines: string[] = [];
    const app = createApp({
      log: (l) => lines.push(l),
      store: () => {
        throw new Error("pool exhausted at db-7.internal:5432");
      },
    });
    const res = await app.fetch(
      request(`/v1/sessions/${sid("boom")}`),
      env,
      createExecutionContext(),
    );
    const body = await expectError(res, 500, "internal");
    expect(body.error.message).toBe("internal error");
    expect(lines.join("\n")).toContain("pool exhausted");

    const broken = await createApp({ log: quiet }).fetch(
      request(`/v1/sessions/${sid("boom")}`),
      { ...env, OFFLOAD_DEFAULT_CONFIG: '{"tool_result_compaction_enabled":"yes"' },
      createExecutionContext(),
    );
    const err = await expectError(broken, 500, "internal");
    expect(err.error.message).not.toContain("yes");
  });

  it("refuses a bad config body with 400 naming the field", async () => {
    const path = `/v1/sessions/${sid("config-400")}/config`;
    await expectError(await call(path, { method: "PUT", body: "[1" }), 400, "invalid_json");
    await expectError(
      await call(path, { method: "PUT", body: { tool_result_compaction_keep_last_n: -1 } }),
      400,
      "invalid_config",
      "config.tool_result_compaction_keep_last_n",
    );
    await expectError(
      await call(path, { method: "PUT", body: { tool_result_recall_mode: "fuzzy" } }),
      400,
      "invalid_config",
      "config.tool_result_recall_mode",
    );
    await expectError(
      await call(path, {
        method: "PUT",
        body: { keep_last_n: 1, tool_result_compaction_keep_last_n: 2 },
      }),
      400,
      "invalid_config",
      "config.keep_last_n",
    );
    await expectError(
      await call(path, { method: "PUT", body: [] }),
      400,
      "invalid_config",
      "config",
    );
  });
});

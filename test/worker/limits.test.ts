/**
 * The limits a deployment sets and a caller may only lower: extraction ceilings (OFFLOAD_EXTRACT_LIMITS) on
 * the query of POST /v1/extract and on the attachment policy's config keys; and list cursors that are the
 * caller's mistake (400), not an outage (503).
 */
import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { textPdf } from "../fixtures/pdf-writer.ts";
import { BASE, call, expectError, KEYS, request, sid } from "./helpers.ts";

function extract(bytes: Uint8Array, query: string, vars: Record<string, string> = {}) {
  const req = new Request(`${BASE}/v1/extract${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEYS.acme}`, "content-type": "application/pdf" },
    body: bytes,
  });
  if (Object.keys(vars).length === 0) return SELF.fetch(req);
  return createApp({ log: () => {} }).fetch(req, { ...env, ...vars }, createExecutionContext());
}

const pdf = (pages: number) =>
  textPdf(
    Array.from({ length: pages }, (_, i) => [`limits ${Math.random()}`, `page ${i + 1} of it`]),
  );

describe("extraction ceilings", () => {
  it("refuse a query that raises a limit above the deployment's ceiling, naming the field", async () => {
    for (const [q, field] of [
      ["?max_pages=10000", "max_pages"],
      ["?max_unzipped_entry_bytes=1000000000", "max_unzipped_entry_bytes"],
      ["?max_unzipped_bytes=1000000000&max_zip_ratio=100000", "max_unzipped_bytes"],
      ["?max_zip_ratio=100000", "max_zip_ratio"],
      ["?max_chars=50000000", "max_chars"],
    ] as const) {
      const body = await expectError(await extract(pdf(1), q), 400, "invalid_argument");
      expect(body.error.path, q).toBe(field);
      expect(body.error.message).toContain("may only lower");
    }
  });

  it("come from OFFLOAD_EXTRACT_LIMITS: lowered, they bound a caller's value and the defaults", async () => {
    const vars = { OFFLOAD_EXTRACT_LIMITS: '{"max_pages": 2}' };
    const refused = await expectError(
      await extract(pdf(5), "?max_pages=3", vars),
      400,
      "invalid_argument",
    );
    expect(refused.error.path).toBe("max_pages");
    const res = await extract(pdf(5), "", vars);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      pages: 5,
      pages_extracted: 2,
      truncated: true,
      truncated_by: "max_pages",
    });
    const broken = await extract(pdf(1), "", { OFFLOAD_EXTRACT_LIMITS: '{"max_pagez": 2}' });
    await expectError(broken, 500, "internal");
  });

  it("bound the attachment policy's config keys: a caller's layer above one is a 400", async () => {
    const session = sid("ceilings");
    for (const body of [{ attachment_max_pages: 1000 }, { attachment_max_chars: 2_000_000 }]) {
      const res = await createApp({ log: () => {} }).fetch(
        request(`/v1/sessions/${session}/config`, { method: "PUT", body }),
        { ...env, OFFLOAD_EXTRACT_LIMITS: '{"max_pages": 200, "max_chars": 100000}' },
        createExecutionContext(),
      );
      const err = await expectError(res, 400, "invalid_config");
      expect(err.error.path).toBe(`config.${Object.keys(body)[0]}`);
    }
    const header = await call(`/v1/sessions/${session}/recall`, {
      body: { mem_id: "trm_000000000000000000000000" },
      config: { attachment_max_pages: 1000 },
    });
    expect((await expectError(header, 400, "invalid_config")).error.path).toBe(
      "x-offload-config.attachment_max_pages",
    );
    // Within the ceilings: accepted, and the effective config says so.
    const ok = await call(`/v1/sessions/${session}/config`, {
      method: "PUT",
      body: { attachment_max_pages: 500 },
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ effective_config: { attachment_max_pages: 500 } });
  });

  it("bring a stored layer down once a deployment lowers its ceiling", async () => {
    const session = sid("lowered");
    await call(`/v1/sessions/${session}/config`, {
      method: "PUT",
      body: { attachment_max_pages: 400 },
    });
    const res = await createApp({ log: () => {} }).fetch(
      request(`/v1/sessions/${session}`),
      { ...env, OFFLOAD_EXTRACT_LIMITS: '{"max_pages": 30}' },
      createExecutionContext(),
    );
    expect(await res.json()).toMatchObject({
      config: { attachment_max_pages: 400 },
      effective_config: { attachment_max_pages: 30 },
    });
  });
});

describe("list cursors", () => {
  it("a cursor the index cannot read is a 400 naming it, on the sessions list and the tenant report", async () => {
    for (const path of ["/v1/sessions", "/v1/report"])
      for (const cursor of ["!!garbage!!", "%%%", "a b", "x".repeat(2000)]) {
        const res = await call(`${path}?cursor=${encodeURIComponent(cursor)}`);
        // An overlong one fails the query's own validation before the index sees it.
        const type = cursor.length > 1024 ? "invalid_request" : "invalid_argument";
        const body = await expectError(res, 400, type);
        expect(body.error.path, `${path} ${cursor.slice(0, 12)}`).toMatch(/cursor$/);
      }
  });

  it("a cursor the index returned still pages", async () => {
    for (const name of ["page-a", "page-b"])
      await call(`/v1/sessions/${sid(name)}/config`, { method: "PUT", body: {} });
    const first = (await (await call("/v1/sessions?limit=1")).json()) as { cursor: string | null };
    if (first.cursor === null) return; // KV's listing lags: nothing to page yet
    expect(
      (await call(`/v1/sessions?limit=1&cursor=${encodeURIComponent(first.cursor)}`)).status,
    ).toBe(200);
  });
});

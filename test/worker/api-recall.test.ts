import { createExecutionContext, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp, defaultParts } from "../../src/app.ts";
import { MemorySchema, RecallResponseSchema } from "../../src/routes/schemas/session.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { MemoryIndex } from "../../src/store/memory-index.ts";
import {
  call,
  catalog,
  compactPath,
  conversation,
  expectError,
  KEYS,
  memIdIn,
  ON,
  request,
  sid,
} from "./helpers.ts";

async function offloaded(session: string, config: object = ON): Promise<string> {
  const res = await call(compactPath(session), { body: conversation(), config });
  expect(res.status).toBe(200);
  return memIdIn(await res.text());
}

async function recall(session: string, body: object, init: { key?: string; config?: object } = {}) {
  const res = await call(`/v1/sessions/${session}/recall`, { body, ...init });
  expect(res.status).toBe(200);
  return RecallResponseSchema.parse(await res.json());
}

describe("POST /v1/sessions/:id/recall", () => {
  it("reads back by query, slice, json_path and head", async () => {
    const session = sid("recall");
    const mem = await offloaded(session);
    const body = catalog();

    const q = await recall(session, { mem_id: mem, query: '"name":"item-1499"', window: 20 });
    expect(q).toMatchObject({
      is_error: false,
      mode: "query",
      total_chars: body.length,
      matches: 1,
    });
    expect(q.content).toContain('"price":2248.5');

    const slice = await recall(session, { mem_id: mem, offset: 10, max_chars: 30 });
    expect(slice).toMatchObject({ mode: "slice", next_offset: 40, truncated: false });
    expect(slice.content).toContain(body.slice(10, 40));

    const path = await recall(session, { mem_id: mem, json_path: "items[3].price" });
    expect(path).toMatchObject({ mode: "json_path", matches: 1 });
    expect(path.content).toContain("4.5");

    const head = await recall(session, { mem_id: mem });
    expect(head.mode).toBe("head");
    expect(head.content.length).toBeLessThanOrEqual(50_000);
    expect(head.truncated).toBe(true); // the body is longer than one 50K answer
    expect(head.next_offset).toBeGreaterThan(0);

    const detail = (await (await call(`/v1/sessions/${session}`)).json()) as {
      totals: { recalls: number };
      tool_results: { mem_id: string | null; recalls: number }[];
    };
    expect(detail.totals.recalls).toBe(4);
    expect(detail.tool_results.find((r) => r.mem_id === mem)?.recalls).toBe(4);
  });

  it("answers a model's mistakes as is_error content, never as an HTTP error", async () => {
    const session = sid("recall-mistake");
    const mem = await offloaded(session);
    const unknown = await recall(session, { mem_id: `trm_${"0".repeat(24)}` });
    expect(unknown).toMatchObject({ is_error: true, mode: "error", total_chars: 0 });
    expect(unknown.content).toContain("No offloaded result");
    expect(
      (await recall(session, { mem_id: mem, query: "x", json_path: "$.items" })).is_error,
    ).toBe(true);
    expect((await recall(session, { mem_id: mem, offset: 10_000_000 })).is_error).toBe(true);
    expect(
      (await recall(session, { mem_id: mem, json_path: "$.items[?(@.price > 3)" })).is_error,
    ).toBe(true);
    expect((await recall(session, { mem_id: "not-a-mem-id" })).is_error).toBe(true);
  });

  it("applies the session's recall mode", async () => {
    const session = sid("recall-mode");
    const mem = await offloaded(session);
    await call(`/v1/sessions/${session}/config`, {
      method: "PUT",
      body: { ...ON, tool_result_recall_mode: "structural" },
    });
    const q = await recall(session, { mem_id: mem, query: "item-3" });
    expect(q.is_error).toBe(true);
    expect(q.content).toContain("query is not enabled");
    expect((await recall(session, { mem_id: mem, json_path: "$.items[0].id" })).is_error).toBe(
      false,
    );
    // A request header can still choose another mode for one call.
    expect(
      (
        await recall(
          session,
          { mem_id: mem, query: "item-3" },
          { config: { tool_result_recall_mode: "both" } },
        )
      ).is_error,
    ).toBe(false);
  });

  it("reads another session's or tenant's mem_id exactly like an unknown one", async () => {
    const session = sid("recall-scope");
    const mem = await offloaded(session);
    const unknown = await recall(session, { mem_id: `trm_${"0".repeat(24)}` });
    const otherSession = await recall(sid("recall-scope-other"), { mem_id: mem });
    const otherTenant = await recall(session, { mem_id: mem }, { key: KEYS.globex });
    const strip = (a: { content: string }) => a.content.replace(/trm_[0-9a-f]{24}/, "trm_X");
    expect(strip(otherSession)).toBe(strip(unknown));
    expect(strip(otherTenant)).toBe(strip(unknown));
    expect(otherTenant.is_error).toBe(true);
  });

  it("refuses a body of the wrong shape with 400 naming the field", async () => {
    const session = sid("recall-400");
    const path = `/v1/sessions/${session}/recall`;
    await expectError(await call(path, { body: "{" }), 400, "invalid_json");
    await expectError(
      await call(path, {
        body: "",
        method: "POST",
        headers: { "content-type": "application/json" },
      }),
      400,
      "invalid_json",
    );
    await expectError(await call(path, { body: { query: "x" } }), 400, "invalid_request", "mem_id");
    await expectError(
      await call(path, { body: { mem_id: "trm_x", offset: "3" } }),
      400,
      "invalid_request",
      "offset",
    );
    await expectError(
      await call(path, { body: { mem_id: "trm_x", offset: -1 } }),
      400,
      "invalid_request",
      "offset",
    );
    await expectError(
      await call(path, { body: { mem_id: "trm_x", max_chars: 50_001 } }),
      400,
      "invalid_request",
      "max_chars",
    );
    await expectError(
      await call(path, { body: { mem_id: "trm_x", verbose: true } }),
      400,
      "invalid_request",
      "verbose",
    );
    await expectError(await call(path, { body: [1] }), 400, "invalid_request");
  });

  it("answers 413 for a control body over its 1 MiB limit", async () => {
    const res = await call(`/v1/sessions/${sid("recall-413")}/recall`, {
      body: JSON.stringify({ mem_id: "x".repeat(1024 * 1024) }),
    });
    await expectError(res, 413, "payload_too_large");
  });
});

describe("GET /v1/sessions/:id/memories/:mem_id", () => {
  it("describes a ledgered body from the index, and from R2 when the index misses", async () => {
    const session = sid("memories");
    const mem = await offloaded(session);
    const res = await call(`/v1/sessions/${session}/memories/${mem}`);
    expect(res.status).toBe(200);
    const info = MemorySchema.parse(await res.json());
    expect(info).toMatchObject({
      mem_id: mem,
      tool_use_id: "toolu_1",
      tool_name: "dump",
      chars: catalog().length,
      kind: "json",
      source: "index",
    });
    expect(info.outline).toContain("items");

    // KV not caught up yet (another location): the same answer, from R2's metadata.
    const app = createApp({
      store: (e, s, log) =>
        new ComposedStore({
          ...defaultParts(e, s, log),
          tenants: undefined,
          extractions: undefined,
          index: new MemoryIndex({ lagging: true }),
          log: () => {},
        }),
    });
    const lagging = await app.fetch(
      request(`/v1/sessions/${session}/memories/${mem}`),
      env,
      createExecutionContext(),
    );
    expect(MemorySchema.parse(await lagging.json())).toEqual({ ...info, source: "ledger" });
  });

  it("answers 404 for an unknown mem_id, or one of another tenant", async () => {
    const session = sid("memories-404");
    const mem = await offloaded(session);
    await expectError(
      await call(`/v1/sessions/${session}/memories/trm_${"1".repeat(24)}`),
      404,
      "not_found",
      "mem_id",
    );
    await expectError(
      await call(`/v1/sessions/${session}/memories/${mem}`, { key: KEYS.globex }),
      404,
      "not_found",
    );
    await expectError(await call(`/v1/sessions/${session}/memories/whatever`), 404, "not_found");
  });
});

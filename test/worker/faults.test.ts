// Storage faults injected into the real bindings: nothing is lost, the summary or the error says what failed,
// and the state stays consistent for the next (healthy) turn.
import { createExecutionContext, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type AppDeps, createApp, defaultParts } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import type { SessionState } from "../../src/store/ports.ts";
import {
  bound,
  call,
  catalog,
  compactPath,
  conversation,
  expectError,
  memIdIn,
  nextTurn,
  ON,
  request,
  sid,
  summary,
} from "./helpers.ts";

const quiet = () => {};

/** The binding with some of its methods failing as a backend outage would. */
function failing<T extends object>(binding: T, methods: string[], calls: string[] = []): T {
  return new Proxy(binding, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (typeof prop === "string" && methods.includes(prop)) {
        return async () => {
          calls.push(prop);
          throw new Error(`injected ${prop} failure (500 InternalError)`);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function appWith(
  bindings: Partial<Env>,
  sessions?: (real: SessionState) => SessionState,
): ReturnType<typeof createApp> {
  const store: AppDeps["store"] = (e, settings, log) => {
    const real = defaultParts({ ...e, ...bindings }, settings, log);
    return new ComposedStore(
      sessions === undefined
        ? real
        : { sessions: sessions(real.sessions), ledger: real.ledger, index: real.index, log },
    );
  };
  return createApp({ store, log: quiet });
}

function send(
  app: ReturnType<typeof createApp>,
  path: string,
  init: Parameters<typeof request>[1] = {},
): Promise<Response> {
  return Promise.resolve(app.fetch(request(path, init), env, createExecutionContext()));
}

type Out = { messages: { content: { content?: string }[] }[]; tools: { name: string }[] };

describe("fault injection", () => {
  it("a failing R2 write leaves the result full, the summary says so, and a later turn offloads it", async () => {
    const session = sid("r2-put");
    const calls: string[] = [];
    const broken = appWith({ LEDGER: failing(env.LEDGER, ["put"], calls) });
    const res = await send(broken, compactPath(session), { body: conversation(), config: ON });
    expect(res.status).toBe(200);
    const out = JSON.parse(await res.text()) as Out;
    expect(calls).toEqual(["put"]);
    expect(out.messages[2]!.content[0]!.content).toBe(catalog()); // nothing lost
    const s = summary(res);
    expect(s).toMatchObject({ offloaded: 0, errors_total: 1 });
    expect(s.errors[0]).toMatchObject({ code: "storage_error", tool_use_id: "toolu_1" });
    expect(s.errors[0]!.message).toContain("the ledger write failed");
    expect(s.errors[0]!.message).not.toContain("InternalError"); // internals stay in the operator's log

    // No record was kept for the failed result: the next turn (R2 healthy) decides it afresh.
    const view = (await (await call(`/v1/sessions/${session}`)).json()) as {
      tool_results: { tool_use_id: string }[];
    };
    expect(view.tool_results.map((r) => r.tool_use_id)).not.toContain("toolu_1");
    const healthy = await call(compactPath(session), {
      body: nextTurn(conversation(), 3),
      config: ON,
    });
    expect(summary(healthy)).toMatchObject({ offloaded: 1, errors_total: 0 });
    const mem = memIdIn(await healthy.text());
    const recalled = (await (
      await call(`/v1/sessions/${session}/recall`, {
        body: { mem_id: mem, json_path: "items[1].name" },
      })
    ).json()) as { content: string };
    expect(recalled.content).toContain("item-1");
  });

  it("a failing KV write still offloads (R2 holds the body), and the summary notes the index error", async () => {
    const session = sid("kv-put");
    const res = await send(appWith({ INDEX: failing(env.INDEX, ["put"]) }), compactPath(session), {
      body: conversation(),
      config: ON,
    });
    const s = summary(res);
    expect(s.offloaded).toBe(1);
    expect(s.errors.map((e) => e.code).sort()).toEqual(["index_error", "index_error"]); // the mem_id and the session entry
    const mem = memIdIn(await res.text());
    const recalled = (await (
      await call(`/v1/sessions/${session}/recall`, {
        body: { mem_id: mem, offset: 0, max_chars: 10 },
      })
    ).json()) as { is_error: boolean };
    expect(recalled.is_error).toBe(false);
    const info = (await (await call(`/v1/sessions/${session}/memories/${mem}`)).json()) as {
      source: string;
    };
    expect(info.source).toBe("ledger"); // the index missed; R2 answered
  });

  it("a failing DO commit keeps new results full and leaves no half-saved session", async () => {
    const session = sid("do-commit");
    const app = appWith({}, (real) => ({
      ...bound(real),
      commit: async () => {
        throw new Error("Durable Object reset because its code was updated");
      },
    }));
    const res = await send(app, compactPath(session), { body: conversation(), config: ON });
    const out = JSON.parse(await res.text()) as Out;
    expect(out.messages[2]!.content[0]!.content).toBe(catalog());
    expect(summary(res).errors[0]?.message).toContain("decisions could not be saved");
    await expectError(await call(`/v1/sessions/${session}`), 404, "not_found");
  });

  it("an unreachable DO: compact passes the request through unchanged; reads get a clear 503", async () => {
    const session = sid("do-down");
    const down = (real: SessionState): SessionState => {
      const fail = async () => {
        throw new Error("Network connection lost.");
      };
      void real;
      return {
        begin: fail,
        records: fail,
        addRecords: fail,
        commit: fail,
        finish: fail,
        noteRecall: fail,
        recordUsage: fail,
        describe: fail,
        report: fail,
        getConfig: fail,
        setConfig: fail,
        destroy: fail,
        purged: fail,
        end: fail,
      };
    };
    const app = appWith({}, down);
    const body = JSON.stringify(conversation());
    const res = await send(app, compactPath(session), { body, config: ON });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(body);
    expect(summary(res).errors[0]).toMatchObject({ code: "storage_error" });
    const get = await send(app, `/v1/sessions/${session}`);
    expect(get.headers.get("retry-after")).toBe("1");
    expect((await expectError(get, 503, "storage_error")).error.message).toBe(
      "reading the session state failed",
    );
    await expectError(
      await send(app, `/v1/sessions/${session}/recall`, {
        body: { mem_id: `trm_${"a".repeat(24)}` },
      }),
      503,
      "storage_error",
    );
    await expectError(
      await send(app, `/v1/sessions/${session}/config`, { method: "PUT", body: ON }),
      503,
      "storage_error",
    );
    await expectError(
      await send(app, `/v1/sessions/${session}`, { method: "DELETE" }),
      503,
      "storage_error",
    );
    expect(
      (await expectError(await send(app, `/v1/sessions/${session}/report`), 503, "storage_error"))
        .error.message,
    ).toBe("reading the session report failed");
  });

  it("an unreachable DO makes the tenant summary a 503 once the index lists a session", async () => {
    await call(compactPath(sid("summary-do-down")), { body: conversation(), config: ON });
    const app = appWith({}, (real) => ({
      ...bound(real),
      report: async () => {
        throw new Error("Network connection lost.");
      },
    }));
    await expectError(await send(app, "/v1/report"), 503, "storage_error");
  });

  it("a DO that fails only to begin a turn: the turn passes through and says why", async () => {
    const session = sid("do-load");
    const app = appWith({}, (real) => ({
      ...bound(real),
      begin: async () => {
        throw new Error("overloaded");
      },
    }));
    const body = JSON.stringify(conversation());
    const res = await send(app, compactPath(session), { body, config: ON });
    expect(await res.text()).toBe(body);
    // The route's one read of the session failed: the turn passes through.
    expect(summary(res).errors[0]?.message).toMatch(/session state/);
  });

  it("a failing R2 read makes recall a 503 (retryable), not a wrong answer", async () => {
    const session = sid("r2-get");
    const mem = memIdIn(
      await (await call(compactPath(session), { body: conversation(), config: ON })).text(),
    );
    const res = await send(
      appWith({ LEDGER: failing(env.LEDGER, ["get"]) }),
      `/v1/sessions/${session}/recall`,
      { body: { mem_id: mem } },
    );
    expect((await expectError(res, 503, "storage_error")).error.message).toBe(
      "the ledger could not be read",
    );
  });

  it("a DELETE that fails half way (R2 down) is a 503; repeating it finishes the job", async () => {
    const session = sid("delete-fault");
    const mem = memIdIn(
      await (await call(compactPath(session), { body: conversation(), config: ON })).text(),
    );
    const res = await send(
      appWith({ LEDGER: failing(env.LEDGER, ["delete"]) }),
      `/v1/sessions/${session}`,
      { method: "DELETE" },
    );
    await expectError(res, 503, "storage_error");
    // The authority already forgot the session, so no record points at a body that might be gone.
    await expectError(await call(`/v1/sessions/${session}`), 404, "not_found");
    expect((await call(`/v1/sessions/${session}`, { method: "DELETE" })).status).toBe(204);
    expect((await env.LEDGER.list({ prefix: `bodies/acme/${session}/` })).objects).toEqual([]);
    expect(await env.INDEX.get(`m/acme/${session}/${mem}`)).toBeNull();
  });
});

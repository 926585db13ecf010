// Fault injection through the ports, every step of every flow: the service's app (routes, store, core) over
// the in-memory twins, each port wrapped so that the k-th storage call of a flow fails, hangs (the store's
// timeout ends the wait), or hangs and then lands late (a write the caller gave up on that happens anyway),
// for every k the healthy flow makes. Whatever the step:
// - a turn (compact, and a proxied call with a recall hop) answers 200 with every result either sent as the
//   client sent it or replaced by a text naming a body that is durable and recallable, and its summary says
//   what failed;
// - a recall answers the right text, an is_error answer, or a retryable 503;
// - a delete answers 204 or a retryable 503, and once retried on healthy backends the session reads as
//   unknown and its bodies are gone;
// and afterwards, on healthy backends, the conversation goes on and every mem_id ever shown is recallable.
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import { SummarySchema } from "../../src/routes/schemas/summary.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { MemoryTenantLearning } from "../../src/store/memory.ts";
import { MemoryIndex } from "../../src/store/memory-index.ts";
import { MemoryLedger } from "../../src/store/memory-ledger.ts";
import { MemorySessionState } from "../../src/store/memory-state.ts";
import { anthropicMessage } from "../support/providers.ts";
import { conversation, jsonBody, textBody } from "../support/requests.ts";

type Mode = "fail" | "hang" | "late";
const MODES: Mode[] = ["fail", "hang", "late"];
/** The store's timeout for every backend in this suite (a hang costs this much). */
const TIMEOUT_MS = 20;
const KEY = "fault-injection-key-0001";
const ENV = {
  OFFLOAD_API_KEYS: `acme:${KEY}`,
  OFFLOAD_SECRET: "fault-injection-secret-0123456789",
} as unknown as Env;
const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const MEM = /trm_[0-9a-f]{24}/g;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The in-memory backends of one run, every call counted and the planned one broken. */
class Backends {
  readonly sessions = new MemorySessionState();
  readonly ledger = new MemoryLedger();
  readonly index = new MemoryIndex();
  readonly tenants = new MemoryTenantLearning();
  readonly calls: string[] = [];
  plan: { k: number; mode: Mode } | null = null;
  /** Operations that were left to land late. */
  readonly late: Promise<unknown>[] = [];

  #wrap<T extends object>(port: T, label: string): T {
    return new Proxy(port, {
      get: (target, prop) => {
        const value = Reflect.get(target, prop) as unknown;
        if (typeof value !== "function") return value;
        const run = (a: unknown[]) => (value as (...x: unknown[]) => unknown).apply(target, a);
        return (...a: unknown[]) => {
          this.calls.push(`${label}.${String(prop)}`);
          const plan = this.plan;
          if (plan === null || plan.k !== this.calls.length) return run(a);
          if (plan.mode === "fail")
            return Promise.reject(new Error(`injected failure of ${label}.${String(prop)}`));
          if (plan.mode === "hang") return new Promise(() => {});
          const landed = sleep(TIMEOUT_MS * 3).then(() => run(a));
          this.late.push(landed.catch(() => {}));
          return landed;
        };
      },
    });
  }

  store(): ComposedStore {
    return new ComposedStore({
      sessions: this.#wrap(this.sessions, "sessions"),
      ledger: this.#wrap(this.ledger, "ledger"),
      index: this.#wrap(this.index, "index"),
      tenants: this.#wrap(this.tenants, "tenants"),
      timeouts: { session: TIMEOUT_MS, ledger: TIMEOUT_MS, index: TIMEOUT_MS, tenants: TIMEOUT_MS },
      log: () => {},
    });
  }

  /** Healthy from now on, once the late operations have landed. */
  async heal(): Promise<void> {
    this.plan = null;
    await Promise.all(this.late);
  }
}

/** A scripted provider for the proxy flow: a recall of the stub's mem_id, then an answer. */
function provider(): typeof fetch {
  return (async (_input: RequestInfo | URL, init?: RequestInit) => {
    const body =
      typeof init?.body === "string"
        ? init.body
        : new TextDecoder().decode(init?.body as Uint8Array);
    const req = JSON.parse(body) as {
      messages: { content: unknown }[];
      tools?: { name: string }[];
    };
    const last = JSON.stringify(req.messages.at(-1));
    const mem = /trm_[0-9a-f]{24}/.exec(body)?.[0];
    const asked = last.includes("recall_tool_result") || last.includes("toolu_hop");
    const reply =
      mem !== undefined && !asked && req.tools?.some((t) => t.name === "recall_tool_result")
        ? anthropicMessage(
            "msg_hop",
            [
              {
                call: "recall_tool_result",
                id: "toolu_hop",
                input: { mem_id: mem, query: "Item number 7" },
              },
            ],
            { input: 100, output: 10 },
          )
        : anthropicMessage("msg_done", [{ text: "Done." }], { input: 100, output: 5 });
    return Response.json(reply);
  }) as typeof fetch;
}

function appOver(b: Backends) {
  return createApp({ log: () => {}, fetch: provider(), store: () => b.store() });
}

const RESULTS = { t1: jsonBody(80_000), t2: textBody(70_000, "log"), t3: "ok" };

/** The client's history: two large settled results and a small one; `more` adds turns. */
function history(more = 0): Record<string, unknown> {
  const turns = [
    { id: "t1", result: RESULTS.t1 },
    { id: "t2", result: RESULTS.t2 },
    { id: "t3", result: RESULTS.t3 },
  ];
  for (let i = 0; i < more; i++) turns.push({ id: `t${4 + i}`, result: `step ${i} done` });
  return conversation(turns, { model: "claude-opus-4-5" });
}

async function send(
  app: ReturnType<typeof createApp>,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${KEY}`,
    "content-type": "application/json",
    "x-offload-config": JSON.stringify(ON),
    ...init.headers,
  };
  const body =
    init.body === undefined
      ? null
      : typeof init.body === "string"
        ? init.body
        : JSON.stringify(init.body);
  return app.fetch(
    new Request(`https://edge-offload.test${path}`, {
      method: init.method ?? (body === null ? "GET" : "POST"),
      headers,
      body,
    }),
    ENV,
  );
}

function resultsOf(text: string): Map<string, string> {
  const req = JSON.parse(text) as { messages: { content: unknown }[] };
  const out = new Map<string, string>();
  for (const m of req.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const block of m.content as { type: string; tool_use_id?: string; content?: unknown }[])
      if (block.type === "tool_result" && typeof block.content === "string")
        out.set(block.tool_use_id!, block.content);
  }
  return out;
}

/**
 * Nothing lost: every result is as the client sent it, or names a mem_id whose body (read on healthy
 * backends) is exactly the original. Returns the mem_ids shown.
 */
async function checkNothingLost(b: Backends, sent: string): Promise<string[]> {
  const shown: string[] = [];
  for (const [id, text] of resultsOf(sent)) {
    const original = (RESULTS as Record<string, string>)[id] ?? text;
    if (text === original) continue;
    const mems = text.match(MEM) ?? [];
    expect(mems.length, `${id} was changed without naming its body`).toBeGreaterThan(0);
    const stored = await b.ledger.get({ tenant: "acme", session: "faults" }, mems[0]!);
    expect(stored?.body, `${id}'s body is durable`).toBe(original);
    shown.push(mems[0]!);
  }
  return shown;
}

function summaryOf(res: Response) {
  return SummarySchema.parse(JSON.parse(res.headers.get("x-offload-summary")!));
}

/** The calls a healthy run of `step` makes (after `setup`), so every one of them can be broken in turn. */
async function healthyCalls(
  setup: (b: Backends, app: ReturnType<typeof createApp>) => Promise<void>,
  step: (b: Backends, app: ReturnType<typeof createApp>) => Promise<unknown>,
): Promise<string[]> {
  const b = new Backends();
  const app = appOver(b);
  await setup(b, app);
  b.calls.length = 0;
  await step(b, app);
  return [...b.calls];
}

/** Runs `step` with its k-th call broken, for every k and mode; `check` judges each run. */
async function everyFault(
  setup: (b: Backends, app: ReturnType<typeof createApp>) => Promise<void>,
  step: (b: Backends, app: ReturnType<typeof createApp>) => Promise<Response>,
  check: (
    b: Backends,
    app: ReturnType<typeof createApp>,
    res: Response,
    fault: string,
  ) => Promise<void>,
): Promise<number> {
  const calls = await healthyCalls(setup, step);
  expect(calls.length).toBeGreaterThan(0);
  let runs = 0;
  for (let k = 1; k <= calls.length; k++)
    for (const mode of MODES) {
      const b = new Backends();
      const app = appOver(b);
      await setup(b, app);
      b.calls.length = 0;
      b.plan = { k, mode };
      const res = await step(b, app);
      const fault = `${mode} ${calls[k - 1]} (call ${k} of ${calls.length})`;
      try {
        await check(b, app, res, fault);
      } catch (e) {
        throw new Error(`${fault}: ${(e as Error).message}`);
      }
      runs++;
    }
  return runs;
}

/** After any fault: healthy backends carry the conversation on, and every mem_id shown reads back. */
async function goesOn(
  b: Backends,
  app: ReturnType<typeof createApp>,
  shown: string[],
): Promise<void> {
  await b.heal();
  const next = await send(app, "/v1/sessions/faults/compact", { body: history(1) });
  expect(next.status).toBe(200);
  const text = await next.text();
  shown.push(...(await checkNothingLost(b, text)));
  for (const mem of shown) {
    const r = await send(app, "/v1/sessions/faults/recall", {
      body: { mem_id: mem, offset: 0, max_chars: 30 },
    });
    expect(r.status).toBe(200);
    expect(((await r.json()) as { is_error: boolean }).is_error, `${mem} recallable`).toBe(false);
  }
}

const none = async () => {};
const firstSight = async (_b: Backends, app: ReturnType<typeof createApp>) => {
  const res = await send(app, "/v1/sessions/faults/compact", { body: history() });
  await res.clone().text();
  return res;
};

/**
 * A turn's outcome under a fault: a 200, nothing lost, the problem in the summary. The index and the
 * tenant's learning are off the turn's path: a call of theirs that hangs or lands late is not waited for
 * (here, without a `waitUntil`, past the next tick), so the turn has nothing to say about it.
 */
async function turnHolds(
  b: Backends,
  app: ReturnType<typeof createApp>,
  res: Response,
  fault: string,
): Promise<void> {
  expect(res.status).toBe(200);
  const text = await res.text();
  const s = summaryOf(res);
  if (/^(hang|late) (index|tenants)\./.test(fault))
    expect(s.errors.map((e) => e.code)).not.toContain("storage_error");
  else expect(s.errors_total, "the summary says what failed").toBeGreaterThan(0);
  for (const e of s.errors) {
    expect(["storage_error", "index_error", "stats_error"]).toContain(e.code);
    expect(e.message).not.toContain("injected"); // internals stay in the operator's log
  }
  await b.heal();
  const shown = await checkNothingLost(b, text);
  await goesOn(b, app, shown);
}

describe("fault injection: every storage call of a flow failing, hanging, or landing late", () => {
  it("a first sight (compact): passes full or stubs only durable bodies, and says so", async () => {
    const runs = await everyFault(none, firstSight, (b, app, res, fault) =>
      turnHolds(b, app, res, fault),
    );
    expect(runs).toBeGreaterThanOrEqual(15);
  });

  it("a steady turn (compact)", async () => {
    const runs = await everyFault(
      async (b, app) => void (await firstSight(b, app)),
      firstSight,
      (b, app, res, fault) => turnHolds(b, app, res, fault),
    );
    expect(runs).toBeGreaterThanOrEqual(3);
  });

  it("a proxied call with a recall hop", async () => {
    const proxied = async (_b: Backends, app: ReturnType<typeof createApp>) => {
      const res = await send(app, "/anthropic/v1/messages", {
        body: history(),
        headers: {
          authorization: "",
          "x-offload-key": KEY,
          "x-offload-session": "faults",
          "x-api-key": "sk-test",
          "anthropic-version": "2023-06-01",
        },
      });
      await res.clone().text();
      return res;
    };
    const runs = await everyFault(none, proxied, async (b, app, res) => {
      // The client's call always gets the provider's answer (a failed recall is an is_error answer
      // the model reads; a failed write loses at most a count or a memo, and says so).
      expect(res.status).toBe(200);
      expect(((await res.json()) as { content: { text?: string }[] }).content[0]?.text).toBe(
        "Done.",
      );
      await b.heal();
      await goesOn(b, app, []);
    });
    expect(runs).toBeGreaterThanOrEqual(15);
  });

  it("a recall: the right text, an is_error answer, or a retryable 503", async () => {
    let mem = "";
    const setup = async (b: Backends, app: ReturnType<typeof createApp>) => {
      const res = await firstSight(b, app);
      mem = (await res.text()).match(MEM)![0]!;
    };
    const recall = (_b: Backends, app: ReturnType<typeof createApp>) =>
      send(app, "/v1/sessions/faults/recall", { body: { mem_id: mem, query: "Item number 7" } });
    const runs = await everyFault(setup, recall, async (b, app, res) => {
      expect([200, 503]).toContain(res.status);
      if (res.status === 200) {
        const answer = (await res.json()) as { content: string; is_error: boolean };
        if (!answer.is_error) expect(answer.content).toContain("Item number 7");
      } else
        expect(((await res.json()) as { error: { type: string } }).error.type).toBe(
          "storage_error",
        );
      await goesOn(b, app, [mem]);
    });
    expect(runs).toBeGreaterThanOrEqual(6);
  });

  it("a delete: 204 or a retryable 503; retried, the session is unknown and its bodies are gone", async () => {
    let mem = "";
    const setup = async (b: Backends, app: ReturnType<typeof createApp>) => {
      const res = await firstSight(b, app);
      mem = (await res.text()).match(MEM)![0]!;
    };
    const del = (_b: Backends, app: ReturnType<typeof createApp>) =>
      send(app, "/v1/sessions/faults", { method: "DELETE" });
    const runs = await everyFault(setup, del, async (b, app, res) => {
      expect([204, 503]).toContain(res.status);
      await b.heal();
      if (res.status === 503) expect((await del(b, app)).status).toBe(204);
      expect((await send(app, "/v1/sessions/faults")).status).toBe(404);
      expect(b.ledger.size).toBe(0);
      const r = await send(app, "/v1/sessions/faults/recall", { body: { mem_id: mem } });
      expect(((await r.json()) as { is_error: boolean }).is_error).toBe(true);
      // The conversation may start afresh.
      await goesOn(b, app, []);
    });
    expect(runs).toBeGreaterThanOrEqual(9);
  });
});

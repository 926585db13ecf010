// The tenant's calibration never sits on a turn's path: a session learns its measured turns into the copy it
// holds, sends the samples with its statistics' exchange (its alarm), the tenant's object learns them, and
// another session of the tenant calibrates its turns from its own copy once its alarm has refreshed it.
import { createExecutionContext, env, runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { CALIBRATION_MIN_TURNS, type Calibration } from "../../src/core/calibration.ts";
import { TenantDO } from "../../src/session/tenant-do.ts";
import { anthropicMessage } from "../support/providers.ts";
import { conversation, ON, sid } from "./helpers.ts";

const TENANT = "acme";

/** The fake provider bills about a token per 3.6 chars of the request it was sent. */
const upstream: typeof fetch = async (_url, init) => {
  const sent = String(init?.body ?? "").length;
  const hello = anthropicMessage("msg_hello", [{ text: "Hello." }], {
    input: Math.round(sent / 3.6),
    output: 2,
  });
  return new Response(JSON.stringify(hello), { headers: { "content-type": "application/json" } });
};

let deferred: (() => Promise<unknown>)[] = [];
const app = createApp({ log: () => {}, fetch: upstream });

const tenantCalls: string[] = [];
let undo: (() => void) | null = null;
beforeEach(() => {
  tenantCalls.length = 0;
  const proto = TenantDO.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const originals = Object.fromEntries(
    ["exchange", "merge", "calibration", "learnCalibration"].map((m) => [m, proto[m]!]),
  );
  for (const [m, f] of Object.entries(originals))
    proto[m] = function (this: unknown, ...a: unknown[]) {
      tenantCalls.push(m);
      return f.apply(this, a);
    };
  undo = () => Object.assign(proto, originals);
});
afterEach(() => undo?.());

/** One proxied call; returns the tenant-wide calls it waited for. */
async function proxied(session: string): Promise<string[]> {
  tenantCalls.length = 0;
  deferred = [];
  const ctx = createExecutionContext();
  const original = ctx.waitUntil.bind(ctx);
  ctx.waitUntil = (p: Promise<unknown>) => {
    deferred.push(() => p);
    original(p);
  };
  const res = await app.fetch(
    new Request("https://edge-offload.test/anthropic/v1/messages", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-offload-key": "test-key-acme-0001",
        "x-offload-session": session,
        "x-offload-config": JSON.stringify(ON),
        "x-api-key": "sk-test",
        "anthropic-version": "2023-06-01",
      },
      body: JSON.stringify(conversation()),
    }),
    env,
    ctx,
  );
  expect(res.status).toBe(200);
  await res.text();
  const before = [...tenantCalls];
  for (const work of deferred) await work();
  return before;
}

const sessionStub = (session: string) =>
  env.SESSIONS.get(env.SESSIONS.idFromName(`${TENANT}/${session}`));
const tenantStub = () => env.TENANTS.get(env.TENANTS.idFromName(TENANT));

/** The latest turn line's estimate, as the session logged it (a steady turn's line may be held). */
async function lastEstimate(session: string): Promise<{ calibrated: boolean }> {
  const report = await sessionStub(session).report({ tenant: TENANT, session });
  const estimate = report?.turns.at(-1)?.estimate;
  expect(estimate).toBeDefined();
  return estimate!;
}

describe("the tenant's calibration, held by each session", () => {
  it("is learned in the session, sent in a batch by its alarm, and read from another session's copy", async () => {
    const a = sid("cal-a");
    const turns = CALIBRATION_MIN_TURNS + 1;
    for (let i = 0; i < turns; i++) expect(await proxied(a)).toEqual([]);
    // The session's own copy learned every measured turn at once (as its next turn reads it: the
    // samples may still be held in the object's memory, unwritten).
    const read = await sessionStub(a).load({ tenant: TENANT, session: a }, [], []);
    const held = Object.values(read.calibrations ?? {}) as Calibration[];
    expect(held.map((c) => c.turns)).toEqual([turns]);
    // Nothing reached the tenant yet: the samples wait for the alarm.
    const before = (await tenantStub().calibrations()) as Record<string, Calibration>;
    const known = Object.values(before).reduce((n, c) => n + c.turns, 0);
    expect(await runDurableObjectAlarm(sessionStub(a))).toBe(true);
    const after = (await tenantStub().calibrations()) as Record<string, Calibration>;
    expect(Object.values(after).reduce((n, c) => n + c.turns, 0)).toBe(known + turns);
    expect(tenantCalls).toContain("merge");

    // Another session: its first turns are uncalibrated (its copy is empty), its alarm fills the copy,
    // and from then on its turns are calibrated without a tenant-wide read.
    const b = sid("cal-b");
    expect(await proxied(b)).toEqual([]);
    expect(await proxied(b)).toEqual([]);
    expect((await lastEstimate(b)).calibrated).toBe(false);
    expect(await runDurableObjectAlarm(sessionStub(b))).toBe(true);
    expect(await proxied(b)).toEqual([]);
    expect((await lastEstimate(b)).calibrated).toBe(true);
  });
});

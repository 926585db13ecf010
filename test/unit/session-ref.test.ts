/**
 * One shape for a session reference everywhere: a string id, or `{ tenant, session }`. The other shape
 * (`{ tenant, id }`) is refused with a message that names the right one, by compact, recall, the report and
 * every store method a user calls, so a deletion can never silently delete nothing. And the in-process
 * session report.
 */
import { describe, expect, it } from "vitest";
import { compact, MemoryStore, OffloadError, recall, sessionReport } from "../../src/lib.ts";
import type { SessionRef } from "../../src/store-kit.ts";
import { conversation, jsonBody } from "../support/requests.ts";

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const WRONG = { tenant: "acme", id: "chat-1" } as unknown as SessionRef;

async function refused(run: () => Promise<unknown>): Promise<OffloadError> {
  try {
    await run();
  } catch (e) {
    if (e instanceof OffloadError) return e;
    throw e;
  }
  throw new Error("not refused");
}

describe("a session reference", () => {
  it("is a string or { tenant, session } in compact, recall and sessionReport", async () => {
    const store = new MemoryStore();
    const request = conversation([
      { id: "t1", result: jsonBody(80_000) },
      { id: "t2", result: "ok" },
    ]);
    const out = await compact({
      request,
      session: { tenant: "acme", session: "chat-1" },
      store,
      config: ON,
    });
    const memId = out.decisions[0]!.mem_id!;
    const back = await recall({
      store,
      session: { tenant: "acme", session: "chat-1" },
      mem_id: memId,
    });
    expect(back.is_error).toBe(false);
    const report = await sessionReport({ store, session: { tenant: "acme", session: "chat-1" } });
    expect(report).toMatchObject({ tenant: "acme", session: "chat-1", mode: "live" });
    expect(report.totals.offloaded).toBe(1);
    expect(report.last_turn!.decisions[0]).toMatchObject({
      tool_use_id: "t1",
      action: "offloaded",
    });
    await expect(sessionReport({ store, session: "nobody" })).rejects.toMatchObject({
      type: "not_found",
    });
  });

  it("refuses { tenant, id } everywhere, naming the shape to use", async () => {
    const store = new MemoryStore();
    const request = conversation([{ id: "t1", result: "ok" }]);
    for (const run of [
      () => compact({ request, session: WRONG as never, store, config: ON }),
      () => recall({ store, session: WRONG as never, mem_id: "trm_000000000000000000000000" }),
      () => sessionReport({ store, session: WRONG as never }),
      () => store.deleteSession(WRONG),
      () => store.describeSession(WRONG),
      () => store.setConfig(WRONG, {}),
      () => store.getConfig(WRONG),
    ]) {
      const e = await refused(run);
      expect(e.type).toBe("invalid_argument");
      expect(e.message).toContain("{ tenant, session }");
      expect(e.message).toContain("`id` is not a member");
    }
  });

  it("deleting with the right shape deletes", async () => {
    const store = new MemoryStore();
    const ref = { tenant: "acme", session: "gone" };
    await compact({
      request: conversation([{ id: "t1", result: "ok" }]),
      session: ref,
      store,
      config: ON,
    });
    expect(await store.describeSession(ref)).not.toBeNull();
    await store.deleteSession(ref);
    expect(await store.describeSession(ref)).toBeNull();
  });
});

/**
 * SqliteStore (one file, node:sqlite): the store contract on a file, retention's sweep (idle sessions
 * purged whole, refused commits' bodies deleted), and a store reopened on its file keeping its sessions.
 * The Postgres and Redis stores run the same sweep (retained.ts) and their contracts in test/stores.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runStoreContract } from "../../src/contract/store.contract.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";
import {
  bodyMeta,
  commitTurn,
  freshRef,
  putBody,
  record,
  startOf,
  turnLog,
} from "../support/records.ts";

const dir = mkdtempSync(join(tmpdir(), "edge-offload-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = () => join(dir, `store-${++files}.db`);
const MEM = (c: string) => `trm_${c.repeat(24)}`;

runStoreContract("SqliteStore (a file)", () =>
  SqliteStore.open(file(), { log: () => {}, sweepEveryMs: 0 }),
);

describe("SqliteStore", () => {
  it("purges a session idle past the retention: state, bodies and index entries", async () => {
    let now = 1_000_000_000;
    const store = await SqliteStore.open(file(), {
      retentionSeconds: 60,
      now: () => now,
      sweepEveryMs: 0,
      log: () => {},
    });
    const [old, fresh] = [freshRef("ret"), freshRef("ret")];
    for (const ref of [old, fresh]) {
      await putBody(store, ref, "body", bodyMeta(MEM("a")));
      await commitTurn(store, ref, {
        records: [record("a", { mem_id: MEM("a") })],
        recall_declared: false,
        log: turnLog(1),
      });
    }
    now += 30_000;
    await commitTurn(store, fresh, { records: [], recall_declared: false, log: turnLog(2) });
    expect(await store.sweep()).toMatchObject({ purged: 0, orphans: 0 });
    now += 31_000;
    expect(await store.sweep()).toMatchObject({ purged: 1, orphans: 0 });
    expect(await store.describeSession(old)).toBeNull();
    expect(await store.getBody(old, MEM("a"))).toBeNull();
    expect(await store.statBody(old, MEM("a"))).toBeNull();
    expect((await store.getBody(fresh, MEM("a")))?.body).toBe("body");
    await store.close();
  });

  it("deletes the bodies a refused commit wrote, once swept", async () => {
    const store = await SqliteStore.open(file(), { sweepEveryMs: 0, log: () => {} });
    const ref = freshRef("orphans");
    const turn = await startOf(store, ref, ["a"]);
    await store.deleteSession(ref); // overtakes the turn: its commit is refused
    await turn.putBody("late", bodyMeta(MEM("b"))); // lands after the purge
    await expect(
      turn.commit({
        records: [record("a", { mem_id: MEM("b") })],
        recall_declared: false,
        log: turnLog(1),
      }),
    ).rejects.toThrow();
    expect(await store.hasBody(ref, MEM("b"))).toBe(true);
    expect((await store.sweep()).orphans).toBe(1);
    expect(await store.hasBody(ref, MEM("b"))).toBe(false);
    await store.close();
  });

  it("keeps its sessions across a close and a reopen of the file", async () => {
    const path = file();
    const ref = freshRef("reopen");
    let store = await SqliteStore.open(path, { sweepEveryMs: 0, log: () => {} });
    await putBody(store, ref, "kept", bodyMeta(MEM("c")));
    await commitTurn(store, ref, {
      records: [record("c", { mem_id: MEM("c") })],
      recall_declared: true,
      log: turnLog(1),
    });
    await store.close();
    store = await SqliteStore.open(path, { sweepEveryMs: 0, log: () => {} });
    expect((await store.getBody(ref, MEM("c")))?.body).toBe("kept");
    expect((await store.describeSession(ref))?.calls).toBe(1);
    await store.close();
  });
});

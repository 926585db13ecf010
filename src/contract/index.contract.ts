/**
 * Contract of the index port (KV and its in-memory twin). Local KV and the twin read their own writes, so
 * this checks what an entry holds once visible; that the service never *needs* to see it is checked by
 * running the store contract over a lagging index (test/unit/edge-store.test.ts).
 */
import { describe, expect, it } from "vitest";
import type { BodyMeta, SessionRef } from "../core/types.ts";
import { ledgerKey } from "../store/keys.ts";
import type { IndexPort } from "../store/ports.ts";
import { bodyMeta, freshRef } from "./records.ts";

const ref = (tenant = "t1"): SessionRef => freshRef("index", tenant);

const MEM = (c: string) => `trm_${c.repeat(24)}`;

const meta = (memId: string, overrides: Partial<BodyMeta> = {}): BodyMeta =>
  bodyMeta(memId, {
    tool_use_id: "toolu_9",
    tool_name: "sql",
    chars: 100,
    tokens: 30,
    kind: "csv",
    outline: "CSV: 3 rows × 2 columns",
    turn: 4,
    ...overrides,
  });

/** The lookup index's contract (`IndexPort`), as vitest cases: a fresh index per case from `make`. */
export function runIndexContract(name: string, make: () => IndexPort | Promise<IndexPort>): void {
  describe(`index contract: ${name}`, () => {
    it("holds mem_id → location and metadata, scoped", async () => {
      const x = await make();
      const r = ref("acme");
      await x.putBody(r, { location: ledgerKey(r, MEM("a")), meta: meta(MEM("a")) });
      expect(await x.getBody(r, MEM("a"))).toEqual({
        location: ledgerKey(r, MEM("a")),
        meta: meta(MEM("a")),
      });
      expect(await x.getBody(r, MEM("b"))).toBeNull();
      expect(await x.getBody({ tenant: "globex", session: r.session }, MEM("a"))).toBeNull();
    });

    it("lists a tenant's sessions, and only that tenant's", async () => {
      const x = await make();
      const tenant = freshRef("tenant").session;
      const a = { tenant, session: "alpha" };
      const b = { tenant, session: "beta" };
      await x.putSession(a, { session: "alpha", created_at: 1 });
      await x.putSession(b, { session: "beta", created_at: 2 });
      await x.putSession(
        { tenant: `${tenant}x`, session: "gamma" },
        { session: "gamma", created_at: 3 },
      );
      const page = await x.listSessions(tenant);
      expect(page.sessions.map((s) => s.session).sort()).toEqual(["alpha", "beta"]);
      expect(page.cursor).toBeNull();
      const first = await x.listSessions(tenant, { limit: 1 });
      expect(first.sessions).toHaveLength(1);
      expect(first.cursor).not.toBeNull();
      const rest = await x.listSessions(tenant, { limit: 1, cursor: first.cursor! });
      expect([...first.sessions, ...rest.sessions].map((s) => s.session).sort()).toEqual([
        "alpha",
        "beta",
      ]);
    });

    it("refuses a cursor it cannot read as the caller's mistake, naming it", async () => {
      const x = await make();
      for (const cursor of ["!!not a cursor!!", "%%%", "\u0000"])
        await expect(x.listSessions(freshRef("tenant").session, { cursor })).rejects.toMatchObject({
          type: "invalid_argument",
          path: "cursor",
        });
    });

    it("deletes named mem_id entries, then the session's entry and what a listing shows, and nothing else", async () => {
      const x = await make();
      const r = ref();
      const keep = ref();
      await x.putSession(r, { session: r.session, created_at: 1 });
      await x.putSession(keep, { session: keep.session, created_at: 1 });
      for (const id of [MEM("a"), MEM("b")]) {
        await x.putBody(r, { location: ledgerKey(r, id), meta: meta(id) });
        await x.putBody(keep, { location: ledgerKey(keep, id), meta: meta(id) });
      }
      await x.deleteBodies(r, [MEM("a")]);
      expect(await x.getBody(r, MEM("a"))).toBeNull();
      expect(await x.getBody(r, MEM("b"))).not.toBeNull();
      await x.deleteSession(r);
      expect(await x.getBody(r, MEM("b"))).toBeNull();
      expect((await x.listSessions(r.tenant)).sessions.map((s) => s.session)).not.toContain(
        r.session,
      );
      expect(await x.getBody(keep, MEM("a"))).not.toBeNull();
      expect((await x.listSessions(keep.tenant)).sessions.map((s) => s.session)).toContain(
        keep.session,
      );
    });
  });
}

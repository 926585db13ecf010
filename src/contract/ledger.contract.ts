/** Contract of the body ledger (R2 and its in-memory twin): exact bytes, metadata, scoping, listing, deletion. */
import { describe, expect, it } from "vitest";
import type { BodyMeta, SessionRef } from "../core/types.ts";
import type { BodyLedgerPort } from "../store/ports.ts";
import { bodyMeta, freshRef } from "./records.ts";

const ref = (tenant = "t1"): SessionRef => freshRef("ledger", tenant);

const MEM = (c: string) => `trm_${c.repeat(24)}`;

const meta = (memId: string, overrides: Partial<BodyMeta> = {}): BodyMeta =>
  bodyMeta(memId, { kind: "json", outline: "JSON object: 2 keys", turn: 3, ...overrides });

/** The body ledger's contract (`BodyLedgerPort`), as vitest cases: a fresh ledger per case from `make`. */
export function runLedgerContract(
  name: string,
  make: () => BodyLedgerPort | Promise<BodyLedgerPort>,
): void {
  describe(`ledger contract: ${name}`, () => {
    it("round-trips bodies and metadata exactly, lone surrogates included", async () => {
      const l = await make();
      const r = ref();
      const bodies = [
        "",
        '{"a":1}',
        'é😀\u0000\n"',
        "lone \ud800 high and \udfff low",
        "y".repeat(1_000_000),
      ];
      for (const [i, body] of bodies.entries())
        await l.put(r, body, meta(MEM(String(i)), { chars: body.length }));
      for (const [i, body] of bodies.entries()) {
        const got = await l.get(r, MEM(String(i)));
        expect(got?.body === body).toBe(true);
        expect(got?.meta).toEqual(meta(MEM(String(i)), { chars: body.length }));
        expect(await l.head(r, MEM(String(i)))).toEqual(
          meta(MEM(String(i)), { chars: body.length }),
        );
      }
      expect(await l.get(r, MEM("f"))).toBeNull();
      expect(await l.head(r, MEM("f"))).toBeNull();
    });

    it("overwrites a mem_id with the same body idempotently", async () => {
      const l = await make();
      const r = ref();
      await l.put(r, "same", meta(MEM("a")));
      await l.put(r, "same", meta(MEM("a")));
      expect((await l.get(r, MEM("a")))?.body).toBe("same");
      expect(await l.list(r)).toEqual([MEM("a")]);
    });

    it("scopes by tenant and session (a session id that prefixes another stays apart)", async () => {
      const l = await make();
      const r = ref("acme");
      const longer = { tenant: "acme", session: `${r.session}0` };
      await l.put(r, "mine", meta(MEM("b")));
      await l.put(longer, "other", meta(MEM("c")));
      expect(await l.get({ tenant: "globex", session: r.session }, MEM("b"))).toBeNull();
      expect(await l.get(longer, MEM("b"))).toBeNull();
      expect(await l.list(r)).toEqual([MEM("b")]);
      await l.delete(r, [MEM("b"), MEM("c")]);
      expect(await l.list(r)).toEqual([]);
      expect((await l.get(longer, MEM("c")))?.body).toBe("other");
    });

    it("lists (all, or the first `limit`) and deletes bodies of a session, across pages", async () => {
      const l = await make();
      const r = ref();
      const ids = Array.from({ length: 1005 }, (_, i) => `trm_${i.toString(16).padStart(24, "0")}`);
      for (let i = 0; i < ids.length; i += 100)
        await Promise.all(ids.slice(i, i + 100).map((id) => l.put(r, "b", meta(id))));
      expect((await l.list(r)).sort()).toEqual([...ids].sort());
      const first = await l.list(r, 7);
      expect(first).toHaveLength(7);
      await l.delete(r, first);
      expect(await l.get(r, first[0]!)).toBeNull();
      expect(await l.list(r)).toHaveLength(998);
      await l.delete(r, ids);
      expect(await l.list(r)).toEqual([]);
      await expect(l.delete(r, ids.slice(0, 3))).resolves.toBeUndefined();
      // 1,005 writes to a real local bucket: room for a machine shared with other test runs.
    }, 60_000);
  });
}

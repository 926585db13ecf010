/**
 * Contract of the extraction cache (R2, SQL, Redis, the in-memory twin): exact round trips, tenant
 * scoping, copies, overwrite; for a store's own cache, its value cap and an unreadable entry read as a
 * miss.
 */
import { describe, expect, it } from "vitest";
import type { CachedExtraction, ExtractionCache } from "../core/ports.ts";

let n = 0;
function key(): string {
  n++;
  return `${n.toString(16).padStart(64, "0")}/pdf/p50.c200000.r5000.x100000.s32.csv.ocr-off-${Date.now().toString(36)}`;
}

const ok = (text: string): CachedExtraction & { ok: true } => ({
  ok: true,
  result: { text, format: "pdf", pages: 3, pages_extracted: 3, truncated: false },
});
const failed: CachedExtraction = {
  ok: false,
  error: {
    type: "extraction_failed",
    message: "the PDF is password-protected",
    format: "pdf",
    reason: "encrypted",
  },
};

/** What a store-backed cache adds to the contract. */
export interface StoredExtractionHooks {
  /** The cap on one value (bytes of its UTF-8 JSON): a larger one is not stored, and no error. */
  capBytes?: number;
  /** Makes the stored entry of (tenant, key) unreadable (not JSON), as a bad write or a bit flip would. */
  corrupt?: (tenant: string, key: string) => Promise<void>;
}

/** The extraction cache's contract (the core's `ExtractionCache`), as vitest cases: a fresh cache per case from `make`. */
export function runExtractionCacheContract(
  name: string,
  make: () => ExtractionCache | Promise<ExtractionCache>,
  hooks: StoredExtractionHooks = {},
): void {
  describe(`extraction cache contract: ${name}`, () => {
    it("round-trips outcomes exactly, lone surrogates and large texts included", async () => {
      const c = await make();
      for (const value of [
        ok("Invoice\nTotal: 1,250 €"),
        ok("lone \ud800 high, \udfff low"),
        ok("z".repeat(2_000_000)),
        failed,
      ]) {
        const k = key();
        expect(await c.getExtraction("t1", k)).toBeNull();
        await c.putExtraction("t1", k, value);
        expect(await c.getExtraction("t1", k)).toEqual(value);
      }
    });

    it("scopes by tenant (a tenant that prefixes another stays apart)", async () => {
      const c = await make();
      const k = key();
      await c.putExtraction("acme", k, ok("mine"));
      expect(await c.getExtraction("globex", k)).toBeNull();
      expect(await c.getExtraction("acm", k)).toBeNull();
      await c.putExtraction("acme2", k, ok("other"));
      expect(await c.getExtraction("acme", k)).toEqual(ok("mine"));
    });

    it("overwrites a key, and returns copies (mutating what came back changes nothing stored)", async () => {
      const c = await make();
      const k = key();
      await c.putExtraction("t1", k, ok("first"));
      await c.putExtraction("t1", k, ok("second"));
      const got = (await c.getExtraction("t1", k)) as { ok: true; result: { text: string } };
      expect(got.result.text).toBe("second");
      got.result.text = "mutated";
      expect(await c.getExtraction("t1", k)).toEqual(ok("second"));
      const value = ok("kept");
      await c.putExtraction("t1", k, value);
      (value.result as { text: string }).text = "changed after put";
      expect(await c.getExtraction("t1", k)).toEqual(ok("kept"));
    });

    const { capBytes, corrupt } = hooks;
    it.skipIf(capBytes === undefined)(
      "does not store a value over its cap (no error), and stores one just under it",
      async () => {
        const c = await make();
        const cap = capBytes!;
        const envelope = JSON.stringify(ok("")).length;
        const [over, under] = [key(), key()];
        await c.putExtraction("t1", over, ok("x".repeat(cap - envelope + 1)));
        expect(await c.getExtraction("t1", over)).toBeNull();
        // Multi-byte characters count as their UTF-8 bytes, not their string length.
        await c.putExtraction("t1", over, ok("é".repeat(Math.ceil(cap / 2))));
        expect(await c.getExtraction("t1", over)).toBeNull();
        const fits = ok("x".repeat(cap - envelope));
        await c.putExtraction("t1", under, fits);
        expect(await c.getExtraction("t1", under)).toEqual(fits);
      },
    );

    it.skipIf(corrupt === undefined)(
      "reads an unreadable entry as a miss, and a put writes it again",
      async () => {
        const c = await make();
        const k = key();
        await c.putExtraction("t1", k, ok("fine"));
        await corrupt!("t1", k);
        expect(await c.getExtraction("t1", k)).toBeNull();
        await c.putExtraction("t1", k, ok("again"));
        expect(await c.getExtraction("t1", k)).toEqual(ok("again"));
      },
    );
  });
}

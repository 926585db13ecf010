import { describe, expect, it } from "vitest";
import {
  ExtractionFailedError,
  extractTexts,
  UnsupportedAttachmentError,
} from "../../src/extract/entry.ts";
import { OffloadError } from "../../src/lib.ts";
import { loadFixture } from "../fixtures/load.ts";

const batch = () => [
  loadFixture("text.pdf"),
  loadFixture("legacy.doc"),
  loadFixture("table.csv"),
  loadFixture("encrypted.pdf"),
  { nope: true } as never,
];

describe("extractTexts", () => {
  it('"warn" (the default) reports each failure and extracts the rest, in order', async () => {
    const results = await extractTexts(batch());
    expect(results.map((r) => [r.index, r.ok])).toEqual([
      [0, true],
      [1, false],
      [2, true],
      [3, false],
      [4, false],
    ]);
    expect(results[0]).toMatchObject({ ok: true, filename: "text.pdf", format: "pdf", pages: 1 });
    expect(results[1]).toEqual({
      index: 1,
      filename: "legacy.doc",
      ok: false,
      error: {
        type: "unsupported_attachment",
        message: "legacy Word (.doc) files are not extracted",
        format: "doc",
        fallback: "native",
      },
    });
    expect(results[3]).toMatchObject({
      ok: false,
      error: { type: "extraction_failed", reason: "encrypted" },
    });
    expect(results[4]).toMatchObject({
      ok: false,
      error: { type: "invalid_argument", fallback: "native" },
    });
    // The items are plain JSON (the route returns them as they are).
    expect(JSON.parse(JSON.stringify(results))).toEqual(results);
  });

  it('"raise" throws the first failure with its index, and stops there', async () => {
    const e = await extractTexts(batch(), { on_error: "raise" }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(UnsupportedAttachmentError);
    expect((e as UnsupportedAttachmentError).index).toBe(1);
    expect((e as UnsupportedAttachmentError).toJSON().error.index).toBe(1);
    const only = await extractTexts([loadFixture("table.csv"), loadFixture("scanned.pdf")], {
      on_error: "raise",
    }).catch((x: unknown) => x);
    expect(only).toBeInstanceOf(ExtractionFailedError);
    expect((only as ExtractionFailedError).reason).toBe("empty");
  });

  it("passes the limits to every extraction", async () => {
    const results = await extractTexts([loadFixture("multipage.pdf"), loadFixture("table.csv")], {
      max_pages: 1,
      max_chars: 10,
    });
    expect(results[0]).toMatchObject({ ok: true, pages_extracted: 1, truncated: true });
    expect(results[1]).toMatchObject({ ok: true, text: "id,name,am", truncated_by: "max_chars" });
  });

  it("rejects a bad on_error or bad limits up front", async () => {
    await expect(extractTexts([], { on_error: "ignore" as never })).rejects.toBeInstanceOf(
      OffloadError,
    );
    await expect(extractTexts([loadFixture("table.csv")], { max_pages: -1 })).rejects.toMatchObject(
      { type: "invalid_argument" },
    );
  });

  it("an empty list is an empty answer", async () => {
    expect(await extractTexts([])).toEqual([]);
  });
});

import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  attachmentDigest,
  DEFAULT_EXTRACT_LIMITS,
  decodeBase64,
  ExtractionDependencyMissingError,
  ExtractionFailedError,
  extractionVariant,
  extractOptionsFromQuery,
  extractText,
  resolveExtractOptions,
  UnsupportedAttachmentError,
} from "../../src/extract/entry.ts";
import {
  DEFAULT_EXTRACT_CEILINGS,
  parseExtractCeilings,
  underCeilings,
} from "../../src/extract/options.ts";
import { isOffloadError, OffloadError } from "../../src/lib.ts";
import { fixtureBytes } from "../fixtures/load.ts";

const b64 = (b: Uint8Array): string => Buffer.from(b).toString("base64");

async function thrown(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => null,
    (e: unknown) => e,
  );
}

describe("attachment shapes", () => {
  const pdf = fixtureBytes("text.pdf");

  it("accepts raw bytes as Uint8Array, ArrayBuffer or another typed-array view", async () => {
    expect((await extractText({ data: pdf })).format).toBe("pdf");
    expect((await extractText({ data: pdf.slice().buffer })).format).toBe("pdf");
    const padded = new Uint8Array(pdf.length + 8);
    padded.set(pdf, 8);
    expect(
      (
        await extractText({
          data: new DataView(padded.buffer, 8, pdf.length) as unknown as Uint8Array,
        })
      ).format,
    ).toBe("pdf");
  });

  it("accepts an Anthropic base64 source and a whole document block (title → filename)", async () => {
    const source = { type: "base64" as const, media_type: "application/pdf", data: b64(pdf) };
    expect((await extractText(source)).text).toContain("Invoice 2024-017");
    const block = {
      type: "document" as const,
      source,
      title: "invoice.pdf",
      cache_control: { type: "ephemeral" },
    };
    expect((await extractText(block)).format).toBe("pdf");
    const csv = {
      type: "document" as const,
      source: {
        type: "base64" as const,
        media_type: "application/octet-stream",
        data: b64(new TextEncoder().encode("a,b\n")),
      },
      title: "t.csv",
    };
    expect((await extractText(csv)).format).toBe("csv");
  });

  it("accepts an Anthropic text source without re-decoding it", async () => {
    expect(
      await extractText({
        type: "document",
        source: { type: "text", media_type: "text/plain", data: "héllo" },
      }),
    ).toEqual({ text: "héllo", format: "text", truncated: false });
  });

  it("accepts an image block (unsupported while OCR is off)", async () => {
    const e = await thrown(
      extractText({
        type: "image",
        source: { type: "base64", media_type: "image/png", data: b64(fixtureBytes("image.png")) },
      }),
    );
    expect(e).toBeInstanceOf(UnsupportedAttachmentError);
    expect((e as UnsupportedAttachmentError).format).toBe("png");
  });

  it("URL and file sources carry no bytes: unsupported", async () => {
    for (const source of [
      { type: "url", url: "https://example.com/a.pdf" },
      { type: "file", file_id: "file_1" },
    ] as const) {
      const e = await thrown(extractText({ type: "document", source }));
      expect(e).toBeInstanceOf(UnsupportedAttachmentError);
      expect((e as UnsupportedAttachmentError).format).toBe("remote");
    }
  });

  it("invalid base64 is a corrupt attachment", async () => {
    const e = await thrown(
      extractText({ type: "base64", media_type: "application/pdf", data: "JVBERi0x*4=" }),
    );
    expect(e).toBeInstanceOf(ExtractionFailedError);
    expect((e as ExtractionFailedError).reason).toBe("corrupt");
  });

  it("a base64 payload over max_bytes is refused before it is decoded", async () => {
    const e = await thrown(
      extractText(
        { type: "base64", media_type: "application/pdf", data: "A".repeat(4000) },
        { max_bytes: 1000 },
      ),
    );
    expect(e).toBeInstanceOf(ExtractionFailedError);
    expect((e as ExtractionFailedError).reason).toBe("too_large");
  });

  it("a malformed attachment object is the caller's error (invalid_argument), not a file failure", async () => {
    for (const bad of [
      null,
      42,
      {},
      { data: "not bytes" },
      { type: "base64", data: 5 },
      { type: "mystery", data: "" },
      { data: new Uint8Array(1), filename: 3 },
    ]) {
      const e = await thrown(extractText(bad as never));
      expect(isOffloadError(e)).toBe(true);
      expect((e as OffloadError).type).toBe("invalid_argument");
    }
  });
});

describe("base64", () => {
  it("round-trips standard and url alphabets, with and without padding", () => {
    for (const n of [0, 1, 2, 3, 4, 5, 255, 1000]) {
      const data = Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 255);
      const std = Buffer.from(data).toString("base64");
      expect(Buffer.from(decodeBase64(std)).equals(Buffer.from(data))).toBe(true);
      expect(Buffer.from(decodeBase64(std.replace(/=+$/, ""))).equals(Buffer.from(data))).toBe(
        true,
      );
      expect(
        Buffer.from(decodeBase64(Buffer.from(data).toString("base64url"))).equals(
          Buffer.from(data),
        ),
      ).toBe(true);
    }
  });

  it("rejects bad characters and impossible lengths", () => {
    expect(() => decodeBase64("ab!d")).toThrow();
    expect(() => decodeBase64("abcde")).toThrow();
    expect(() => decodeBase64("ab===")).toThrow();
  });
});

describe("options", () => {
  it("fill in every default from one schema", () => {
    expect(resolveExtractOptions({ max_pages: 3 })).toEqual({
      ...DEFAULT_EXTRACT_LIMITS,
      max_pages: 3,
      ocr: undefined,
    });
  });

  it("reject invalid and unknown limits as invalid_argument naming the field", () => {
    for (const [bad, field] of [
      [{ max_pages: 0 }, "max_pages"],
      [{ max_chars: 1.5 }, "max_chars"],
      [{ sheet_format: "xml" }, "sheet_format"],
      [{ max_page: 3 }, "max_page"],
    ] as const) {
      let error: unknown;
      try {
        resolveExtractOptions(bad as never);
      } catch (e) {
        error = e;
      }
      expect((error as OffloadError).type).toBe("invalid_argument");
      expect((error as OffloadError).path).toBe(field);
    }
  });
});

describe("options from a query string (for the route)", () => {
  it("reads and validates the limits, ignoring other parameters", () => {
    expect(
      extractOptionsFromQuery(new URLSearchParams("max_pages=20&sheet_format=tsv&on_error=raise")),
    ).toEqual({ max_pages: 20, sheet_format: "tsv" });
    expect(extractOptionsFromQuery(new URLSearchParams(""))).toEqual({});
  });

  it("rejects values that are not numbers or out of range", () => {
    for (const q of ["max_pages=abc", "max_pages=", "max_chars=0", "sheet_format=xml"]) {
      expect(() => extractOptionsFromQuery(new URLSearchParams(q)), q).toThrow(OffloadError);
    }
  });
});

describe("ceilings: a deployment's limits, which a caller may only lower", () => {
  const MiB = 1024 * 1024;

  it("refuse a query above a ceiling with a 400 naming the field, whatever the field", () => {
    for (const [q, field] of [
      ["max_pages=10000", "max_pages"],
      ["max_unzipped_entry_bytes=1000000000", "max_unzipped_entry_bytes"],
      ["max_unzipped_bytes=1000000000", "max_unzipped_bytes"],
      ["max_zip_ratio=100000", "max_zip_ratio"],
      ["max_zip_entries=1000000", "max_zip_entries"],
      ["max_bytes=100000000", "max_bytes"],
      ["max_rows=10000000", "max_rows"],
      ["max_cells=100000000", "max_cells"],
      ["max_sheets=10000", "max_sheets"],
      ["max_chars=50000000", "max_chars"],
    ] as const) {
      let error: OffloadError | undefined;
      try {
        extractOptionsFromQuery(new URLSearchParams(q));
      } catch (e) {
        error = e as OffloadError;
      }
      expect(error, q).toMatchObject({ type: "invalid_argument", status: 400, path: field });
      expect(error?.message).toContain("may only lower");
    }
    // At or below the ceiling: taken as asked.
    expect(extractOptionsFromQuery(new URLSearchParams("max_pages=500&max_zip_ratio=10"))).toEqual({
      max_pages: 500,
      max_zip_ratio: 10,
    });
  });

  it("come from OFFLOAD_EXTRACT_LIMITS (the built-in ones for the rest), validated like the limits", () => {
    const c = parseExtractCeilings('{"max_pages": 20, "max_unzipped_bytes": 1048576}');
    expect(c).toEqual({ ...DEFAULT_EXTRACT_CEILINGS, max_pages: 20, max_unzipped_bytes: MiB });
    expect(parseExtractCeilings(undefined)).toEqual(DEFAULT_EXTRACT_CEILINGS);
    expect(() => extractOptionsFromQuery(new URLSearchParams("max_pages=21"), c)).toThrow(
      expect.objectContaining({ path: "max_pages" }),
    );
    for (const bad of ["{", '{"max_page": 3}', '{"max_pages": 0}', '{"sheet_format": "tsv"}'])
      expect(() => parseExtractCeilings(bad), bad).toThrow(OffloadError);
  });

  it("bring trusted options down to them, and lower a default above a ceiling", () => {
    const c = { ...DEFAULT_EXTRACT_CEILINGS, max_pages: 20, max_rows: 100 };
    const o = underCeilings({ max_pages: 1000, max_chars: 10 }, c);
    expect(o).toMatchObject({ max_pages: 20, max_chars: 10, max_rows: 100 });
    expect(o.max_unzipped_bytes).toBe(DEFAULT_EXTRACT_LIMITS.max_unzipped_bytes);
  });

  it("and the defaults fit a 128 MB isolate with another request in flight", () => {
    // A part's bytes and its decoded string (two bytes a char at worst), for one part at a time.
    const d = DEFAULT_EXTRACT_LIMITS;
    expect(d.max_unzipped_entry_bytes * 3).toBeLessThanOrEqual(48 * MiB);
    expect(d.max_unzipped_bytes).toBeLessThanOrEqual(32 * MiB);
    expect(d.max_bytes).toBeLessThanOrEqual(16 * MiB);
    for (const [k, v] of Object.entries(DEFAULT_EXTRACT_CEILINGS))
      expect(v, k).toBeGreaterThanOrEqual(DEFAULT_EXTRACT_LIMITS[k as keyof typeof d] as number);
  });
});

describe("extractionVariant", () => {
  it("names the options that change the text, the same for equal options", () => {
    expect(extractionVariant()).toBe(
      extractionVariant({ max_pages: DEFAULT_EXTRACT_LIMITS.max_pages }),
    );
    expect(extractionVariant({ max_pages: 3 })).not.toBe(extractionVariant());
    expect(extractionVariant({ sheet_format: "tsv" })).not.toBe(extractionVariant());
    expect(extractionVariant({ max_bytes: 10 })).toBe(extractionVariant()); // a gate, not a change to the text
    expect(extractionVariant({ ocr: { enabled: false } })).toBe(extractionVariant());
  });
});

describe("typed errors", () => {
  it("are OffloadErrors with stable types, status 422 and fallback native", () => {
    const errors = [
      new UnsupportedAttachmentError("doc", "no"),
      new ExtractionDependencyMissingError("png", "ocr_model", "no model"),
      new ExtractionFailedError("pdf", "encrypted", "locked"),
    ];
    expect(
      errors.map((e) => [e.type, e.status, e.fallback, e instanceof OffloadError, e.name]),
    ).toEqual([
      ["unsupported_attachment", 422, "native", true, "UnsupportedAttachmentError"],
      ["extraction_dependency_missing", 422, "native", true, "ExtractionDependencyMissingError"],
      ["extraction_failed", 422, "native", true, "ExtractionFailedError"],
    ]);
  });

  it("serialise to the route's 422 body", () => {
    expect(
      JSON.parse(JSON.stringify(new ExtractionFailedError("pdf", "empty", "no text layer"))),
    ).toEqual({
      error: {
        type: "extraction_failed",
        message: "no text layer",
        format: "pdf",
        reason: "empty",
        fallback: "native",
      },
    });
    expect(
      new ExtractionDependencyMissingError("png", "ocr_engine", "x").toJSON().error.dependency,
    ).toBe("ocr_engine");
  });
});

describe("attachmentDigest", () => {
  it("is the SHA-256 of the decoded bytes, whatever the shape", async () => {
    const pdf = fixtureBytes("text.pdf");
    const want = createHash("sha256").update(pdf).digest("hex");
    expect(await attachmentDigest({ data: pdf })).toBe(want);
    expect(
      await attachmentDigest({ type: "base64", media_type: "application/pdf", data: b64(pdf) }),
    ).toBe(want);
  });
});

import { describe, expect, it, vi } from "vitest";
import { ExtractionDependencyMissingError, extractText } from "../../src/extract/entry.ts";
import { loadFixture } from "../fixtures/load.ts";

// A runtime or bundle where pdf.js cannot be loaded.
vi.mock("unpdf", () => ({
  getResolvedPDFJS: async () => {
    throw new Error("Serverless PDF.js bundle could not be resolved");
  },
}));

describe("PDF without pdf.js", () => {
  it("is a missing dependency, not a corrupt file", async () => {
    const e = await extractText(loadFixture("text.pdf")).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ExtractionDependencyMissingError);
    expect((e as ExtractionDependencyMissingError).dependency).toBe("pdf_engine");
    expect((e as ExtractionDependencyMissingError).fallback).toBe("native");
  });

  it("other formats are unaffected", async () => {
    expect((await extractText(loadFixture("table.csv"))).format).toBe("csv");
  });
});

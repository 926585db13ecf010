import { describe, expect, it } from "vitest";
import {
  ExtractionFailedError,
  extractText,
  htmlToText,
  UnsupportedAttachmentError,
} from "../../src/extract/entry.ts";
import { loadFixture } from "../fixtures/load.ts";

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

describe("plain text, CSV, JSON", () => {
  it("returns CSV and JSON as they are", async () => {
    expect(await extractText(loadFixture("table.csv"))).toEqual({
      text: 'id,name,amount\n1,"Smith, J.",10.50\n2,Müller,7\n',
      format: "csv",
      truncated: false,
    });
    const json = await extractText(loadFixture("data.json"));
    expect(json.format).toBe("json");
    expect(JSON.parse(json.text)).toEqual({
      items: [
        { id: 1, label: "alpha" },
        { id: 2, label: "beta" },
      ],
      total: 2,
    });
  });

  it("takes the format from the file name when the type is generic", async () => {
    expect(
      (
        await extractText({
          data: bytes("a\tb\n"),
          media_type: "application/octet-stream",
          filename: "x.tsv",
        })
      ).format,
    ).toBe("tsv");
    expect((await extractText({ data: bytes("# Title\n"), filename: "README.md" })).format).toBe(
      "markdown",
    );
    expect(
      (await extractText({ data: bytes("{}"), media_type: "application/vnd.api+json" })).format,
    ).toBe("json");
    expect((await extractText({ data: bytes("plain") })).format).toBe("text");
  });

  it("decodes Windows-1252 when the bytes are not UTF-8", async () => {
    expect((await extractText(loadFixture("cp1252.txt"))).text).toBe("Prix: 10 € - café\n");
  });

  it("honours a declared charset and byte-order marks", async () => {
    expect(
      (
        await extractText({
          data: Uint8Array.from([0x63, 0x61, 0x66, 0xe9]),
          media_type: "text/plain; charset=ISO-8859-1",
        })
      ).text,
    ).toBe("café");
    const le = Uint8Array.from([0xff, 0xfe, 0x68, 0x00, 0x69, 0x00]);
    expect((await extractText({ data: le, media_type: "text/plain" })).text).toBe("hi");
    const be = Uint8Array.from([0xfe, 0xff, 0x00, 0x68, 0x00, 0x69]);
    expect((await extractText({ data: be, media_type: "text/plain" })).text).toBe("hi");
    expect(
      (await extractText({ data: Uint8Array.from([0xef, 0xbb, 0xbf, 0x6f, 0x6b]) })).text,
    ).toBe("ok");
  });

  it("binary bytes declared as text are not extracted", async () => {
    const e = await extractText({
      data: Uint8Array.from([0x41, 0x00, 0x42, 0x00, 0x01]),
      media_type: "text/plain",
    }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(UnsupportedAttachmentError);
    expect((e as UnsupportedAttachmentError).format).toBe("unknown");
  });

  it("an empty or blank file fails as empty", async () => {
    for (const data of [new Uint8Array(0), bytes(" \n\t ")]) {
      const e = await extractText({ data, media_type: "text/plain" }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ExtractionFailedError);
      expect((e as ExtractionFailedError).reason).toBe("empty");
    }
  });

  it("truncates at max_chars", async () => {
    const r = await extractText(
      { data: bytes("x".repeat(100)), media_type: "text/plain" },
      { max_chars: 10 },
    );
    expect(r).toEqual({
      text: "x".repeat(10),
      format: "text",
      truncated: true,
      truncated_by: "max_chars",
    });
  });
});

describe("HTML", () => {
  it("reduces the page fixture to text", async () => {
    const r = await extractText(loadFixture("page.html"));
    expect(r.format).toBe("html");
    expect(r.text).toBe(
      [
        "Status page",
        "",
        "# Service status",
        "",
        "All systems operational & fast today.",
        "",
        "- API: up",
        "- Ledger: up",
        "",
        "Region | Latency",
        "eu | 12 ms",
        "",
        "Line one",
        "Line two",
        "",
        "  keep   spacing",
      ].join("\n"),
    );
  });

  it("drops scripts and styles even when they contain tags or '<'", () => {
    expect(
      htmlToText(
        "<p>a</p><script>document.write('<p>x</p>'); if (1 < 2) {}</script><STYLE>p{}</STYLE><p>b</p>",
      ),
    ).toBe("a\n\nb");
  });

  it("keeps stray '<', unknown entities, image alt text and numeric references", () => {
    expect(htmlToText("1 < 2 &bogus; &#x263A; <img src=x alt='logo'>")).toBe(
      "1 < 2 &bogus; ☺ [logo]",
    );
  });

  it("is linear on unclosed markup (no runaway on a missing end tag)", () => {
    expect(htmlToText("<p>open <script>never closed")).toBe("open");
    expect(htmlToText("<div class='a>b'>quoted > inside</div>")).toBe("quoted > inside");
  });

  it("sniffs HTML without a declared type", async () => {
    expect((await extractText({ data: bytes("  <!DOCTYPE html><p>hi</p>") })).format).toBe("html");
  });
});

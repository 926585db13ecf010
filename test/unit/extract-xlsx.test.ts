import { describe, expect, it } from "vitest";
import { ExtractionFailedError, extractText } from "../../src/extract/entry.ts";
import {
  columnOf,
  dateStyleOf,
  excelSerialToIso,
  formatNumber,
} from "../../src/extract/xlsx-workbook.ts";
import { loadFixture } from "../fixtures/load.ts";
import { gridXlsx, xlsx } from "../fixtures/office-writer.ts";

const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

describe("XLSX extraction", () => {
  it("writes every sheet as CSV with shared, rich, phonetic and inline strings, numbers, booleans, errors, dates", async () => {
    const r = await extractText(loadFixture("workbook.xlsx"));
    expect(r.format).toBe("xlsx");
    expect(r.sheets).toBe(3);
    expect(r.truncated).toBe(false);
    expect(r.text).toBe(
      [
        "# Sheet: Data",
        "Item,Price,Note",
        "Rich text,12.5,TRUE",
        '"Quote ""and"", comma",25,,xy',
        "東京,2024-03-01,12:00:00",
        "#DIV/0!,0.3,0.25",
        ",after a gap",
        "",
        "# Sheet: Second",
        "Q1,100",
        "-3,FALSE",
        "",
        "# Sheet: Archive (hidden)",
        "secret tab",
      ].join("\n"),
    );
  });

  it("writes TSV when asked (no quoting; tabs and newlines in cells become spaces)", async () => {
    const r = await extractText(loadFixture("workbook.xlsx"), { sheet_format: "tsv" });
    expect(r.text).toContain('Quote "and", comma\t25\t\txy');
    expect(r.text).toContain("Item\tPrice\tNote");
  });

  it("caps rows per sheet and says where", async () => {
    const r = await extractText({ data: gridXlsx(50, 4), media_type: XLSX }, { max_rows: 10 });
    const lines = r.text.split("\n");
    expect(lines[0]).toBe("# Sheet: Grid");
    expect(lines.filter((l) => /^label/.test(l))).toHaveLength(10);
    expect(lines.at(-1)).toBe("[truncated: first 10 rows of this sheet]");
    expect(r.truncated_by).toBe("max_rows");
  });

  it("caps cells across the workbook, keeping the partial row", async () => {
    const r = await extractText({ data: gridXlsx(50, 4), media_type: XLSX }, { max_cells: 10 });
    const rows = r.text.split("\n").filter((l) => /^label/.test(l));
    expect(rows.map((l) => l.split(",").length)).toEqual([4, 4, 2]);
    expect(r.truncated_by).toBe("max_cells");
  });

  it("caps sheets", async () => {
    const r = await extractText(loadFixture("workbook.xlsx"), { max_sheets: 1 });
    expect(r.text).not.toContain("# Sheet: Second");
    expect(r.sheets).toBe(3);
    expect(r.truncated_by).toBe("max_sheets");
  });

  it("stops scanning a large sheet at max_chars", async () => {
    const r = await extractText({ data: gridXlsx(2000, 6), media_type: XLSX }, { max_chars: 1000 });
    expect(r.text.length).toBeLessThanOrEqual(1000);
    expect(r.truncated).toBe(true);
    expect(r.truncated_by).toBe("max_chars");
  });

  it("reads a sheet without shared strings or styles, and cells without references", async () => {
    const bytes = xlsx(
      [
        {
          name: "Plain",
          rowsXml: '<row><c><v>1</v></c><c t="inlineStr"><is><t>two</t></is></c></row>',
        },
      ],
      null,
    );
    expect((await extractText({ data: bytes, media_type: XLSX })).text).toBe(
      "# Sheet: Plain\n1,two",
    );
  });

  it("a workbook without any cell value fails as empty", async () => {
    const bytes = xlsx([{ name: "Blank", rowsXml: '<row r="1"><c r="A1" s="1"/></row>' }], []);
    const e = await extractText({ data: bytes, media_type: XLSX }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ExtractionFailedError);
    expect((e as ExtractionFailedError).reason).toBe("empty");
  });

  it("a missing sheet part fails as corrupt", async () => {
    const { zipParts } = await import("../fixtures/office-writer.ts");
    const bytes = zipParts({
      "xl/workbook.xml":
        '<workbook xmlns:r="r"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>',
      "xl/_rels/workbook.xml.rels":
        '<Relationships><Relationship Id="rId1" Type="x/worksheet" Target="worksheets/missing.xml"/></Relationships>',
    });
    const e = (await extractText({ data: bytes, media_type: XLSX }).catch(
      (x: unknown) => x,
    )) as ExtractionFailedError;
    expect(e.reason).toBe("corrupt");
    expect(e.message).toMatch(/missing\.xml/);
  });
});

describe("XLSX cell formatting", () => {
  it("converts serial dates in both date systems, with Lotus's 1900 leap bug", () => {
    expect(excelSerialToIso(1, false, "date")).toBe("1900-01-01");
    expect(excelSerialToIso(59, false, "date")).toBe("1900-02-28");
    expect(excelSerialToIso(61, false, "date")).toBe("1900-03-01");
    expect(excelSerialToIso(45352, false, "date")).toBe("2024-03-01");
    expect(excelSerialToIso(45352.75, false, "date")).toBe("2024-03-01 18:00:00");
    expect(excelSerialToIso(0, true, "date")).toBe("1904-01-01");
    expect(excelSerialToIso(0.999999999, false, "date")).toBe("1900-01-01");
    expect(excelSerialToIso(0.5, false, "time")).toBe("12:00:00");
    expect(excelSerialToIso(-1, false, "date")).toBeUndefined();
  });

  it("tells date, time and number formats apart", () => {
    expect(dateStyleOf("yyyy-mm-dd")).toBe("date");
    expect(dateStyleOf("d/m/yy h:mm")).toBe("date");
    expect(dateStyleOf("[h]:mm:ss")).toBe("time");
    expect(dateStyleOf("h:mm AM/PM")).toBe("time");
    expect(dateStyleOf("0.00%")).toBeUndefined();
    expect(dateStyleOf('#,##0 "days"')).toBeUndefined();
    expect(dateStyleOf("[Red]0.00")).toBeUndefined();
    expect(dateStyleOf("General")).toBeUndefined();
  });

  it("shows numbers with Excel's 15 significant digits", () => {
    expect(formatNumber("0.30000000000000004")).toBe("0.3");
    expect(formatNumber("123456789012345")).toBe("123456789012345");
    expect(formatNumber("1E-3")).toBe("0.001");
    expect(formatNumber("not a number")).toBe("not a number");
  });

  it("reads column letters", () => {
    expect(columnOf("A1")).toBe(0);
    expect(columnOf("Z9")).toBe(25);
    expect(columnOf("AA10")).toBe(26);
    expect(columnOf("XFD1")).toBe(16383);
    expect(columnOf("12")).toBe(-1);
  });
});

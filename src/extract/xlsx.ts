/**
 * XLSX → text: each worksheet, in workbook order, as "# Sheet: name" followed by CSV (or TSV) rows. Cached
 * formula values are used (formulas are not evaluated); shared strings, inline strings, booleans, errors and
 * numbers are written as Excel shows them, and numbers in a date or time format become ISO dates and times.
 * Rows, cells, sheets and characters are capped; scanning a sheet stops at the cap instead of finishing it.
 * Empty rows are left out; empty cells inside a row keep their column.
 */

import { type OoxmlPackage, officeDocumentPath } from "./ooxml.ts";
import type { ResolvedExtractOptions } from "./options.ts";
import type { ExtractResult, TruncatedBy } from "./types.ts";
import { attr, scanXml } from "./xml.ts";

const REL = {
  worksheet: "/worksheet",
  sharedStrings: "/sharedStrings",
  styles: "/styles",
};

interface SheetRef {
  name: string;
  rid: string;
  hidden: boolean;
}

export function parseWorkbook(xml: string): { sheets: SheetRef[]; date1904: boolean } {
  const sheets: SheetRef[] = [];
  let date1904 = false;
  scanXml(xml, {
    open(name, attrs) {
      if (name === "workbookPr") {
        const v = attr(attrs, "date1904");
        date1904 = v === "1" || v === "true";
      } else if (name === "sheet") {
        const rid = attr(attrs, "r:id") ?? /\s[\w.-]+:id\s*=\s*"([^"]*)"/.exec(attrs)?.[1];
        if (rid === undefined) return;
        const state = attr(attrs, "state");
        sheets.push({
          name: attr(attrs, "name") ?? `Sheet${sheets.length + 1}`,
          rid,
          hidden: state === "hidden" || state === "veryHidden",
        });
      }
    },
  });
  return { sheets, date1904 };
}

export function parseSharedStrings(xml: string): string[] {
  const strings: string[] = [];
  let current: string | null = null;
  let inT = false;
  let phonetic = 0;
  scanXml(xml, {
    open(name, _attrs, selfClosing) {
      if (name === "si") current = "";
      else if (name === "rPh" && !selfClosing) phonetic++;
      else if (name === "t" && !selfClosing) inT = true;
    },
    close(name) {
      if (name === "si") {
        strings.push(current ?? "");
        current = null;
      } else if (name === "rPh") phonetic = Math.max(0, phonetic - 1);
      else if (name === "t") inT = false;
    },
    text(s) {
      if (inT && phonetic === 0 && current !== null) current += s;
    },
  });
  return strings;
}

const BUILTIN_DATE = new Set([
  14, 15, 16, 17, 22, 27, 28, 29, 30, 31, 34, 35, 36, 50, 51, 52, 53, 54, 57, 58,
]);
const BUILTIN_TIME = new Set([18, 19, 20, 21, 32, 33, 45, 46, 47, 55, 56]);

export type DateStyle = "date" | "time";

/** How a number format code shows a number: as a date, a time, or (undefined) a number. */
export function dateStyleOf(code: string): DateStyle | undefined {
  const bare = code
    .replace(/"[^"]*"/g, "")
    .replace(/\\./g, "")
    // [^[\]]: a bracket never spans another "[", so an unclosed one cannot make this scan quadratic.
    .replace(/\[(?![hms]+\])[^[\]]*\]/gi, "")
    .split(";")[0]!;
  if (/[dy]/i.test(bare)) return "date";
  if (/[hs]/i.test(bare)) return "time";
  return undefined;
}

/** Per cell-style index (`s`), whether it shows dates or times. */
export function parseStyles(xml: string): Map<number, DateStyle> {
  const custom = new Map<number, DateStyle | undefined>();
  const styles = new Map<number, DateStyle>();
  let inCellXfs = false;
  let xf = 0;
  scanXml(xml, {
    open(name, attrs, selfClosing) {
      if (name === "numFmt") {
        const id = Number(attr(attrs, "numFmtId"));
        custom.set(id, dateStyleOf(attr(attrs, "formatCode") ?? ""));
      } else if (name === "cellXfs" && !selfClosing) {
        inCellXfs = true;
        xf = 0;
      } else if (name === "xf" && inCellXfs) {
        const id = Number(attr(attrs, "numFmtId") ?? 0);
        const style = custom.has(id)
          ? custom.get(id)
          : BUILTIN_DATE.has(id)
            ? "date"
            : BUILTIN_TIME.has(id)
              ? "time"
              : undefined;
        if (style) styles.set(xf, style);
        xf++;
      }
    },
    close(name) {
      if (name === "cellXfs") inCellXfs = false;
    },
  });
  return styles;
}

const pad = (n: number, w = 2): string => String(n).padStart(w, "0");

/** An Excel serial date as ISO text ("2024-03-01", "2024-03-01 12:30:00", "12:30:00"). */
export function excelSerialToIso(
  serial: number,
  date1904: boolean,
  style: DateStyle,
): string | undefined {
  if (!Number.isFinite(serial) || serial < 0 || serial > 2958465) return undefined;
  let days = Math.floor(serial);
  let seconds = Math.round((serial - days) * 86400);
  if (seconds >= 86400) {
    days += 1;
    seconds -= 86400;
  }
  const time = `${pad(Math.floor(seconds / 3600))}:${pad(Math.floor((seconds % 3600) / 60))}:${pad(seconds % 60)}`;
  if (style === "time") return time;
  // 1900 system: serial 1 is 1900-01-01, and Excel keeps Lotus's phantom 1900-02-29 (serial 60).
  const epoch = date1904 ? Date.UTC(1904, 0, 1) : Date.UTC(1899, 11, days < 60 ? 31 : 30);
  const d = new Date(epoch + days * 86400000);
  const date = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  return seconds === 0 ? date : `${date} ${time}`;
}

/** Excel shows at most 15 significant digits: 0.30000000000000004 is 0.3. */
export function formatNumber(v: string): string {
  // Hot path (every numeric cell): at most 15 characters without an exponent cannot hold 16 digits.
  if (v.length <= 15 && v.indexOf("E") === -1 && v.indexOf("e") === -1) return v;
  const n = Number(v);
  if (!Number.isFinite(n)) return v;
  return String(Number(n.toPrecision(15)));
}

/** "AB12" → 27 (zero-based column), or -1. */
export function columnOf(ref: string): number {
  let col = 0;
  let i = 0;
  for (; i < ref.length; i++) {
    const c = ref.charCodeAt(i);
    if (c >= 65 && c <= 90) col = col * 26 + (c - 64);
    else if (c >= 97 && c <= 122) col = col * 26 + (c - 96);
    else break;
  }
  return i === 0 ? -1 : col - 1;
}

function csvField(v: string, delimiter: string): string {
  if (delimiter === "\t") return v.replace(/[\t\r\n]+/g, " ");
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

interface SheetContext {
  strings: string[];
  styles: Map<number, DateStyle>;
  date1904: boolean;
  delimiter: string;
  maxRows: number;
  /** Remaining budgets, shared across sheets. */
  cellsLeft: number;
  charsLeft: number;
}

const MAX_COLUMNS = 16384;

/** One worksheet's rows; stops at the first cap and says which. */
export function sheetXmlToRows(
  xml: string,
  ctx: SheetContext,
): { lines: string[]; cells: number; truncatedBy?: TruncatedBy } {
  const lines: string[] = [];
  let cells = 0;
  let truncatedBy: TruncatedBy | undefined;
  let row: string[] | null = null;
  let nextCol = 0;
  let col = 0;
  let type = "";
  let style = -1;
  let value: string | null = null;
  let capture: "v" | "t" | null = null;
  let inInline = false;
  let phonetic = 0;

  scanXml(xml, {
    open(name, attrs, selfClosing) {
      switch (name) {
        case "row":
          row = [];
          nextCol = 0;
          return;
        case "c": {
          const ref = attr(attrs, "r");
          const c = ref === undefined ? -1 : columnOf(ref);
          col = c >= 0 ? c : nextCol;
          type = attr(attrs, "t") ?? "n";
          const s = attr(attrs, "s");
          style = s === undefined ? -1 : Number(s);
          value = null;
          return;
        }
        case "v":
          if (!selfClosing) {
            capture = "v";
            value = "";
          }
          return;
        case "is":
          inInline = true;
          value = "";
          return;
        case "t":
          if (inInline && phonetic === 0 && !selfClosing) capture = "t";
          return;
        case "rPh":
          if (!selfClosing) phonetic++;
          return;
      }
    },
    close(name) {
      switch (name) {
        case "v":
        case "t":
          capture = null;
          return;
        case "is":
          inInline = false;
          return;
        case "rPh":
          phonetic = Math.max(0, phonetic - 1);
          return;
        case "c": {
          nextCol = col + 1;
          if (row === null || value === null || col >= MAX_COLUMNS) return;
          let text: string;
          switch (type) {
            case "s":
              text = ctx.strings[Number(value)] ?? "";
              break;
            case "b":
              text = value === "1" || value === "true" ? "TRUE" : "FALSE";
              break;
            case "inlineStr":
            case "str":
            case "e":
            case "d":
              text = value;
              break;
            default: {
              const dateStyle = ctx.styles.get(style);
              text =
                (dateStyle && excelSerialToIso(Number(value), ctx.date1904, dateStyle)) ??
                formatNumber(value.trim());
            }
          }
          if (text === "") return;
          if (ctx.cellsLeft <= 0) {
            truncatedBy = "max_cells";
            return true;
          }
          while (row.length < col) row.push("");
          row[col] = csvField(text, ctx.delimiter);
          ctx.cellsLeft--;
          cells++;
          return;
        }
        case "row": {
          const r = row;
          row = null;
          if (r === null || r.length === 0) return;
          const line = r.join(ctx.delimiter);
          lines.push(line);
          ctx.charsLeft -= line.length + 1;
          if (ctx.charsLeft < 0) {
            truncatedBy = "max_chars";
            return true;
          }
          if (lines.length >= ctx.maxRows) {
            truncatedBy = "max_rows";
            return true;
          }
          return;
        }
        case "sheetData":
          return true; // nothing after the cells is text we want
      }
    },
    text(s) {
      if (capture !== null && value !== null) value += s;
    },
  });
  // A row cut by the cell cap still counts: keep what it had.
  if (truncatedBy === "max_cells" && row !== null && (row as string[]).length > 0)
    lines.push((row as string[]).join(ctx.delimiter));
  return truncatedBy === undefined ? { lines, cells } : { lines, cells, truncatedBy };
}

export async function extractXlsx(
  pkg: OoxmlPackage,
  options: ResolvedExtractOptions,
): Promise<ExtractResult> {
  const main = (await officeDocumentPath(pkg)) ?? "xl/workbook.xml";
  const workbookXml = await pkg.text(main);
  if (workbookXml === null) throw pkg.corrupt(`the workbook part ${main} is missing`);
  const { sheets, date1904 } = pkg.parse(main, () => parseWorkbook(workbookXml));
  const rels = await pkg.relationships(main);
  const dir = main.includes("/") ? main.slice(0, main.lastIndexOf("/")) : "";
  const relOfType = (suffix: string, fallback: string): string => {
    for (const r of rels.values()) if (r.type.endsWith(suffix)) return r.target;
    return dir === "" ? fallback : `${dir}/${fallback}`;
  };

  const stringsPath = relOfType(REL.sharedStrings, "sharedStrings.xml");
  const stringsXml = await pkg.text(stringsPath);
  const strings =
    stringsXml === null ? [] : pkg.parse(stringsPath, () => parseSharedStrings(stringsXml));
  const stylesPath = relOfType(REL.styles, "styles.xml");
  const stylesXml = await pkg.text(stylesPath);
  const styles =
    stylesXml === null
      ? new Map<number, DateStyle>()
      : pkg.parse(stylesPath, () => parseStyles(stylesXml));

  const worksheets = sheets.filter((s) => rels.get(s.rid)?.type.endsWith(REL.worksheet));
  const ctx: SheetContext = {
    strings,
    styles,
    date1904,
    delimiter: options.sheet_format === "tsv" ? "\t" : ",",
    maxRows: options.max_rows,
    cellsLeft: options.max_cells,
    charsLeft: options.max_chars,
  };
  const blocks: string[] = [];
  let truncatedBy: TruncatedBy | undefined =
    worksheets.length > options.max_sheets ? "max_sheets" : undefined;
  let cells = 0;
  for (const sheet of worksheets.slice(0, options.max_sheets)) {
    const path = rels.get(sheet.rid)!.target;
    const xml = await pkg.text(path);
    if (xml === null) throw pkg.corrupt(`the sheet part ${path} is missing`);
    const header = `# Sheet: ${sheet.name}${sheet.hidden ? " (hidden)" : ""}`;
    ctx.charsLeft -= header.length + 2;
    const result = pkg.parse(path, () => sheetXmlToRows(xml, ctx));
    cells += result.cells;
    const lines = [header, ...result.lines];
    if (result.truncatedBy === "max_rows")
      lines.push(`[truncated: first ${result.lines.length} rows of this sheet]`);
    if (result.truncatedBy === "max_cells")
      lines.push(`[truncated: cell limit of ${options.max_cells} reached]`);
    blocks.push(lines.join("\n"));
    if (result.truncatedBy !== undefined) {
      truncatedBy ??= result.truncatedBy;
      // Rows are per sheet; cells and characters are spent for the whole workbook.
      if (result.truncatedBy !== "max_rows") break;
    }
    if (ctx.charsLeft <= 0) {
      truncatedBy ??= "max_chars";
      break;
    }
  }
  const text = cells === 0 ? "" : blocks.join("\n\n");
  return {
    text,
    format: "xlsx",
    sheets: worksheets.length,
    truncated: truncatedBy !== undefined,
    ...(truncatedBy === undefined ? {} : { truncated_by: truncatedBy }),
  };
}

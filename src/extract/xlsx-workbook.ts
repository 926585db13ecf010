/**
 * The parts of an XLSX workbook a sheet is read with: the sheet list, the shared strings, which
 * cell styles show dates or times, and how Excel writes a cell's number, date or column reference.
 */
import { attr, scanXml } from "./xml.ts";

export const REL = {
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

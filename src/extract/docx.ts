/**
 * DOCX → text: the main document part (word/document.xml, or whatever `_rels/.rels` names), walked once.
 * Paragraphs become lines (headings "#", list items "- "), tables become "| a | b |" rows with a header rule
 * after the first, tabs and breaks are kept. Tracked deletions, field codes and the VML fallback copy of
 * text boxes (mc:Fallback, which repeats mc:Choice) are skipped. Headers, footers, footnotes and comments
 * are not read.
 */
import { tidy, trimBlanksEnd } from "./html.ts";
import { type OoxmlPackage, officeDocumentPath } from "./ooxml.ts";
import type { ExtractResult } from "./types.ts";
import { attrLocal, scanXml } from "./xml.ts";

interface Cell {
  parts: string[];
}
interface Table {
  rows: string[][];
  row: string[] | null;
  cell: Cell | null;
}
interface Paragraph {
  text: string;
  prefix: string;
}

/**
 * The document's text. Scanning stops once the text is surely longer than `maxChars` (the caller cuts it
 * there): a 16 MB part is not turned into 16 MB of lines only to keep the first 200,000 chars.
 */
export function docxXmlToText(xml: string, maxChars = Number.POSITIVE_INFINITY): string {
  const out: string[] = [];
  // A lower bound of the tidied length of `out`: tidy only drops blank lines and one space per line start.
  let written = 0;
  const paragraphs: Paragraph[] = [];
  const tables: Table[] = [];
  let inText = false;
  let skipDepth = 0; // inside mc:Fallback / w:del subtree
  let skipName = "";

  const emitLine = (line: string): void => {
    const table = tables[tables.length - 1];
    if (table?.cell) table.cell.parts.push(line);
    else {
      out.push(line);
      written += Math.max(0, line.length - 1);
    }
  };
  const append = (s: string): void => {
    const p = paragraphs[paragraphs.length - 1];
    if (p) p.text += s;
  };

  scanXml(xml, {
    open(name, attrs, selfClosing) {
      if (skipDepth > 0) {
        if (name === skipName && !selfClosing) skipDepth++;
        return;
      }
      switch (name) {
        case "Fallback":
        case "del":
        case "instrText":
        case "delText":
          if (!selfClosing) {
            skipDepth = 1;
            skipName = name;
          }
          return;
        case "p":
          paragraphs.push({ text: "", prefix: "" });
          return;
        case "pStyle": {
          const style = attrLocal(attrs, "val") ?? "";
          const m = /^heading\s?(\d)$/i.exec(style);
          const p = paragraphs[paragraphs.length - 1];
          if (p && m) p.prefix = `${"#".repeat(Math.min(6, Number(m[1])))} `;
          else if (p && /^title$/i.test(style)) p.prefix = "# ";
          return;
        }
        case "ilvl": {
          const p = paragraphs[paragraphs.length - 1];
          if (p)
            p.prefix = `${"  ".repeat(Math.min(8, Number(attrLocal(attrs, "val") ?? 0) || 0))}- `;
          return;
        }
        case "numPr": {
          const p = paragraphs[paragraphs.length - 1];
          if (p && !p.prefix.endsWith("- ")) p.prefix = "- ";
          return;
        }
        case "t":
          inText = !selfClosing;
          return;
        case "tab":
          // w:tab inside w:tabs (paragraph properties) defines a tab stop, not a tab character.
          if (attrLocal(attrs, "pos") === undefined) append("\t");
          return;
        case "br":
        case "cr":
          append(tables.length > 0 ? " " : "\n");
          return;
        case "noBreakHyphen":
          append("-");
          return;
        case "tbl":
          tables.push({ rows: [], row: null, cell: null });
          return;
        case "tr": {
          const t = tables[tables.length - 1];
          if (t) t.row = [];
          return;
        }
        case "tc": {
          const t = tables[tables.length - 1];
          if (t) t.cell = { parts: [] };
          return;
        }
      }
    },
    close(name) {
      if (skipDepth > 0) {
        if (name === skipName) skipDepth--;
        return;
      }
      switch (name) {
        case "t":
          inText = false;
          return;
        case "p": {
          const p = paragraphs.pop();
          if (!p) return;
          const text = trimBlanksEnd(p.text);
          emitLine(text === "" ? "" : p.prefix + text);
          return written > maxChars;
        }
        case "tc": {
          const t = tables[tables.length - 1];
          if (t?.cell && t.row)
            t.row.push(
              t.cell.parts
                .filter((s) => s !== "")
                .join(" ")
                .replace(/\|/g, "\\|"),
            );
          if (t) t.cell = null;
          return;
        }
        case "tr": {
          const t = tables[tables.length - 1];
          if (t?.row) t.rows.push(t.row);
          if (t) t.row = null;
          return;
        }
        case "tbl": {
          const t = tables.pop();
          if (!t) return;
          if (tables.length > 0) {
            // A nested table lands in its parent's cell, one "a; b" part per row.
            for (const row of t.rows) emitLine(row.filter((c) => c !== "").join("; "));
            return;
          }
          const rows = t.rows.map((row) => `| ${row.join(" | ")} |`);
          const first = t.rows[0];
          if (first && t.rows.length > 1)
            rows.splice(1, 0, `|${first.map(() => " --- |").join("")}`);
          out.push("", ...rows, "");
          for (const row of rows) written += row.length;
          return written > maxChars;
        }
      }
    },
    text(s) {
      if (inText && skipDepth === 0) append(s);
    },
  });
  return tidy(out.join("\n"));
}

export async function extractDocx(
  pkg: OoxmlPackage,
  maxChars = Number.POSITIVE_INFINITY,
): Promise<ExtractResult> {
  const main = (await officeDocumentPath(pkg)) ?? "word/document.xml";
  const xml = await pkg.text(main);
  if (xml === null) throw pkg.corrupt(`the document part ${main} is missing`);
  const text = pkg.parse(main, () => docxXmlToText(xml, maxChars));
  return { text, format: "docx", truncated: false };
}

/**
 * HTML → readable text without a DOM (none exists in workerd): one linear pass over the tags. Scripts, styles
 * and other non-content elements are dropped, block elements become line breaks, list items get "- ",
 * headings "#", table cells are separated by " | ", <pre> keeps its whitespace, entities are decoded.
 */
import { decodeHtmlEntities } from "./entities.ts";

const SKIP = new Set([
  "script",
  "style",
  "noscript",
  "template",
  "svg",
  "math",
  "iframe",
  "object",
  "head",
  "select",
  "canvas",
]);
const BLOCK = new Set([
  "address",
  "article",
  "aside",
  "blockquote",
  "body",
  "caption",
  "dd",
  "details",
  "dialog",
  "div",
  "dl",
  "dt",
  "fieldset",
  "figcaption",
  "figure",
  "footer",
  "form",
  "header",
  "hgroup",
  "html",
  "legend",
  "main",
  "nav",
  "ol",
  "p",
  "section",
  "summary",
  "table",
  "tbody",
  "tfoot",
  "thead",
  "title",
  "ul",
]);

/** Lower-case tag name starting at `i` (just after "<" or "</"), and where it ends. */
function tagName(html: string, i: number): [string, number] {
  let j = i;
  while (j < html.length) {
    const c = html.charCodeAt(j);
    const letter =
      (c >= 97 && c <= 122) ||
      (c >= 65 && c <= 90) ||
      (j > i && ((c >= 48 && c <= 57) || c === 45 || c === 58));
    if (!letter) break;
    j++;
  }
  return [html.slice(i, j).toLowerCase(), j];
}

/** End of a tag (the index after ">"), skipping quoted attribute values. */
function tagEnd(html: string, i: number): number {
  let quote = 0;
  for (let j = i; j < html.length; j++) {
    const c = html.charCodeAt(j);
    if (quote) {
      if (c === quote) quote = 0;
    } else if (c === 34 || c === 39) quote = c;
    else if (c === 62) return j + 1;
  }
  return html.length;
}

/**
 * The readable text of an HTML document (scripts, styles and markup dropped, blocks on their own
 * lines).
 *
 * @example
 * htmlToText("<h1>Title</h1><p>One &amp; two</p><script>x()</script>"); // "# Title\n\nOne & two"
 */
export function htmlToText(html: string): string {
  const out: string[] = [];
  let pre = 0;
  let inCellRow = false;
  // Line breaks are owed, not written, until the next text: "</li><li>" is one break, not two.
  let owed = 0;
  const newline = (n = 1): void => {
    if (out.length > 0) owed = Math.max(owed, n);
  };
  const write = (s: string): void => {
    if (owed > 0) {
      out.push(owed === 1 ? "\n" : "\n\n");
      owed = 0;
    }
    out.push(s);
  };
  const pushText = (raw: string): void => {
    const text = decodeHtmlEntities(raw);
    if (pre > 0) {
      write(text);
      return;
    }
    const collapsed = text.replace(/\s+/g, " ");
    if (collapsed === " " && (owed > 0 || out.length === 0)) return;
    write(collapsed);
  };
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf("<", i);
    if (lt === -1) {
      pushText(html.slice(i));
      break;
    }
    if (lt > i) pushText(html.slice(i, lt));
    if (html.startsWith("<!--", lt)) {
      const end = html.indexOf("-->", lt + 4);
      i = end === -1 ? html.length : end + 3;
      continue;
    }
    if (html[lt + 1] === "!" || html[lt + 1] === "?") {
      i = tagEnd(html, lt + 2);
      continue;
    }
    const closing = html[lt + 1] === "/";
    const [name, after] = tagName(html, lt + (closing ? 2 : 1));
    if (name === "") {
      pushText("<");
      i = lt + 1;
      continue;
    }
    const end = tagEnd(html, after);
    i = end;
    if (!closing && SKIP.has(name)) {
      // Raw content until the matching end tag (a script may contain "<" freely); <head> keeps its <title>.
      const closer = new RegExp(`</${name}`, "gi");
      closer.lastIndex = end;
      const close = closer.exec(html)?.index ?? -1;
      const inner = close === -1 ? "" : html.slice(end, close);
      if (name === "head") {
        const title = titleOf(inner);
        if (title !== null) {
          pushText(title);
          newline(2);
        }
      }
      i = close === -1 ? html.length : tagEnd(html, close + 2);
      continue;
    }
    if (name === "br") newline();
    else if (name === "hr") newline(2);
    else if (name === "pre") {
      pre += closing ? -1 : 1;
      if (pre < 0) pre = 0;
      newline();
    } else if (/^h[1-6]$/.test(name)) {
      newline(2);
      if (!closing) write(`${"#".repeat(Number(name[1]))} `);
    } else if (name === "li") {
      newline();
      if (!closing) write("- ");
    } else if (name === "tr") {
      newline();
      inCellRow = !closing;
    } else if (name === "td" || name === "th") {
      if (!closing && inCellRow && owed === 0 && out.length > 0) write(" | ");
    } else if (name === "img" && !closing) {
      const alt = /\salt\s*=\s*("([^"]*)"|'([^']*)')/i.exec(html.slice(after, end));
      const text = alt?.[2] ?? alt?.[3];
      if (text) pushText(`[${text}]`);
    } else if (BLOCK.has(name))
      newline(name === "p" || name === "table" || name === "blockquote" ? 2 : 1);
  }
  return tidy(out.join(""));
}

/**
 * The text of a head's first `<title …>…</title`. Found with two searches instead of a lazy regex: a head of
 * 128,000 unclosed `<title>`s made the regex retry from each one (quadratic), and if the first `<title`
 * has no close after it, no later one can.
 */
function titleOf(head: string): string | null {
  const open = /<title/i.exec(head);
  if (open === null) return null;
  const gt = head.indexOf(">", open.index + 6);
  if (gt === -1) return null;
  const close = /<\/title/gi;
  close.lastIndex = gt + 1;
  const end = close.exec(head);
  return end === null ? null : head.slice(gt + 1, end.index);
}

/**
 * `s` without trailing spaces and tabs. By hand: /[ \t]+$/ retries at every blank of a long inner run of
 * blanks (a <pre> of 100,000 spaces before one letter), which is quadratic.
 */
export function trimBlanksEnd(s: string): string {
  let end = s.length;
  while (end > 0 && (s.charCodeAt(end - 1) === 32 || s.charCodeAt(end - 1) === 9)) end--;
  return end === s.length ? s : s.slice(0, end);
}

/** Trim line ends (and the one space a collapsed break leaves at a line start), keep at most one blank line. */
export function tidy(text: string): string {
  const lines = text.split("\n").map((l) => trimBlanksEnd(l.replace(/^ (?=\S)/, "")));
  const kept: string[] = [];
  for (const line of lines) {
    if (line === "" && (kept.length === 0 || kept[kept.length - 1] === "")) continue;
    kept.push(line);
  }
  while (kept.length > 0 && kept[kept.length - 1] === "") kept.pop();
  return kept.join("\n");
}

/** Tables the benches print: aligned text for the terminal, Markdown for the docs. */

/** Columns before `text` are left-aligned (names), the rest right-aligned (figures). */
export function textTable(head: string[], rows: string[][], text = 1): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < text ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

export function markdownTable(head: string[], rows: string[][], text = 1): string {
  return [
    `| ${head.join(" | ")} |`,
    `|${head.map((_, i) => (i < text ? "---" : "---:")).join("|")}|`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
}

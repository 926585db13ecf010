/**
 * The README stays a first read (at most 300 lines, its config rows true to the schema, its links to docs that
 * exist) and docs/config.md holds every field: its table is what scripts/config-table.ts prints from the one
 * schema. (The quick start's output is checked against `npm start` in test/smoke/readme.test.ts.)
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../src/config.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const readme = readFileSync(`${root}/README.md`, "utf8");
const config = readFileSync(`${root}/docs/config.md`, "utf8");

describe("README", () => {
  it("fits a first read: at most 300 lines", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(300);
  });

  it("gives each config field it names its true default", () => {
    let rows = 0;
    for (const line of readme.split("\n")) {
      const m = /^\| `(\w+)` \| `([^`]*)` \|/.exec(line);
      if (m === null) continue;
      rows++;
      expect(m[1]! in DEFAULT_CONFIG, m[1]).toBe(true);
      expect(m[2], m[1]).toBe(JSON.stringify(DEFAULT_CONFIG[m[1] as keyof typeof DEFAULT_CONFIG]));
    }
    expect(rows).toBeGreaterThanOrEqual(6);
  });

  it("links only to docs that exist", () => {
    for (const [, path] of readme.matchAll(/\]\((docs\/[^)#]+)/g)) {
      expect(() => readFileSync(`${root}/${path}`), path).not.toThrow();
    }
  });
});

describe("docs/config.md", () => {
  it("holds the table the schema prints, every field with its default", () => {
    const printed = spawnSync(process.execPath, ["scripts/config-table.ts"], {
      cwd: root,
      encoding: "utf8",
    });
    expect(printed.status, printed.stderr).toBe(0);
    expect(config).toContain(printed.stdout.trim());
    for (const [key, value] of Object.entries(DEFAULT_CONFIG)) {
      const row = config.split("\n").find((l) => l.startsWith(`| \`${key}\``));
      expect(row, key).toContain(`\`${JSON.stringify(value)}\``);
    }
  });
});

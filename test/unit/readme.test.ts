/** The README's config table lists every field of the one schema, with its default (keeps the docs true). */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../src/config.ts";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

describe("README", () => {
  it("documents every config field with its default", () => {
    for (const [key, value] of Object.entries(DEFAULT_CONFIG)) {
      const row = readme.split("\n").find((l) => l.startsWith(`| \`${key}\``));
      expect(row, key).toBeDefined();
      expect(row, key).toContain(`\`${JSON.stringify(value)}\``);
    }
  });

  it("links only to docs that exist", () => {
    for (const [, path] of readme.matchAll(/\]\((docs\/[^)#]+)/g)) {
      expect(() => readFileSync(new URL(`../../${path}`, import.meta.url)), path).not.toThrow();
    }
  });
});

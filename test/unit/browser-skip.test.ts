/**
 * The dashboard's browser test, on a machine without Chromium outside CI, is skipped and says so in the test
 * output (what it needs and how to get it) rather than vanishing from the counts.
 */
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe("the browser test without Chromium", () => {
  it("is reported as skipped, naming the missing browser and how to install it", () => {
    const missing = "/nonexistent/chromium";
    const run = spawnSync(
      process.execPath,
      [
        join(root, "node_modules", "vitest", "vitest.mjs"),
        "run",
        "--project",
        "smoke",
        "test/smoke/dashboard.test.ts",
      ],
      {
        cwd: root,
        env: {
          ...process.env,
          CI: "",
          EDGE_OFFLOAD_CHROMIUM: missing,
          NO_COLOR: "1",
          PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
        },
        encoding: "utf8",
      },
    );
    const output = run.stdout + run.stderr;
    expect(run.status, output).toBe(0);
    expect(output).toContain(
      `the browser test was skipped: ${missing} is missing (apt-get install chromium to run it; CI installs it)`,
    );
    expect(output).toMatch(/dashboard\.test\.ts \(\d+ tests \| \d+ skipped\)/);
  }, 60_000);
});

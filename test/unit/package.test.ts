/**
 * The published shape: `npm run build` emits ESM + .d.ts, and plain Node (no workerd, no TypeScript) imports
 * the public API by the package's name and runs a turn with it.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe("package", () => {
  it("builds, and plain Node imports the public API by name", () => {
    const build = spawnSync("npm", ["run", "build", "--silent"], { cwd: root, encoding: "utf8" });
    expect(build.status, build.stderr + build.stdout).toBe(0);
    expect(existsSync(`${root}/dist/lib.js`)).toBe(true);
    expect(readFileSync(`${root}/dist/lib.d.ts`, "utf8")).toContain("compact");
    const script = `
      import { compact, recall, offloadGate, recallToolDefinition, MemoryStore, OffloadConfigSchema } from "edge-offload";
      const store = new MemoryStore();
      const body = "x".repeat(70000);
      const request = JSON.stringify({ model: "claude-opus-4-5", messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "dump", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: body }] },
        { role: "assistant", content: [{ type: "tool_use", id: "t2", name: "dump", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t2", content: "ok" }] } ] });
      const out = await compact({ format: "anthropic", request, session: "s", store, config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true } });
      const memId = out.decisions[0].mem_id;
      const back = await recall({ store, session: "s", mem_id: memId, offset: 0, max_chars: 10 });
      console.log(JSON.stringify({
        action: out.decisions[0].action, back: back.content.split("\\n")[1],
        gate: offloadGate({ model: "claude-opus-4-5", result_tokens: 321000, stub_tokens: 300, horizon: 5, recall_probability: 0.5, cached_side: false, context_tokens: 9000 }).fire,
        tool: recallToolDefinition("anthropic").name, defaults: OffloadConfigSchema.parse({}).tool_result_large_offload_threshold_chars,
      }));`;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      cwd: root,
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      action: "offloaded",
      back: "xxxxxxxxxx",
      gate: true,
      tool: "recall_tool_result",
      defaults: 60000,
    });
  }, 120_000);
});

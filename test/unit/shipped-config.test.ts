/**
 * What the Worker does for a session nobody configured (wrangler.toml's OFFLOAD_DEFAULT_CONFIG, the
 * shipped deployment layer, which `edge-offload serve` runs with too): shadow mode. Every call is decided and its bodies ledgered, the request goes
 * out as sent, and the summary and the report say what it would save and the one line that turns it live;
 * that line makes the very decisions taken in shadow land (sticky). Why shadow: docs/config.md.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseConfigPatch, resolveConfig, SHIPPED_DEPLOYMENT_CONFIG } from "../../src/config.ts";
import { compact } from "../../src/core/compact.ts";
import { GO_LIVE, summaryOf } from "../../src/http/summary.ts";
import { sessionReport } from "../../src/report.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { conversation, jsonBody } from "../support/requests.ts";

const toml = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");
const shipped = JSON.parse(/^OFFLOAD_DEFAULT_CONFIG = '(.*)'$/m.exec(toml)![1]!);

describe("the shipped deployment layer", () => {
  it("is shadow mode with compaction and offload on, and nothing else", () => {
    expect(parseConfigPatch(shipped)).toEqual({
      tool_result_compaction_enabled: true,
      tool_result_offload_enabled: true,
      tool_result_offload_shadow: true,
    });
  });

  it("is the layer `edge-offload serve` runs with when OFFLOAD_DEFAULT_CONFIG is unset", () => {
    expect(parseConfigPatch(shipped)).toEqual(SHIPPED_DEPLOYMENT_CONFIG);
  });

  it("decides and reports what a call would save, sends it unchanged, and goes live with one line", async () => {
    const store = new MemoryStore();
    const request = JSON.stringify(
      conversation([
        { id: "t1", result: jsonBody(80_000) },
        { id: "t2", result: "ok" },
      ]),
    );
    const turn = (session: unknown) =>
      compact({
        request,
        session: "unconfigured",
        store,
        config: resolveConfig(shipped, session),
      });
    const shadow = await turn({});
    expect(shadow.request).toBe(request);
    expect(shadow.decisions[0]).toMatchObject({ action: "offloaded" });
    const summary = summaryOf(shadow.report, shadow.changed, []);
    expect(summary).toMatchObject({ shadow: true, saved_usd: 0, offloaded: 1 });
    expect(summary.would_save_usd).toBeGreaterThan(0);
    expect(summary.note).toBe(
      `shadow: would save $${summary.would_save_usd.toFixed(4)} on this call (${summary.would_save_tokens} tokens); one line to go live: ${GO_LIVE} in the session's config, the deployment's or x-offload-config`,
    );
    const report = await sessionReport({ store, session: "unconfigured" });
    expect(report.mode).toBe("shadow");
    expect(report.note).toContain(`one line to go live: ${GO_LIVE}`);

    const live = await turn(JSON.parse(GO_LIVE));
    expect(live.changed).toBe(true);
    expect(live.decisions[0]).toMatchObject({ action: "offloaded", sticky: true });
    expect(summaryOf(live.report, live.changed, []).note).toBeNull();
    expect((await sessionReport({ store, session: "unconfigured" })).note).toBeNull();
  });
});

/**
 * `edge-offload serve` over each store (a SQLite file, Postgres, Redis): the service's HTTP flow (compact
 * twice, recall, the session, the report, the OpenAPI document, the dashboard, delete), `serve` restarted on
 * the same SQLite file still answering the recalls of the sessions it had and reading the files it had
 * extracted from its extraction cache, and its command line refusing a store it cannot name in one line.
 * (The official clients' proxy suites run against it in the `serve` project.)
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { catalogMessages } from "../support/providers.ts";
import { startServe } from "../support/serve.ts";
import { need } from "./need.ts";

const KEY = "sk-serve-test-key-01";
const VARS = {
  OFFLOAD_API_KEYS: `serve:${KEY}`,
  OFFLOAD_SECRET: "serve-test-secret-0123456789abcdef",
};
const HEADERS = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
const ON = JSON.stringify({
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
});
const dir = mkdtempSync(join(tmpdir(), "edge-offload-serve-test-"));
const postgres = need("postgres");
const redis = need("redis");

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const conversation = () => ({
  model: "claude-opus-4-5",
  max_tokens: 512,
  messages: catalogMessages(),
});

/** A session compacted once over HTTP: the mem_id of its stub. */
async function offload(base: string, session: string): Promise<string> {
  const res = await fetch(`${base}/v1/sessions/${session}/compact?format=anthropic`, {
    method: "POST",
    headers: { ...HEADERS, "x-offload-config": ON },
    body: JSON.stringify(conversation()),
  });
  expect(res.status).toBe(200);
  expect(JSON.parse(res.headers.get("x-offload-summary")!)).toMatchObject({
    offloaded: 1,
    errors_total: 0,
  });
  return /trm_[0-9a-f]{24}/.exec(await res.text())![0];
}

/** A PDF through /v1/extract: whether it came from the cache, and its text. */
async function extractPdf(base: string): Promise<{ cache: string | null; text: string }> {
  const res = await fetch(`${base}/v1/extract`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/pdf" },
    body: readFileSync(new URL("../fixtures/files/multipage.pdf", import.meta.url)),
  });
  expect(res.status).toBe(200);
  return {
    cache: res.headers.get("x-extract-cache"),
    text: ((await res.json()) as { text: string }).text,
  };
}

async function recall(base: string, session: string, mem: string) {
  const res = await fetch(`${base}/v1/sessions/${session}/recall`, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify({ mem_id: mem, json_path: "$.items[?(@.price > 2247)].name" }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { content: string; is_error: boolean };
}

describe("edge-offload serve", () => {
  it("serves the service over a SQLite file, and answers its sessions' recalls after a restart", async () => {
    const store = `sqlite:${join(dir, "restart.db")}`;
    const session = `serve-${Date.now().toString(36)}`;
    let server = await startServe({ store, vars: VARS });
    let mem: string;
    let extracted: { cache: string | null; text: string };
    try {
      const { base } = server;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      mem = await offload(base, session);
      expect(await offload(base, session)).toBe(mem); // the decision is sticky
      expect((await recall(base, session, mem)).content).toContain("item-1499");
      extracted = await extractPdf(base);
      expect(extracted.cache).toBe("miss");
      const doc = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: object };
      expect(Object.keys(doc.paths)).toContain("/v1/sessions/{session_id}/recall");
      expect(await (await fetch(`${base}/`)).text()).toContain("<html");
      const unauthorized = await fetch(`${base}/v1/sessions/${session}`);
      expect(unauthorized.status).toBe(401);
    } finally {
      await server.stop();
    }
    server = await startServe({ store, vars: VARS });
    try {
      const { base } = server;
      const again = await recall(base, session, mem);
      expect(again.is_error).toBe(false);
      expect(again.content).toContain("item-1499");
      // Extracted before the restart: read from the file's extraction cache, not parsed again.
      expect(await extractPdf(base)).toEqual({ cache: "hit", text: extracted.text });
      const view = (await (
        await fetch(`${base}/v1/sessions/${session}`, { headers: HEADERS })
      ).json()) as { totals: { calls: number; recalls: number } };
      expect(view.totals).toMatchObject({ calls: 2, recalls: 2 });
      const report = await fetch(`${base}/v1/sessions/${session}/report`, { headers: HEADERS });
      expect(report.status).toBe(200);
      expect(
        (await fetch(`${base}/v1/sessions/${session}`, { method: "DELETE", headers: HEADERS }))
          .status,
      ).toBe(204);
      expect((await recall(base, session, mem)).is_error).toBe(true);
    } finally {
      await server.stop();
    }
  });

  for (const [name, server] of [
    ["Postgres", postgres],
    ["Redis", redis],
  ] as const)
    it.skipIf(server.url === undefined)(`serves the service over ${name}`, async () => {
      const s = await startServe({
        store: `${server.url}${name === "Redis" ? "/4" : ""}`,
        vars: VARS,
      });
      try {
        expect(s.output()).toContain(`(store ${name === "Redis" ? "redis" : "postgres"}://`);
        const session = `serve-${name}-${Date.now().toString(36)}`;
        const mem = await offload(s.base, session);
        expect((await recall(s.base, session, mem)).content).toContain("item-1499");
      } finally {
        await s.stop();
      }
    });

  it("refuses a store it cannot name, a bad port, and says how to use it", () => {
    const run = (...args: string[]) =>
      spawnSync(
        process.execPath,
        [
          "--experimental-strip-types",
          "--disable-warning=ExperimentalWarning",
          "src/cli.ts",
          "serve",
          ...args,
        ],
        { encoding: "utf8", env: { PATH: process.env.PATH ?? "", ...VARS } },
      );
    const bad = run("--store", "mysql://x");
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toContain("use sqlite:<file>, postgres://…, redis://… or memory:");
    const port = run("--port", "99999");
    expect(port.status).toBe(2);
    expect(port.stderr).toContain("--port must be a port number");
    const help = run("--help");
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("--store URL");
  });
});

/**
 * `npm start` itself (the preflight, .dev.vars, scripts/start.mjs, wrangler dev) on ports other than 8787, in
 * the two spellings people use: `npm start -- --port N` and `PORT=N npm start`. Each serves the Worker on N,
 * and, this machine being offline, prints no stack trace from wrangler's lookups. Own state directory and
 * inspector port per start; the whole process group is killed at the end.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type DevServer, freePort, npmStart } from "./dev-server.ts";

let server: DevServer | undefined;

afterEach(async () => {
  await server?.stop();
  server = undefined;
});

function expectQuiet(output: string): void {
  expect(output).not.toContain("Unable to fetch the `Request.cf` object");
  expect(output).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
}

describe("npm start on another port", () => {
  it("npm start -- --port N", async () => {
    const port = await freePort();
    server = await npmStart(["--port", String(port)], {});
    expect((await fetch(`${server.base}/healthz`)).status).toBe(200);
    expect(server.output()).toContain(`Ready on http://127.0.0.1:${port}`);
    expectQuiet(server.output());
  });

  it("PORT=N npm start", async () => {
    const port = await freePort();
    server = await npmStart([], { PORT: String(port) });
    expect((await fetch(`${server.base}/healthz`)).status).toBe(200);
    expect(server.output()).toContain(`Ready on http://127.0.0.1:${port}`);
    expectQuiet(server.output());
  });
});

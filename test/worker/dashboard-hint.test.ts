/**
 * The dashboard's login form hints `npm start`'s key when it is that local setup: a loopback address and a
 * deployment whose keys include the key from .dev.vars.example. Never on a public host, never for other keys.
 */
import { describe, expect, it } from "vitest";
import { dashboardRoutes, LOCAL_DEV_KEY, localKeyHint } from "../../src/routes/dashboard.ts";

const LOCAL_KEYS = "local:sk-local-dev-key-1234";

describe("the login form's local key hint", () => {
  it("is the key .dev.vars.example gives npm start (test/unit/start.test.ts reads the file)", () => {
    expect(LOCAL_DEV_KEY).toBe("sk-local-dev-key-1234");
  });

  it("is given on loopback addresses when the deployment's keys include it", async () => {
    for (const url of ["http://127.0.0.1:8787/", "http://localhost:8791/", "http://[::1]:8787/"])
      expect(await localKeyHint(url, LOCAL_KEYS), url).toBe(LOCAL_DEV_KEY);
    expect(
      await localKeyHint(
        "http://127.0.0.1:8787/",
        "acme:key-of-acme-0123456789,local:sk-local-dev-key-1234",
      ),
    ).toBe(LOCAL_DEV_KEY);
  });

  it("is never given on a public host, or when the keys do not include it", async () => {
    expect(await localKeyHint("https://offload.example.workers.dev/", LOCAL_KEYS)).toBeUndefined();
    expect(
      await localKeyHint("http://127.0.0.1:8787/", "acme:another-key-0123456789"),
    ).toBeUndefined();
    expect(await localKeyHint("http://127.0.0.1:8787/", undefined)).toBeUndefined();
  });

  it("appears on the login page served locally, and not elsewhere", async () => {
    const app = dashboardRoutes(() => {});
    const local = await (
      await app.request("http://127.0.0.1:8787/", {}, { OFFLOAD_API_KEYS: LOCAL_KEYS })
    ).text();
    expect(local).toContain('id="login-hint"');
    expect(local).toContain(`<code>${LOCAL_DEV_KEY}</code>`);
    const wrong = await app.request(
      "http://127.0.0.1:8787/",
      {
        method: "POST",
        body: "key=nope",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      },
      { OFFLOAD_API_KEYS: LOCAL_KEYS },
    );
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain(`<code>${LOCAL_DEV_KEY}</code>`);
    const remote = await (
      await app.request(
        "https://offload.example.workers.dev/",
        {},
        { OFFLOAD_API_KEYS: LOCAL_KEYS },
      )
    ).text();
    expect(remote).not.toContain("login-hint");
    expect(remote).not.toContain(LOCAL_DEV_KEY);
  });
});

/**
 * GET / and POST / — the savings dashboard, behind the API's own keys. GET / is the login form; the form posts
 * the key (it stays out of URLs, logs and history). `GET /?key=` signs in only where the deployment allows it
 * (`OFFLOAD_DASHBOARD_URL_KEYS=on`, set for local use); elsewhere it is the login form alone. A valid key gets
 * the dashboard page, whose script calls the /v1 report routes with that key as its Bearer token; a wrong one
 * gets the form again with a 401. The key is never logged, and nothing here may be cached (`no-store`).
 */
import { Hono } from "hono";
import { dashboardPage, loginPage } from "../dashboard/page.ts";
import { isOffloadError } from "../errors.ts";
import { authenticate, parseApiKeys, presentedKey, tenantOf } from "../http/auth.ts";
import { readText } from "../http/body.ts";
import type { AppEnv } from "../http/context.ts";

/** A key in a URL ends up in logs and browser history: only a deployment that says so accepts one. */
function urlKeysAllowed(value: string | undefined): boolean {
  return (value ?? "").trim().toLowerCase() === "on";
}

/** A login form is a key and a field name: anything larger is not one. */
const LOGIN_BODY_BYTES = 64 * 1024;

/** The key `npm start` runs with (.dev.vars.example). */
export const LOCAL_DEV_KEY = "sk-local-dev-key-1234";
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/**
 * The local key to hint on the login form: only on a loopback address, and only when the deployment's keys
 * include it. A deployment reached by its public name never shows it, whatever its keys.
 */
export async function localKeyHint(
  url: string,
  raw: string | undefined,
): Promise<string | undefined> {
  if (!LOOPBACK.has(new URL(url).hostname)) return undefined;
  return (await tenantOf(await parseApiKeys(raw), LOCAL_DEV_KEY)) === null
    ? undefined
    : LOCAL_DEV_KEY;
}

function nonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes));
}

function html(body: string, status: number, scriptNonce: string): Response {
  return new Response(body, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      // Only this response's own inline script and style run; the page talks to this origin only.
      "content-security-policy": `default-src 'none'; script-src 'nonce-${scriptNonce}'; style-src 'nonce-${scriptNonce}'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
      "referrer-policy": "no-referrer",
      "x-content-type-options": "nosniff",
      "x-frame-options": "DENY",
    },
  });
}

export function dashboardRoutes(log: (line: string) => void): Hono<AppEnv> {
  const signIn = async (url: string, raw: string | undefined, key: string): Promise<Response> => {
    const n = nonce();
    const hint = await localKeyHint(url, raw);
    if (key === "") return html(loginPage(n, "Enter an API key.", hint), 401, n);
    try {
      const tenant = await authenticate(raw, key, log);
      return html(dashboardPage(n, { tenant, key }), 200, n);
    } catch (e) {
      if (!isOffloadError(e) || e.type !== "unauthorized") throw e;
      return html(
        loginPage(
          n,
          e.message === "unknown API key"
            ? "Unknown API key."
            : "This deployment has no API keys configured (OFFLOAD_API_KEYS).",
          hint,
        ),
        401,
        n,
      );
    }
  };

  return new Hono<AppEnv>()
    .get("/", async (c) => {
      const key = c.req.query("key");
      if (key === undefined || !urlKeysAllowed(c.env.OFFLOAD_DASHBOARD_URL_KEYS)) {
        const n = nonce();
        const hint = await localKeyHint(c.req.url, c.env.OFFLOAD_API_KEYS);
        return html(loginPage(n, undefined, hint), 200, n);
      }
      return signIn(c.req.url, c.env.OFFLOAD_API_KEYS, presentedKey(key));
    })
    .post("/", async (c) => {
      const form = new URLSearchParams(await readText(c.req.raw, LOGIN_BODY_BYTES));
      return signIn(c.req.url, c.env.OFFLOAD_API_KEYS, presentedKey(form.get("key")));
    });
}

// The provider side of the workerd proxy tests: the Worker's outbound fetch, mocked. The Worker under SELF
// runs in the tests' isolate, so a spy on globalThis.fetch sees its provider calls (the mock the plugin's
// docs describe for outbound requests); calls to other hosts go to the real fetch.
import { SELF } from "cloudflare:test";
import { expect, vi } from "vitest";
import { BASE, KEYS } from "./helpers.ts";

export interface Seen {
  method: string;
  url: string;
  headers: Headers;
  body: string;
  json: Record<string, unknown>;
}

/**
 * A reply is built inside the Worker's request (workerd forbids reading a body created in another request's
 * context), so replies are functions; one may return another (a reply chosen from what was received).
 */
export type Reply = Error | ((seen: Seen) => Reply | Response | Promise<Reply | Response>);

const HOSTS = ["https://api.anthropic.com/", "https://api.openai.com/"];

/** Answers the provider calls in order with `replies`; returns what the provider received. */
export function mockProvider(...replies: Reply[]): Seen[] {
  const seen: Seen[] = [];
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input as RequestInfo, init as RequestInit);
    if (!HOSTS.some((h) => req.url.startsWith(h)))
      return real(input as RequestInfo, init as RequestInit);
    const body = await req.text();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(body) as Record<string, unknown>;
    } catch {
      // the test looks at body
    }
    const s = { method: req.method, url: req.url, headers: req.headers, body, json };
    seen.push(s);
    const reply = replies.shift();
    if (reply === undefined)
      throw new Error(`unexpected provider call #${seen.length} to ${req.url}`);
    let r: Reply | Response = reply;
    while (typeof r === "function") r = await r(s);
    if (r instanceof Error) throw r;
    return r;
  });
  return seen;
}

export function jsonReply(
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Reply {
  return () =>
    new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": "application/json", ...headers },
    });
}

export function textReply(body: string, headers: Record<string, string>, status = 200): Reply {
  return () => new Response(body, { status, headers });
}

/** An event stream; `cut` ends it with a network error after that many events. */
export function sseReply(events: readonly string[], options: { cut?: number } = {}): Reply {
  return () => sseResponse(events, options);
}

function sseResponse(events: readonly string[], options: { cut?: number }): Response {
  const encoder = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (options.cut !== undefined && i === options.cut)
        return controller.error(new Error("Network connection lost."));
      if (i >= events.length) return controller.close();
      controller.enqueue(encoder.encode(events[i++]!));
    },
  });
  return new Response(body, {
    headers: { "content-type": "text/event-stream; charset=utf-8", "request-id": "req_stream" },
  });
}

export interface ProxyInit {
  key?: string | null;
  session?: string | null;
  config?: object;
  headers?: Record<string, string>;
  query?: string;
}

export function proxyRequest(path: string, body: unknown, init: ProxyInit = {}): Request {
  const headers: Record<string, string> = { "content-type": "application/json", ...init.headers };
  const key = init.key === undefined ? KEYS.acme : init.key;
  if (key !== null) headers["x-offload-key"] = key;
  if (init.session !== null) headers["x-offload-session"] = init.session ?? "proxy-default";
  if (init.config !== undefined) headers["x-offload-config"] = JSON.stringify(init.config);
  return new Request(`${BASE}${path}${init.query ?? ""}`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export function proxy(path: string, body: unknown, init: ProxyInit = {}): Promise<Response> {
  return SELF.fetch(proxyRequest(path, body, init));
}

/** Parse an event stream the proxy sent: events, and its trailing edge-offload comment. */
export async function readEvents(res: Response): Promise<{
  events: { event: string | null; data: string }[];
  comment: Record<string, unknown> | null;
  text: string;
}> {
  const text = await res.text();
  const events: { event: string | null; data: string }[] = [];
  let comment: Record<string, unknown> | null = null;
  for (const block of text.split("\n\n")) {
    if (block.trim() === "") continue;
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(": edge-offload "))
        comment = JSON.parse(line.slice(": edge-offload ".length)) as Record<string, unknown>;
      else if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    if (event !== null || data.length > 0) events.push({ event, data: data.join("\n") });
  }
  return { events, comment, text };
}

export function proxySummary(
  res: Response,
): Record<string, unknown> & { proxy?: Record<string, unknown> } {
  const header = res.headers.get("x-offload-summary");
  expect(header).not.toBeNull();
  return JSON.parse(header!) as Record<string, unknown> & { proxy?: Record<string, unknown> };
}

/**
 * Worker entry. The HTTP service (routes, auth, storage adapters) is built on the core in src/core; this file
 * only wires the default fetch handler and exports the Durable Object class named in wrangler.toml.
 */
import { DurableObject } from "cloudflare:workers";

export interface Env {
  SESSIONS: DurableObjectNamespace;
  LEDGER: R2Bucket;
  INDEX: KVNamespace;
  OFFLOAD_DEFAULT_CONFIG?: string;
}

/** Per tenant+session state (filled in by the service). */
export class SessionDO extends DurableObject<Env> {}

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/healthz") return Response.json({ ok: true });
    return Response.json({ error: { type: "not_found", message: `no route for ${request.method} ${url.pathname}` } }, { status: 404 });
  },
} satisfies ExportedHandler<Env>;

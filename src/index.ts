/**
 * Worker entry: the HTTP service (src/app.ts) as the default fetch handler, and the Durable Object
 * class named in wrangler.toml.
 */
import { createApp } from "./app.ts";
import type { Env } from "./env.ts";

export type { Env } from "./env.ts";
export { SessionDO } from "./store/session-do.ts";
export { TenantDO } from "./store/tenant-do.ts";

const app = createApp();

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
} satisfies ExportedHandler<Env>;

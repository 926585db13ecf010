// The bindings the workerd tests see (`env` from cloudflare:test / cloudflare:workers).
import type { Env as ServiceEnv } from "../src/env.ts";

declare global {
  namespace Cloudflare {
    interface Env extends ServiceEnv {}
  }
}

// The bindings the workerd tests see (`env` from cloudflare:test / cloudflare:workers).
import type { Env as ServiceEnv } from "../src/env.ts";

declare global {
  namespace Cloudflare {
    interface Env extends ServiceEnv {
      /** The OCR model (gzipped trained data), a test-only binding (vitest.config.ts). */
      TEST_OCR_MODEL: ArrayBuffer;
    }
  }
}

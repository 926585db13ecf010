/**
 * One process of the two-process tests: opens the store its argument names (`openStore`), then runs the
 * commands it reads on stdin, one JSON object a line, answering each with one JSON line on stdout:
 * `{op:"compact", session, request, config}` (the library's compact), `{op:"recall", session, mem_id,
 * json_path?}`, `{op:"extract", file, media_type}` (a fixture file through the store's extraction cache,
 * as a turn or /v1/extract reads it: whether it came from the cache, the outcome, the time), `{op:"close"}`.
 */
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { extractCached } from "../../src/extract/cache.ts";
import { compact, recall } from "../../src/lib.ts";
import { openStore } from "../../src/store/open.ts";

const SECRET = "two-processes-test-secret-0123456789";
const opened = await openStore(process.argv[2]!, { log: () => {} });
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const cmd = JSON.parse(line) as Record<string, any>;
  let out: unknown;
  try {
    if (cmd.op === "compact") {
      const r = await compact({
        request: cmd.request as string,
        session: cmd.session as string,
        store: opened.store,
        config: cmd.config,
        secret: SECRET,
      });
      out = { request: r.request, offloaded: r.report.offloaded, errors: r.report.errors };
    } else if (cmd.op === "recall") {
      const a = await recall({
        store: opened.store,
        session: cmd.session as string,
        mem_id: cmd.mem_id as string,
        ...(cmd.json_path === undefined ? {} : { json_path: cmd.json_path as string }),
      });
      out = { content: a.content, is_error: a.is_error };
    } else if (cmd.op === "extract") {
      const data = readFileSync(new URL(`../fixtures/files/${cmd.file}`, import.meta.url));
      const started = performance.now();
      const r = await extractCached({
        attachment: { data: new Uint8Array(data), media_type: cmd.media_type as string },
        tenant: "two-processes",
        cache: opened.store,
      });
      out = {
        cached: r.cached,
        outcome: r.outcome,
        ms: performance.now() - started,
        cache_error: r.cache_error ?? null,
      };
    } else if (cmd.op === "close") {
      await opened.close();
      out = { closed: true };
    }
  } catch (e) {
    out = { error: e instanceof Error ? e.message : String(e) };
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
  if (cmd.op === "close") break;
}

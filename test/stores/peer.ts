/**
 * One process of the two-process tests: opens the store its argument names (`openStore`), then runs the
 * commands it reads on stdin, one JSON object a line, answering each with one JSON line on stdout:
 * `{op:"compact", session, request, config}` (the library's compact), `{op:"recall", session, mem_id,
 * json_path?}`, `{op:"close"}`.
 */
import { createInterface } from "node:readline";
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

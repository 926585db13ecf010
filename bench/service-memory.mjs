// How much V8 heap one compact call through the HTTP service needs for a request near the 32 MiB limit
// (a Worker isolate has 128 MB). workerd reports no memory figures, so this
// runs the same app in Node with the in-memory session state and a ledger that encodes each body to UTF-8 and
// drops it (as R2's put does), and finds by bisection the smallest --max-old-space-size that completes.
// Run: node bench/service-memory.mjs (Node ≥ 22.18: it imports the TypeScript sources directly). Prints the
// request size, the minimal heap, and their ratio, measured in this run.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const MB = 1024 * 1024;
const self = fileURLToPath(import.meta.url);

function requestBytes(kind, mib) {
  const row =
    kind === "json"
      ? '{"id":123,"name":"item-123","price":184.5},'
      : "2026-11-30T12:00:00Z INFO request handled path=/api/items status=200 ms=12\n";
  let big = row.repeat(Math.ceil((mib * MB) / row.length));
  if (kind === "json") big = `[${big.slice(0, -1)}]`;
  return new TextEncoder().encode(
    JSON.stringify({
      model: "claude-opus-4-5",
      max_tokens: 1024,
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "export", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: big }] },
        { role: "assistant", content: [{ type: "tool_use", id: "t2", name: "status", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t2", content: "ok" }] },
      ],
    }),
  );
}

async function probe(kind, mib) {
  const { createApp } = await import("../src/app.ts");
  const { MemorySessionState } = await import("../src/store/memory-state.ts");
  const { ComposedStore } = await import("../src/store/composed.ts");
  const { MemoryIndex } = await import("../src/store/memory-index.ts");
  const encoder = new TextEncoder();
  const ledger = {
    put: async (_ref, body) => void encoder.encode(body),
    get: async () => null,
    head: async () => null,
    list: async () => [],
    deleteSession: async () => [],
  };
  const app = createApp({
    store: () =>
      new ComposedStore({
        sessions: new MemorySessionState(),
        ledger,
        index: new MemoryIndex(),
        log: () => {},
      }),
  });
  let bytes = requestBytes(kind, mib);
  const size = bytes.length;
  // A stream of 64 KiB chunks, pulled as read, like a Worker's request body.
  let at = 0;
  const body = new ReadableStream({
    pull(c) {
      if (at >= bytes.length) {
        bytes = null;
        return c.close();
      }
      c.enqueue(bytes.slice(at, at + 65536));
      at += 65536;
    },
  });
  const headers = {
    authorization: "Bearer bench-key-0123456789",
    "x-offload-config": JSON.stringify({
      tool_result_compaction_enabled: true,
      tool_result_offload_enabled: true,
    }),
  };
  const env = {
    OFFLOAD_API_KEYS: "bench:bench-key-0123456789",
    OFFLOAD_SECRET: "bench-secret-0123456789abcdef",
  };
  const res = await app.request(
    "/v1/sessions/bench/compact",
    { method: "POST", headers, body, duplex: "half" },
    env,
  );
  await res.text();
  const summary = JSON.parse(res.headers.get("x-offload-summary") ?? "{}");
  process.stdout.write(JSON.stringify({ status: res.status, offloaded: summary.offloaded, size }));
}

function fits(kind, mib, heap) {
  const r = spawnSync(
    process.execPath,
    [`--max-old-space-size=${heap}`, self, "--probe", kind, String(mib)],
    { encoding: "utf8" },
  );
  if (r.status !== 0) return null;
  const out = JSON.parse(r.stdout);
  return out.status === 200 && out.offloaded === 1 ? out : null;
}

if (process.argv[2] === "--probe") {
  await probe(process.argv[3], Number(process.argv[4]));
} else {
  const cases = [
    ["log", 31, "text (log lines)"],
    ["json", 26, "JSON array of small objects"],
    ["json", 13, "JSON array of small objects"],
  ];
  console.log("request  result kind                     min heap   heap/request");
  for (const [kind, mib, label] of cases) {
    let lo = 16;
    let hi = 512;
    let size = 0;
    while (hi - lo > 8) {
      const mid = Math.round((lo + hi) / 2);
      const ok = fits(kind, mib, mid);
      if (ok) {
        hi = mid;
        size = ok.size;
      } else lo = mid;
    }
    if (size === 0) size = fits(kind, mib, hi)?.size ?? 0;
    console.log(
      `${(size / MB).toFixed(1).padStart(5)} MiB  ${label.padEnd(30)}  ≤ ${String(hi).padStart(3)} MiB   ${(hi / (size / MB)).toFixed(1)}×`,
    );
  }
}

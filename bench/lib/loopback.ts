/**
 * The loopback rig of the latency bench and the soak: the real `wrangler dev` (workerd, local DO/R2/KV) on
 * 127.0.0.1 with a fake Anthropic next to it, a keep-alive client, percentiles, and the isolate's heap read
 * through the inspector port (Chrome DevTools protocol, as `wrangler dev` exposes it).
 */
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { type DevServer, freePort, startDevServer } from "../../test/smoke/dev-server.ts";
import { type LocalServer, listenLocal, writeEvents } from "../../test/support/local-server.ts";
import { anthropicEvents, anthropicMessage } from "../../test/support/providers.ts";

export const KEY = "loopback-bench-key-0001";
export const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

export interface Rig {
  base: string;
  provider: string;
  worker: DevServer;
  stop(): Promise<void>;
  /** The Worker isolate's used JS heap (bytes) after a full collection, or null if unreadable. */
  heap(): Promise<number | null>;
}

/**
 * A fake Anthropic: a streamed answer (or JSON when not asked to stream); `answer` may pick a tool
 * call (a recall) from what it received.
 */
export function fakeAnthropic(
  answer: (body: Record<string, unknown>) => Record<string, unknown> = () =>
    anthropicMessage("msg_fake", [{ text: "Done." }], { input: 100, output: 3 }),
): Promise<LocalServer> {
  return listenLocal((req, res) => {
    const message = answer(req.json);
    if (req.json.stream === true) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      void writeEvents(res, anthropicEvents(message));
    } else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(message));
  });
}

export async function startRig(
  vars: Record<string, string> = {},
  answer?: Parameters<typeof fakeAnthropic>[0],
): Promise<Rig> {
  const provider = await fakeAnthropic(answer);
  const inspector = await freePort();
  const worker = await startDevServer(
    {
      OFFLOAD_API_KEYS: `bench:${KEY}`,
      OFFLOAD_SECRET: "loopback-bench-secret-0123456789",
      ANTHROPIC_BASE_URL: provider.url,
      ...vars,
    },
    120_000,
    undefined,
    inspector,
    // The local objects' storage in memory where the machine has a RAM disk: in `wrangler dev` every object
    // runs in the one workerd process, so a write's flush to this shared machine's disk would stall the
    // Worker's own answers, which a Durable Object's write in production (replicated elsewhere) does not.
    process.env.BENCH_STATE_ROOT ?? (existsSync("/dev/shm") ? "/dev/shm" : tmpdir()),
  );
  return {
    base: worker.base,
    provider: provider.url,
    worker,
    heap: () => isolateHeap(inspector),
    stop: async () => {
      await worker.stop();
      await provider.stop();
    },
  };
}

/** Used heap of the Worker's isolate, after a collection, through the inspector (null after 10 s). */
function isolateHeap(port: number): Promise<number | null> {
  return Promise.race([
    readHeap(port),
    new Promise<null>((resolve) => setTimeout(() => resolve(null), 10_000).unref()),
  ]);
}

async function readHeap(port: number): Promise<number | null> {
  let ws: WebSocket | undefined;
  try {
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as {
      webSocketDebuggerUrl?: string;
    }[];
    const url = targets.find((t) => t.webSocketDebuggerUrl !== undefined)?.webSocketDebuggerUrl;
    if (url === undefined) return null;
    const socket = inspectorSocket(url);
    ws = socket;
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = reject;
    });
    const waiting = new Map<number, (result: Record<string, unknown>) => void>();
    socket.onmessage = (e) => {
      const msg = JSON.parse(String(e.data)) as { id?: number; result?: Record<string, unknown> };
      if (msg.id !== undefined) waiting.get(msg.id)?.(msg.result ?? {});
    };
    let id = 0;
    const send = (method: string) =>
      new Promise<Record<string, unknown>>((resolve) => {
        const mine = ++id;
        waiting.set(mine, resolve);
        socket.send(JSON.stringify({ id: mine, method }));
      });
    await send("HeapProfiler.collectGarbage");
    const usage = await send("Runtime.getHeapUsage");
    return typeof usage.usedSize === "number" ? usage.usedSize : null;
  } catch {
    return null;
  } finally {
    ws?.close();
  }
}

/**
 * A socket to `wrangler dev`'s inspector, which only lets the devtools origin in (Node's WebSocket takes
 * headers as a second argument).
 */
export function inspectorSocket(url: string): WebSocket {
  const Socket = WebSocket as unknown as new (
    url: string,
    options: { headers: Record<string, string> },
  ) => WebSocket;
  return new Socket(url, { headers: { origin: "https://devtools.devprod.cloudflare.dev" } });
}

export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function ms(x: number): string {
  return x < 10 ? x.toFixed(2) : x.toFixed(1);
}

/** Time of one call until its whole body is read (or its first body byte, `firstByte`). */
export async function timed(
  url: string,
  init: RequestInit,
  firstByte = false,
): Promise<{ ms: number; status: number; text: string; headers: Headers }> {
  const t0 = performance.now();
  const res = await fetch(url, init);
  if (firstByte && res.body !== null) {
    const reader = res.body.getReader();
    await reader.read();
    const at = performance.now() - t0;
    let rest = "";
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
    }
    return { ms: at, status: res.status, text: rest, headers: res.headers };
  }
  const text = await res.text();
  return { ms: performance.now() - t0, status: res.status, text, headers: res.headers };
}

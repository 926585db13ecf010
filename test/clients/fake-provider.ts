/**
 * A fake Anthropic + OpenAI on 127.0.0.1 for the real-client tests: it records every request it receives
 * (path, headers, body) and answers from a script, in order: JSON, an event stream (sent event by event),
 * an error with headers, or a dropped connection (before answering, or half way through a stream).
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: Record<string, unknown>;
}

export type Scripted =
  | { status?: number; headers?: Record<string, string>; json: unknown }
  | {
      status?: number;
      headers?: Record<string, string>;
      events: readonly string[];
      dropAfter?: number;
    }
  | { drop: true };

export type Script = Scripted | ((r: Received) => Scripted);

export class FakeProvider {
  readonly received: Received[] = [];
  url = "";
  #queue: Script[] = [];
  #server: Server | undefined;
  #sockets = new Set<Socket>();

  /** Queue the answers to the next requests. */
  reply(...scripts: Script[]): void {
    this.#queue.push(...scripts);
  }

  /** Requests received since `from`. */
  since(from: number): Received[] {
    return this.received.slice(from);
  }

  pending(): number {
    return this.#queue.length;
  }

  async start(): Promise<string> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(body) as Record<string, unknown>;
        } catch {
          // a test reads `body`
        }
        const received: Received = {
          method: req.method ?? "",
          path: req.url ?? "",
          headers: req.headers,
          body,
          json,
        };
        this.received.push(received);
        const next = this.#queue.shift();
        if (next === undefined) {
          res.writeHead(599, { "content-type": "application/json" }).end(
            JSON.stringify({
              error: { message: `fake provider: no scripted answer for ${received.path}` },
            }),
          );
          return;
        }
        const s = typeof next === "function" ? next(received) : next;
        if ("drop" in s) {
          req.socket.destroy();
          return;
        }
        if ("json" in s) {
          res
            .writeHead(s.status ?? 200, {
              "content-type": "application/json",
              "request-id": `req_fake_${this.received.length}`,
              ...s.headers,
            })
            .end(JSON.stringify(s.json));
          return;
        }
        res.writeHead(s.status ?? 200, {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
          "request-id": `req_fake_${this.received.length}`,
          ...s.headers,
        });
        void (async () => {
          for (const [i, ev] of s.events.entries()) {
            if (s.dropAfter !== undefined && i === s.dropAfter) {
              res.socket?.destroy();
              return;
            }
            res.write(ev);
            // Let each event travel on its own, as a provider's stream does.
            await new Promise((r) => setImmediate(r));
          }
          res.end();
        })();
      });
    });
    this.#server.on("connection", (socket) => {
      this.#sockets.add(socket);
      socket.on("close", () => this.#sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) =>
      this.#server === undefined ? resolve() : this.#server.close(() => resolve()),
    );
  }
}

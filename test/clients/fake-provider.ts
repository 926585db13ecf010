/**
 * A fake Anthropic + OpenAI on 127.0.0.1 for the real-client tests: it records every request it receives
 * (path, headers, body) and answers from a script, in order: JSON, an event stream (sent event by event),
 * an error with headers, or a dropped connection (before answering, or half way through a stream).
 */
import {
  type Incoming,
  type LocalServer,
  listenLocal,
  writeEvents,
} from "../support/local-server.ts";

export type Received = Incoming;

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
  #server: LocalServer | undefined;

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
    this.#server = await listenLocal((received, res) => {
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
        res.socket?.destroy();
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
      void writeEvents(res, s.events, s.dropAfter);
    });
    this.url = this.#server.url;
    return this.url;
  }

  async stop(): Promise<void> {
    await this.#server?.stop();
  }
}

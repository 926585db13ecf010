/**
 * The HTTP plumbing of the fake providers on 127.0.0.1: read each request whole, hand it to the fake, and on
 * stop close every open connection (a streaming client may keep one alive).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface Incoming {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON, or {} when it is not JSON (GET requests and the like). */
  json: Record<string, any>;
}

export interface LocalServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  stop(): Promise<void>;
}

export async function listenLocal(
  handle: (req: Incoming, res: ServerResponse) => void,
): Promise<LocalServer> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let json: Record<string, any> = {};
      try {
        json = JSON.parse(body) as Record<string, any>;
      } catch {
        // not JSON: the fake reads `body`
      }
      handle(
        { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, json },
        res,
      );
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Writes an event stream event by event, as a provider sends it; with `dropAfter`, the connection is cut
 * before that event.
 */
export async function writeEvents(
  res: ServerResponse,
  events: readonly string[],
  dropAfter?: number,
): Promise<void> {
  for (const [i, ev] of events.entries()) {
    if (dropAfter !== undefined && i === dropAfter) {
      res.socket?.destroy();
      return;
    }
    res.write(ev);
    // Let each event travel on its own, as a provider's stream does.
    await new Promise((r) => setImmediate(r));
  }
  res.end();
}

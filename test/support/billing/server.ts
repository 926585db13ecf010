/**
 * Serves a fetch-style handler on 127.0.0.1 with node:http: the request is read whole, the answer's body is
 * written chunk by chunk as the handler's stream yields it (an event stream reaches the client event by
 * event, as a provider's does).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface Served {
  url: string;
  close(): Promise<void>;
}

export async function serve(handler: (req: Request) => Promise<Response>): Promise<Served> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(req.headers))
          if (typeof v === "string") headers.set(k, v);
          else if (Array.isArray(v)) for (const x of v) headers.append(k, x);
        const hasBody = req.method !== "GET" && req.method !== "HEAD";
        const answer = await handler(
          new Request(`http://127.0.0.1${req.url ?? "/"}`, {
            method: req.method ?? "GET",
            headers,
            ...(hasBody ? { body: Buffer.concat(chunks) } : {}),
          }),
        );
        res.writeHead(answer.status, Object.fromEntries(answer.headers));
        if (answer.body === null) return void res.end();
        const reader = answer.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          res.write(value);
          // Let each chunk travel on its own, as a provider's stream does.
          await new Promise((r) => setImmediate(r));
        }
        res.end();
      })().catch(() => res.destroy());
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

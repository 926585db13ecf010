/**
 * A throwaway Worker for the strict smoke test (test/unit/extract-wrangler-dev.test.ts): `wrangler dev` runs it
 * in workerd with production rules (no eval, no new Function, no wasm compiled from bytes), unlike vitest's pool.
 *   POST /extract?max_pages=N   raw file as body, Content-Type and x-filename as declared → the result or 422
 *   GET  /codegen               whether this isolate forbids code generation (so the test cannot pass vacuously)
 */
import { extractText, isAttachmentError } from "../../../src/extract/entry.ts";

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/codegen") {
      let evalAllowed = true;
      let functionAllowed = true;
      try {
        // biome-ignore lint/security/noGlobalEval: the point: production rules must refuse it
        (0, eval)("1");
      } catch {
        evalAllowed = false;
      }
      try {
        new Function("return 1")();
      } catch {
        functionAllowed = false;
      }
      return Response.json({ eval: evalAllowed, function: functionAllowed });
    }
    if (url.pathname === "/extract" && request.method === "POST") {
      const data = new Uint8Array(await request.arrayBuffer());
      const maxPages = url.searchParams.get("max_pages");
      try {
        const result = await extractText(
          {
            data,
            media_type: request.headers.get("content-type") ?? undefined,
            filename: request.headers.get("x-filename") ?? undefined,
          },
          maxPages === null ? {} : { max_pages: Number(maxPages) },
        );
        return Response.json({ ok: true, ...result });
      } catch (error) {
        if (isAttachmentError(error))
          return Response.json(error.toJSON(), { status: error.status });
        return Response.json(
          { ok: false, error: { type: "internal", message: String(error) } },
          { status: 500 },
        );
      }
    }
    return new Response("not found", { status: 404 });
  },
};

// The attachment policy through the service (SELF.fetch, real DO/R2/KV): the summary header, stickiness across
// histories, long texts in R2, the extraction cache shared with POST /v1/extract, the session view, deletion.
import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type AppDeps, createApp, defaultStore } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import type { Extractor } from "../../src/extract/cache.ts";
import { extractText } from "../../src/extract/extract.ts";
import { SessionResponseSchema } from "../../src/routes/schemas/session.ts";
import { fixture } from "../fixtures/build.ts";
import { png } from "../fixtures/image-writer.ts";
import { textPdf } from "../fixtures/pdf-writer.ts";
import { BASE, call, compactPath, KEYS, request, sid, summary } from "./helpers.ts";

type Block = Record<string, unknown>;
type Msg = { role: "user" | "assistant"; content: string | Block[] };
type Req = { model: string; max_tokens: number; messages: Msg[] };

const b64 = (bytes: Uint8Array) => {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
};
const EXTRACT = { tool_result_compaction_enabled: true, attachment_policy: "extract" };

let unique = 0;
/** A PDF of `pages` pages no other test sends (its text is long enough to be ledgered in R2 when pages ≥ 6). */
function pdf(pages: number): Uint8Array {
  unique++;
  const stamp = `${Date.now().toString(36)}-${unique}-${Math.random().toString(36).slice(2)}`;
  return textPdf(
    Array.from({ length: pages }, (_, p) =>
      Array.from(
        { length: 20 },
        (_, l) => `${stamp} page ${p + 1} line ${l + 1}: revenue, costs and margins.`,
      ),
    ),
  );
}

function conversation(doc: Uint8Array, turns = 0, image = false): Req {
  const messages: Msg[] = [
    {
      role: "user",
      content: [
        { type: "text", text: "What does the report say?" },
        {
          type: "document",
          source: { type: "base64", media_type: "application/pdf", data: b64(doc) },
          title: "report.pdf",
        },
        ...(image
          ? [
              {
                type: "image",
                source: { type: "base64", media_type: "image/png", data: b64(png(1280, 800)) },
              },
            ]
          : []),
      ],
    },
  ];
  return appendTurns({ model: "claude-sonnet-4-5", max_tokens: 256, messages }, 0, turns);
}

function appendTurns(req: Req, from: number, n: number): Req {
  const messages = [...req.messages];
  for (let k = from; k < from + n; k++)
    messages.push(
      { role: "assistant", content: [{ type: "text", text: `answer ${k}` }] },
      { role: "user", content: `question ${k}` },
    );
  return { ...req, messages };
}

const compactCall = (session: string, body: Req | string, config: object = EXTRACT) =>
  call(compactPath(session), {
    body: typeof body === "string" ? body : JSON.stringify(body),
    config,
  });

describe("attachment policy through POST …/compact", () => {
  it("replaces a PDF, reports the effect in x-offload-summary, and stays byte-identical across histories", async () => {
    const session = sid("att");
    const doc = pdf(3);
    const t0 = await compactCall(session, conversation(doc, 0, true));
    expect(t0.status).toBe(200);
    const s0 = summary(t0);
    expect(s0.attachments).toMatchObject({
      policy: "extract",
      blocks: 2,
      replaced: 1,
      native: 1,
      failed: 0,
      extracted: 1,
    });
    expect(s0.attachments!.saved_tokens).toBeGreaterThan(3 * 1600 - 100); // 3 page images, less the header line
    expect(s0.saved_usd).toBeGreaterThan(0);
    const out0 = await t0.text();
    const req0 = JSON.parse(out0) as Req;
    expect((req0.messages[0]!.content as Block[])[1]!.text).toMatch(
      /^\[attachment att_[0-9a-f]{24} document "report\.pdf": pdf, 3 pages/,
    );

    const t1full = await compactCall(session, conversation(doc, 1, true));
    const t1compacted = await compactCall(session, appendTurns(req0, 0, 1));
    const [full, compacted] = [await t1full.text(), await t1compacted.text()];
    expect(compacted).toBe(full);
    expect(summary(t1full).attachments).toMatchObject({ replaced: 2, extracted: 0 }); // the image is no longer hot
    expect((JSON.parse(full) as Req).messages[0]!.content).toHaveLength(3);

    // Idempotent through the route too.
    const again = await compactCall(session, full);
    expect(await again.text()).toBe(full);
    expect(summary(again)).toMatchObject({ changed: false });

    const view = SessionResponseSchema.parse(await (await call(`/v1/sessions/${session}`)).json());
    expect(view.tool_results).toEqual([]);
    expect(view.attachments.map((a) => [a.kind, a.action, a.arrived])).toEqual([
      ["document", "replaced", 0],
      ["image", "replaced", 0],
    ]);
  });

  it("keeps a long text in R2 (not in the Durable Object), replays it from there, and deletes it with the session", async () => {
    const session = sid("att-long");
    const doc = pdf(8);
    const t0 = await compactCall(session, conversation(doc));
    const replaced = ((JSON.parse(await t0.text()) as Req).messages[0]!.content as Block[])[1]!
      .text as string;
    expect(replaced.length).toBeGreaterThan(4000);
    const listed = await env.LEDGER.list({ prefix: `bodies/acme/${session}/` });
    expect(listed.objects).toHaveLength(1);
    const t1 = await compactCall(session, conversation(doc, 1));
    expect(((JSON.parse(await t1.text()) as Req).messages[0]!.content as Block[])[1]!.text).toBe(
      replaced,
    );
    expect((await call(`/v1/sessions/${session}`, { method: "DELETE" })).status).toBe(204);
    expect((await env.LEDGER.list({ prefix: `bodies/acme/${session}/` })).objects).toHaveLength(0);
  });

  it("shares the tenant's extraction cache with POST /v1/extract (same limits: the transform's defaults)", async () => {
    const doc = pdf(2);
    const res = await SELF.fetch(
      new Request(`${BASE}/v1/extract?max_pages=100&max_chars=400000`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEYS.acme}`, "content-type": "application/pdf" },
        body: doc,
      }),
    );
    expect(res.headers.get("x-extract-cache")).toBe("miss");
    const t0 = await compactCall(sid("att-shared"), conversation(doc));
    expect(summary(t0).attachments).toMatchObject({ replaced: 1, extracted: 0 });
    // Another tenant has its own cache.
    const other = await SELF.fetch(
      request(compactPath(sid("att-other")), {
        body: conversation(doc),
        config: EXTRACT,
        key: KEYS.globex,
      }),
    );
    expect(summary(other).attachments).toMatchObject({ replaced: 1, extracted: 1 });
  });

  it("runs the extractor once per file and tenant: not again next turn, not again in another session", async () => {
    const calls: string[] = [];
    const spy: Extractor = async (a, o) => {
      calls.push("pdf");
      return extractText(a, o);
    };
    const app = createApp({ extract: spy, log: () => {} });
    const send = (session: string, body: Req) =>
      Promise.resolve(
        app.fetch(
          request(compactPath(session), { body, config: EXTRACT }),
          env,
          createExecutionContext(),
        ),
      );
    const doc = pdf(2);
    const session = sid("att-once");
    await send(session, conversation(doc));
    const t1 = await send(session, conversation(doc, 1));
    const t0b = await send(sid("att-once-b"), conversation(doc));
    expect(calls).toEqual(["pdf"]);
    expect(summary(t1).attachments).toMatchObject({ replaced: 1, extracted: 0 });
    expect(summary(t0b).attachments).toMatchObject({ replaced: 1, extracted: 0 });
  });

  it("a failed extraction leaves the block native and says why in the summary", async () => {
    const session = sid("att-fail");
    const req = conversation(fixture("encrypted.pdf").build());
    const res = await compactCall(session, req);
    expect(await res.text()).toBe(JSON.stringify(req));
    expect(summary(res).attachments).toMatchObject({
      failed: 1,
      replaced: 0,
      failures: [
        { path: "messages[0].content[1]", code: "extraction_failed", reason: "encrypted" },
      ],
    });
  });

  it("an R2 failure writing a long text leaves the document native this turn (storage_error), and the next turn replaces it", async () => {
    const session = sid("att-r2");
    const doc = pdf(8);
    const broken: AppDeps["store"] = (e, settings, log) => {
      const bucket = new Proxy(e.LEDGER, {
        get(target, prop) {
          if (prop === "put")
            return async (key: string, ...rest: unknown[]) =>
              key.startsWith("bodies/")
                ? Promise.reject(new Error("injected put failure"))
                : target.put(key, ...(rest as [never]));
          const value = Reflect.get(target, prop) as unknown;
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      return defaultStore({ ...e, LEDGER: bucket } as Env, settings, log);
    };
    const app = createApp({ store: broken, log: () => {} });
    const req = conversation(doc);
    const res = await app.fetch(
      request(compactPath(session), { body: req, config: EXTRACT }),
      env,
      createExecutionContext(),
    );
    expect(await res.text()).toBe(JSON.stringify(req));
    const s = summary(res);
    expect(s.errors[0]).toMatchObject({
      code: "storage_error",
      tool_use_id: expect.stringMatching(/^att_/),
    });
    expect(s.attachments).toMatchObject({ replaced: 0 });
    const healthy = await compactCall(session, req);
    expect(summary(healthy).attachments).toMatchObject({ replaced: 1 });
  });

  it("with attachment_policy native (the default), the same bytes come back and the summary has no attachments", async () => {
    const req = JSON.stringify(conversation(pdf(1), 1));
    const res = await compactCall(sid("att-native"), req, { tool_result_compaction_enabled: true });
    expect(await res.text()).toBe(req);
    expect(summary(res).attachments).toBeNull();
  });
});

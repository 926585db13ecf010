// The attachment policy's OCR path in workerd, through the service (SELF.fetch; the engine's wasm imported
// as a compiled module, as wrangler bundles it; the trained data in the local LEDGER bucket, as `npm run
// ocr:setup` puts it): an image stays native while hot, is read by OCR when it leaves its hot turns, and the
// summary says for every other image why it was not read. Through the compact route and the proxy alike.
import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { fixture, OCR_TEXT } from "../fixtures/build.ts";
import { pngFile } from "../fixtures/image-writer.ts";
import { pagePng, sparsePage, zlibZeros } from "../fixtures/ocr-hostile.ts";
import { anthropicMessage } from "../support/providers.ts";
import { call, compactPath, KEYS, sid, summary } from "./helpers.ts";
import { jsonReply, mockProvider, proxy, proxySummary } from "./proxy-mock.ts";

const OCR = {
  tool_result_compaction_enabled: true,
  attachment_policy: "extract",
  attachment_ocr: true,
};

const b64 = (bytes: Uint8Array) => {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
};

type Req = { model: string; max_tokens: number; messages: Record<string, unknown>[] };

/** The image in the first user message; `answered`: one exchange later (the image is no longer hot). */
function conversation(image: Uint8Array, answered: boolean): Req {
  const messages: Record<string, unknown>[] = [
    {
      role: "user",
      content: [
        { type: "image", source: { type: "base64", media_type: "image/png", data: b64(image) } },
        { type: "text", text: "What is the total?" },
      ],
    },
  ];
  if (answered)
    messages.push(
      { role: "assistant", content: "EUR 1,250.00." },
      { role: "user", content: "Thanks. Who do I contact?" },
    );
  return { model: "claude-sonnet-4-5", max_tokens: 256, messages };
}

const READ_TEXT = OCR_TEXT["ocr-text.png"]!;

beforeEach(async () => {
  await env.LEDGER.put("ocr/eng.traineddata", env.TEST_OCR_MODEL);
});
afterEach(() => vi.restoreAllMocks());

describe("the attachment policy reads an image by OCR once its hot turns pass", () => {
  it("through POST …/compact: native while hot, then its placeholder carries the text; once per file and tenant", async () => {
    const image = fixture("ocr-text.png").build();
    const session = sid("ocr-compact");
    const hot = await call(compactPath(session), { body: conversation(image, false), config: OCR });
    expect(hot.status).toBe(200);
    expect(summary(hot).attachments).toMatchObject({
      blocks: 1,
      native: 1,
      extracted: 0,
      ocr: {
        read: 0,
        not_read: 1,
        notes: [
          {
            path: "messages[0].content[0]",
            outcome: "hot",
            reason: expect.stringMatching(/on turn 1/),
          },
        ],
      },
    });

    const read = await call(compactPath(session), { body: conversation(image, true), config: OCR });
    expect(summary(read).attachments).toMatchObject({
      replaced: 1,
      extracted: 1,
      ocr: { read: 1, not_read: 0, notes: [] },
    });
    const text = await read.text();
    expect(text).toContain("Text read from the image (OCR)");
    for (const line of READ_TEXT.slice(2)) expect(text).toContain(line);

    // The same file in another session of the tenant: read from the extraction cache, not decoded again.
    const again = await call(compactPath(sid("ocr-compact-again")), {
      body: conversation(image, true),
      config: OCR,
    });
    expect(summary(again).attachments).toMatchObject({ extracted: 0, ocr: { read: 1 } });
    expect(await again.text()).toContain(READ_TEXT[3]!);
  });

  it("through the proxy: the provider receives the placeholder with the text on the turn after", async () => {
    const image = fixture("ocr-text.png").build();
    const session = sid("ocr-proxy");
    const reply = jsonReply(
      anthropicMessage("msg_1", [{ text: "Billing." }], { input: 10, output: 2 }),
    );
    const seen = mockProvider(reply, reply);
    const init = { config: OCR, session, key: KEYS.globex };
    const hot = await proxy("/anthropic/v1/messages", conversation(image, false), init);
    expect(hot.status).toBe(200);
    expect(proxySummary(hot).attachments).toMatchObject({
      native: 1,
      ocr: { read: 0, notes: [{ outcome: "hot" }] },
    });
    const read = await proxy("/anthropic/v1/messages", conversation(image, true), init);
    expect(read.status).toBe(200);
    expect(proxySummary(read).attachments).toMatchObject({
      replaced: 1,
      extracted: 1,
      ocr: { read: 1, not_read: 0 },
    });
    const sent = seen[1]!.json as Req;
    const first = (sent.messages[0]!.content as { type: string; text?: string }[])[0]!;
    expect(first.type).toBe("text");
    expect(first.text).toContain("Text read from the image (OCR)");
    expect(first.text).toContain(READ_TEXT[3]!);
  });
});

describe("the summary says why an image was not read", () => {
  it("a tiny image or a deflate bomb behind a tiny header: not worth reading (nothing decoded); an image over 4× the ceiling: too_large", async () => {
    const tiny = pagePng(sparsePage(100, 100), "grey8");
    // A 100×100 header whose data inflates to 32 MB of zeros: never decoded here, and refused by the route.
    const bomb = pngFile({ width: 100, height: 100, depth: 8, colorType: 0 }, zlibZeros(32 << 20));
    // Over four times the ceiling: refused from its header even at half resolution.
    const over = pngFile({ width: 6000, height: 6000, depth: 8, colorType: 0 }, zlibZeros(1000));
    for (const [image, outcome, reason] of [
      [tiny, "skipped", /not worth reading/],
      [bomb, "skipped", /not worth reading/],
      [over, "failed", /too_large: .*6000×6000.*7300000 OCR reads, even at half resolution/],
    ] as const) {
      const res = await call(compactPath(sid("ocr-why")), {
        body: conversation(image, true),
        config: OCR,
      });
      expect(res.status).toBe(200);
      const ocr = summary(res).attachments!.ocr!;
      expect(ocr).toMatchObject({ read: 0, not_read: 1 });
      expect(ocr.notes[0]!.outcome).toBe(outcome);
      expect(ocr.notes[0]!.reason).toMatch(reason);
    }
    const route = await call("/v1/extract?ocr=true", {
      body: bomb,
      headers: { "content-type": "image/png" },
    });
    expect(route.status).toBe(422);
    expect(((await route.json()) as { error: { reason: string } }).error.reason).toBe("corrupt");
  });
});

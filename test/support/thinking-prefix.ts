/**
 * Anthropic's rule for preserved thinking, written from the docs ("Prefix checks on thinking blocks",
 * platform.claude.com), not from the product: a thinking block sent back is valid when `system`, `tools`
 * and the messages before it, cache breakpoints aside, are what was sent when it was produced. A fake model
 * signs each block with `prefixOf` the request it answers; `failedBlocks` lists those a later request broke.
 */
import { createHash } from "node:crypto";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Msg = { role: string; content: Json };
export type ThinkingReq = { system?: Json; tools?: Json; messages: Msg[] };

/** The value without cache breakpoints (clients move theirs every call; the check ignores them). */
function bare(v: Json): Json {
  if (Array.isArray(v)) return v.map(bare);
  if (v !== null && typeof v === "object")
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k]) => k !== "cache_control")
        .map(([k, x]) => [k, bare(x)]),
    );
  return v;
}

/**
 * What a thinking block at messages[i].content[k] is bound to: system, tools, the messages before it and
 * the blocks before it in its own message.
 */
export function blockPrefix(req: ThinkingReq, i: number, k: number): string {
  const prefix = {
    system: req.system ?? null,
    tools: req.tools ?? null,
    messages: req.messages.slice(0, i),
    blocks: (req.messages[i]?.content as Json[] | undefined)?.slice(0, k) ?? [],
  } as Json;
  return createHash("sha256")
    .update(JSON.stringify(bare(prefix)))
    .digest("hex");
}

/** The signature of a thinking block that opens a new message after the request's messages. */
export function prefixOf(req: ThinkingReq, i: number): string {
  return blockPrefix(req, i, 0);
}

/** The thinking blocks of a request sent back whose prefix changed since they were produced. */
export function failedBlocks(req: ThinkingReq): string[] {
  const failed: string[] = [];
  req.messages.forEach((m, i) => {
    if (m.role !== "assistant" || !Array.isArray(m.content)) return;
    (m.content as { type: string; signature?: string }[]).forEach((b, k) => {
      if (b.type === "thinking" && b.signature !== blockPrefix(req, i, k))
        failed.push(`messages[${i}].content[${k}]`);
    });
  });
  return failed;
}

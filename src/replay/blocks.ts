/**
 * A prompt as the cache sees it: a sequence of blocks in prompt order (tools, system, then every message
 * block), each with a key (its content, cache markers left out) and a token estimate. Two prompts share a
 * cached prefix as far as their leading blocks are equal.
 */
import { detectKind, estimateTokens } from "../core/tokens.ts";
import type { Block, Message, Request } from "./types.ts";

export interface PromptBlock {
  key: string;
  tokens: number;
  /** The block carries a cache_control marker (a breakpoint ends here). */
  breakpoint?: boolean;
  /** The marker's TTL, when it names one. */
  ttl?: "5m" | "1h";
}

/** Per-block overhead the API adds (role markers, block framing). */
const BLOCK_OVERHEAD = 4;

/** The TTL a cache_control marker names ("1h"), or undefined for the default 5 minutes. */
function ttlOf(marker: unknown): "1h" | undefined {
  return typeof marker === "object" && marker !== null && (marker as { ttl?: unknown }).ttl === "1h"
    ? "1h"
    : undefined;
}

function withoutCacheControl(block: Block): Block {
  if (!("cache_control" in block)) return block;
  const { cache_control: _, ...rest } = block;
  return rest as Block;
}

export function textOfResult(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter(
      (b): b is { type: "text"; text: string } =>
        typeof b === "object" &&
        b !== null &&
        (b as Block).type === "text" &&
        typeof (b as Block).text === "string",
    )
    .map((b) => b.text)
    .join("\n");
}

function tokensOfBlock(block: Block): number {
  switch (block.type) {
    case "text":
      return (
        estimateTokens(String(block.text ?? "").length, detectKind(String(block.text ?? ""))) +
        BLOCK_OVERHEAD
      );
    case "tool_result": {
      const text = textOfResult(block.content);
      return estimateTokens(text.length, detectKind(text)) + BLOCK_OVERHEAD + 6;
    }
    case "tool_use":
      return (
        estimateTokens(JSON.stringify(block.input ?? {}).length, "json") +
        String(block.name ?? "").length +
        BLOCK_OVERHEAD +
        6
      );
    default:
      return estimateTokens(JSON.stringify(block).length, "json") + BLOCK_OVERHEAD;
  }
}

export class BlockCache {
  // Token estimates by key: the same block recurs on every later call of a session.
  readonly #tokens = new Map<string, number>();

  #block(key: string, estimate: () => number): PromptBlock {
    let tokens = this.#tokens.get(key);
    if (tokens === undefined) {
      tokens = estimate();
      this.#tokens.set(key, tokens);
    }
    return { key, tokens };
  }

  /** The prompt's blocks; breakpoints flagged where the request carries cache_control (top level: the last block). */
  blocksOf(request: Request): PromptBlock[] {
    const out = this.#blocks(request);
    if (request.cache_control !== undefined && request.cache_control !== null && out.length > 0)
      out[out.length - 1] = { ...out[out.length - 1]!, breakpoint: true };
    return out;
  }

  #blocks(request: Request): PromptBlock[] {
    const out: PromptBlock[] = [];
    const mark = (b: PromptBlock, marked: boolean, ttl?: "1h"): PromptBlock =>
      marked ? { ...b, breakpoint: true, ...(ttl === undefined ? {} : { ttl }) } : b;
    if (request.tools !== undefined && request.tools.length > 0) {
      const key = `tools:${JSON.stringify(request.tools.map((t) => withoutCacheControl(t as Block)))}`;
      out.push(
        mark(
          this.#block(key, () => estimateTokens(key.length, "json")),
          request.tools.some((t) => typeof t === "object" && t !== null && "cache_control" in t),
        ),
      );
    }
    if (request.system !== undefined) {
      const key = `system:${typeof request.system === "string" ? request.system : JSON.stringify((request.system as Block[]).map(withoutCacheControl))}`;
      const marked =
        Array.isArray(request.system) &&
        (request.system as Block[]).some((b) => "cache_control" in b);
      out.push(
        mark(
          this.#block(key, () => estimateTokens(key.length, detectKind(key))),
          marked,
        ),
      );
    }
    request.messages.forEach((m: Message) => {
      if (typeof m.content === "string") {
        const key = `${m.role}:${m.content}`;
        out.push(
          this.#block(
            key,
            () =>
              estimateTokens(String(m.content).length, detectKind(m.content as string)) +
              BLOCK_OVERHEAD,
          ),
        );
      } else {
        for (const b of m.content) {
          const clean = withoutCacheControl(b);
          const key = `${m.role}:${JSON.stringify(clean)}`;
          out.push(
            mark(
              this.#block(key, () => tokensOfBlock(clean)),
              clean !== b,
              ttlOf(b.cache_control),
            ),
          );
        }
      }
    });
    return out;
  }

  tokensOf(message: Message | undefined): number {
    if (message === undefined) return 0;
    if (typeof message.content === "string")
      return estimateTokens(message.content.length, detectKind(message.content));
    return message.content.reduce((n, b) => n + tokensOfBlock(b), 0);
  }
}

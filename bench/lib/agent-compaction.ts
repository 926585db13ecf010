/**
 * The coding agents' own compaction, as the agents bench models it to the end of a session. Every value is
 * a parameter; the defaults are what the pinned versions do (test/agents/agents.ts: Claude Code 2.1.332,
 * Codex CLI 0.171.0), read from their own bundles and from their sources:
 *
 * Claude Code (its bundle's strings; the same constants and flow as the 2.1 source described in
 * github.com/dust-tt/dust x/spolu/compaction/claude_compaction.md, and anthropics/claude-code#31806):
 * - When: after a turn whose usage (input + cache read + cache write + output) reaches the effective window
 *   less 13,000 (`$Ue=13000`), the effective window being the model's window less min(max output, 20,000)
 *   (`kfo=20000`, the room kept for the summary). Claude Code's model table gives claude-opus-5-5 and
 *   claude-sonnet-5-5 a native 1M window (`context:{window:1e6,native_1m:!0}`), so it compacts at 967,000;
 *   `CLAUDE_CODE_AUTO_COMPACT_WINDOW=200000` (a setting users choose) makes it 167,000.
 * - The call: the history as it stands plus a user message with the summary prompt (its full-compact
 *   prompt: ~6,500 chars with the no-tools preamble and trailer), sent as a fork that shares the
 *   conversation's cache. Output: an <analysis> scratchpad and a <summary>, up to the 20,000 reserved
 *   (its source gives p99.99 = 17,387); the scratchpad is stripped from what is kept.
 * - After: the summary as one user message ("This session is being continued from a previous
 *   conversation…"), then up to 5 recently read files re-attached (`Jbt=5`), at most 5,000 tokens each
 *   (`Zbt=5000`) and 50,000 in all (`Svs=50000`), and the session's opening messages re-injected (tools
 *   delta, context). No tool result survives as such.
 *
 * Codex CLI (codex-rs/core/src/compact.rs, templates/compact/prompt.md and summary_prefix.md,
 * protocol/src/openai_models.rs; its bundled model catalog):
 * - When: total tokens of the last turn at `auto_compact_token_limit`, which the catalog leaves null for
 *   gpt-6.2-sol and core derives as 90% of `context_window`: 500,000 in Codex's catalog (not the API's
 *   1.05M), so 450,000.
 * - The call: a custom provider is not OpenAI, so inline compaction: the history plus a user message with
 *   the summarisation prompt (450 chars: "You are performing a CONTEXT CHECKPOINT COMPACTION…"). Its
 *   output size is not bounded by Codex; the prompt asks for a concise handoff.
 * - After: the initial context (tools, developer and opening messages), the user messages, most recent
 *   first, up to 20,000 tokens (`COMPACT_USER_MESSAGE_MAX_TOKENS`), then the summary as a user message
 *   after SUMMARY_PREFIX (400 chars). Every tool call and output is dropped.
 */
import { filler } from "../../test/support/agent-traces.ts";
import { countTokens } from "../../test/support/billing/tokenizer.ts";

export type Json = Record<string, unknown>;
export type AgentName = "claude-code" | "codex";

export interface CompactionModel {
  agent: AgentName;
  /** The agent's own idea of the context window. */
  window: number;
  /** The tokens of a turn (prompt and output, as the provider reports them) at which it compacts. */
  threshold: number;
  /** The summary call's prompt (chars of filler in place of the agent's text). */
  prompt_chars: number;
  /** Output tokens of the summary call. */
  summary_out: number;
  /** Of which kept in the history after it. */
  summary_kept: number;
}

/** Claude Code's: `window` is its own for the model (1M for the 5.5 models), `summaryOut` the call's output. */
export function claudeCodeCompaction(
  window = 1_000_000,
  summaryOut = 20_000,
  maxOutput = 128_000,
): CompactionModel {
  return {
    agent: "claude-code",
    window,
    threshold: window - Math.min(maxOutput, 20_000) - 13_000,
    prompt_chars: 6_500,
    summary_out: summaryOut,
    // The <analysis> scratchpad is stripped; the bench assumes it is half the output.
    summary_kept: Math.round(summaryOut / 2),
  };
}

/** Codex CLI's: `window` is its catalog's `context_window` for the model. */
export function codexCompaction(window = 500_000, summaryOut = 4_000): CompactionModel {
  return {
    agent: "codex",
    window,
    threshold: Math.floor((window * 9) / 10),
    prompt_chars: 450,
    summary_out: summaryOut,
    summary_kept: summaryOut,
  };
}

/** Claude Code's summary message opening, and Codex's SUMMARY_PREFIX (its length). */
const CLAUDE_SUMMARY_HEAD =
  "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nSummary:\n";
const CODEX_SUMMARY_PREFIX_CHARS = 400;
/** How the bench's Codex summary starts (in place of SUMMARY_PREFIX), so the next compaction drops it. */
const CODEX_SUMMARY_MARK = "[handoff summary] ";
/** Claude Code's restored files: how many, tokens each, tokens in all; its estimate (chars per token). */
const RESTORE_FILES = 5;
const RESTORE_FILE_TOKENS = 5_000;
const RESTORE_TOKENS = 50_000;
const CLAUDE_CHARS_PER_TOKEN = 4;
/** Codex's user messages kept after a compaction, in its approximate tokens (4 chars each). */
const CODEX_USER_TOKENS = 20_000;

/** Filler text of about `tokens` tokens by the billing fake's tokenizer. */
export function textOfTokens(tokens: number): string {
  if (tokens <= 0) return "";
  const sample = filler(40_000, 400);
  const chars = Math.max(1, Math.round((tokens * sample.length) / countTokens(sample)));
  return filler(chars, Math.max(1, Math.round(chars / 80)));
}

/** The summary call's request: the agent's history as it holds it, and its prompt as a user message. */
export function summaryRequest(
  model: CompactionModel,
  skeleton: Json,
  items: readonly Json[],
): Json {
  const text = filler(model.prompt_chars, Math.max(1, Math.round(model.prompt_chars / 90)));
  if (model.agent === "claude-code")
    return {
      ...skeleton,
      messages: [...items, { role: "user", content: [{ type: "text", text }] }],
    };
  return {
    ...skeleton,
    input: [...items, { type: "message", role: "user", content: [{ type: "input_text", text }] }],
  };
}

/**
 * Where a session's opening ends: before its first assistant turn or tool call. Taken once, on the
 * session's first history: what an agent keeps after a compaction is that opening, never an earlier
 * summary (which the new one replaces).
 */
export function openingEnd(items: readonly Json[]): number {
  const i = items.findIndex(
    (m) => m.role === "assistant" || (typeof m.type === "string" && m.type.endsWith("_call")),
  );
  return i < 0 ? items.length : i;
}

/** The newest distinct files Claude Code read (the Read calls' paths and results), newest first. */
function recentReads(items: readonly Json[]): string[] {
  const calls = new Map<string, string>();
  for (const m of items)
    if (m.role === "assistant" && Array.isArray(m.content))
      for (const b of m.content as Json[])
        if (b.type === "tool_use" && b.name === "Read")
          calls.set(String(b.id), String((b.input as Json)?.file_path ?? b.id));
  const files: string[] = [];
  const seen = new Set<string>();
  for (let i = items.length - 1; i >= 0 && files.length < RESTORE_FILES; i--) {
    const m = items[i]!;
    if (m.role !== "user" || !Array.isArray(m.content)) continue;
    for (const b of m.content as Json[]) {
      const path = b.type === "tool_result" ? calls.get(String(b.tool_use_id)) : undefined;
      if (path === undefined || seen.has(path)) continue;
      seen.add(path);
      files.push(resultText(b));
    }
  }
  return files;
}

function resultText(block: Json): string {
  const c = block.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return (c as Json[]).map((p) => String(p.text ?? "")).join("\n");
  return "";
}

/** The agent's history after its compaction: `opening` is how many first items open the session. */
export function compactedHistory(
  model: CompactionModel,
  items: readonly Json[],
  opening: number,
): Json[] {
  const head = items.slice(0, opening);
  const summary = textOfTokens(model.summary_kept);
  if (model.agent === "claude-code") {
    let budget = RESTORE_TOKENS * CLAUDE_CHARS_PER_TOKEN;
    const files = recentReads(items).map((text) => {
      const kept = text.slice(0, Math.min(budget, RESTORE_FILE_TOKENS * CLAUDE_CHARS_PER_TOKEN));
      budget -= kept.length;
      return { type: "text", text: kept };
    });
    return [
      ...head,
      {
        role: "user",
        content: [
          { type: "text", text: CLAUDE_SUMMARY_HEAD + summary },
          ...files.filter((f) => f.text !== ""),
        ],
      },
    ];
  }
  // Codex's collect_user_messages: the user's messages, an earlier summary left out.
  const later = items
    .slice(opening)
    .filter((m) => m.type === "message" && m.role === "user")
    .map((m) => ((m.content as Json[]) ?? []).map((p) => String(p.text ?? "")).join("\n"))
    .filter((text) => !text.startsWith(CODEX_SUMMARY_MARK));
  let left = CODEX_USER_TOKENS * 4;
  const kept: string[] = [];
  for (const text of later.reverse()) {
    if (left <= 0) break;
    kept.unshift(text.slice(0, left));
    left -= text.length;
  }
  const user = (text: string): Json => ({
    type: "message",
    role: "user",
    content: [{ type: "input_text", text }],
  });
  const prefix = filler(CODEX_SUMMARY_PREFIX_CHARS - CODEX_SUMMARY_MARK.length, 1);
  return [...head, ...kept.map(user), user(`${CODEX_SUMMARY_MARK}${prefix}\n${summary}`)];
}

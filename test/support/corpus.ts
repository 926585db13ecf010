/** Corpus sessions (the shared corpus format) and the per-call prompts an agent would send. */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";

export interface CorpusSession {
  id: string;
  system: string;
  tools?: unknown[];
  messages: { role: "user" | "assistant"; content: unknown }[];
  refs?: { turn: number; quote: string; source_tool_use_id: string; in: string }[];
}

export function readSessions(path: string): CorpusSession[] {
  const raw = readFileSync(path);
  const text = path.endsWith(".gz") ? gunzipSync(raw).toString("utf8") : raw.toString("utf8");
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as CorpusSession);
}

export const SAMPLE = new URL("../fixtures/corpus-sample.jsonl.gz", import.meta.url).pathname;

/** The tools a session's calls need (the swe/api files carry none: declare the names they use). */
export function toolsOf(s: CorpusSession): unknown[] {
  if (s.tools !== undefined) return s.tools;
  const names = new Set<string>();
  for (const m of s.messages) {
    if (Array.isArray(m.content))
      for (const b of m.content as { type: string; name?: string }[])
        if (b.type === "tool_use" && b.name) names.add(b.name);
  }
  return [...names].map((name) => ({
    name,
    description: `the ${name} tool`,
    input_schema: { type: "object" },
  }));
}

/** The request for the model call that produced assistant message `k` (everything before it). */
export interface Prompt {
  model: string;
  max_tokens: number;
  system: string;
  tools: unknown[];
  messages: CorpusSession["messages"];
}

export function promptAt(s: CorpusSession, k: number, model = "claude-sonnet-4-6"): Prompt {
  return {
    model,
    max_tokens: 4096,
    system: s.system,
    tools: toolsOf(s),
    messages: s.messages.slice(0, k),
  };
}

export function assistantIndexes(s: CorpusSession): number[] {
  return s.messages.flatMap((m, i) => (m.role === "assistant" ? [i] : []));
}

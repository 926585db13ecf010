/** Where the shared corpus lives (override with EDGE_OFFLOAD_CORPUS) and how to read it. */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type CorpusSession, readSessions } from "../../test/support/corpus.ts";

export const CORPUS_DIR =
  process.env.EDGE_OFFLOAD_CORPUS ??
  fileURLToPath(new URL("../../../shared/corpus", import.meta.url));

export function corpusFile(name: "swe" | "api" | "large"): string {
  const path = `${CORPUS_DIR}/${name}-sessions.dev.jsonl.gz`;
  if (!existsSync(path))
    throw new Error(
      `corpus file not found: ${path} (set EDGE_OFFLOAD_CORPUS to the corpus directory)`,
    );
  return path;
}

export function corpus(name: "swe" | "api" | "large"): CorpusSession[] {
  return readSessions(corpusFile(name));
}

export type { CorpusSession };

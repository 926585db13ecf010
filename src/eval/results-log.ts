/**
 * The results file: one JSON line per finished provider call (an arm, a judge's verdict), appended
 * as each comes, under a header line naming the run (a digest of the input and of every setting
 * that changes what is sent). A run that stops (a crash, Ctrl-C, the ceiling) is resumed by
 * running it again: what the file holds is not sent again, and its spend counts. A line cut short
 * by a crash is ignored, and the next append starts on a line of its own.
 */
import { OffloadError } from "../errors.ts";
import type { Arm, ArmRecord, JudgeRecord } from "./types.ts";

/** Where the results go: a file for the CLI (results-file.ts), anything for the library. */
export interface EvalLog {
  /** What the log is called in messages (a file's path). */
  name?: string;
  /** The log's text so far, null when there is none yet. */
  read(): Promise<string | null>;
  append(text: string): Promise<void>;
}

/** A log in memory (the default of `evaluate` when none is given: nothing resumes). */
export function memoryLog(): EvalLog & { text: string } {
  const log = {
    text: "",
    read: async () => (log.text === "" ? null : log.text),
    append: async (t: string) => {
      log.text += t;
    },
  };
  return log;
}

export const RESULTS_VERSION = 1;

/** SHA-256 of a text, hex (WebCrypto: every runtime the library runs on has it). */
export async function digest(text: string): Promise<string> {
  const bytes = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export interface LoggedResults {
  arms: Map<string, ArmRecord>;
  judges: Map<string, JudgeRecord>;
  /** Dollars the log's runs spent: its records', and what calls of failed arms were billed. */
  spent: number;
}

/** What calls whose arm failed were billed (a run's last line), so a resumed ceiling counts it. */
export interface UnloggedSpend {
  kind: "unlogged";
  usd: number;
}

export const armKey = (id: string, arm: Arm) => `${id}\u0000${arm}`;
export const judgeKey = (id: string, pair: "AB" | "AA") => `${id}\u0000${pair}`;

/**
 * Opens the log for the run `fingerprint`: what it holds, and an append that writes one record
 * per line (in order, one at a time). A log of another run is refused rather than mixed in.
 */
export async function openLog(
  log: EvalLog,
  fingerprint: string,
): Promise<{
  results: LoggedResults;
  append: (record: ArmRecord | JudgeRecord | UnloggedSpend) => Promise<void>;
}> {
  const text = await log.read();
  const results: LoggedResults = { arms: new Map(), judges: new Map(), spent: 0 };
  let pending: Promise<void> = Promise.resolve();
  let prefix = "";
  if (text === null || text.trim() === "") {
    const header = { kind: "header", version: RESULTS_VERSION, fingerprint };
    pending = log.append(`${JSON.stringify(header)}\n`);
  } else {
    const lines = text.split("\n");
    const header = parseLine(lines[0]!);
    if (header?.kind !== "header" || header.fingerprint !== fingerprint)
      throw new OffloadError(
        "conflict",
        `${log.name ?? "the results log"} holds the results of another eval (other input or settings): give another results file, or delete it to start over`,
        { path: "results" },
      );
    for (const line of lines.slice(1)) {
      const r = parseLine(line);
      if (typeof r?.usd === "number" && Number.isFinite(r.usd)) results.spent += r.usd;
      if (r?.kind === "call" && r.ok === true && typeof r.id === "string")
        results.arms.set(armKey(r.id, r.arm as Arm), r as unknown as ArmRecord);
      else if (r?.kind === "judge" && typeof r.id === "string")
        results.judges.set(judgeKey(r.id, r.pair as "AB" | "AA"), r as unknown as JudgeRecord);
    }
    if (!text.endsWith("\n")) prefix = "\n";
  }
  const append = (record: ArmRecord | JudgeRecord | UnloggedSpend): Promise<void> => {
    const line = `${prefix}${JSON.stringify(record)}\n`;
    prefix = "";
    pending = pending.then(() => log.append(line));
    return pending;
  };
  await pending;
  return { results, append };
}

function parseLine(line: string): Record<string, unknown> | null {
  if (line.trim() === "") return null;
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

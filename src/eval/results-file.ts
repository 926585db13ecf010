/**
 * The results log as a file on disk (Node, Deno, Bun): what the CLI resumes from. Appends go one
 * at a time (results-log.ts), each a whole line.
 */
import { appendFile, readFile } from "node:fs/promises";
import { OffloadError } from "../errors.ts";
import type { EvalLog } from "./results-log.ts";

/** An `EvalLog` kept in the file at `path` (created on the first append). */
export function fileLog(path: string): EvalLog {
  return {
    name: path,
    async read() {
      try {
        return await readFile(path, "utf8");
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
        throw cannot("read", path, e);
      }
    },
    async append(text) {
      try {
        await appendFile(path, text, "utf8");
      } catch (e) {
        throw cannot("write", path, e);
      }
    },
  };
}

function cannot(what: string, path: string, e: unknown): OffloadError {
  const code = (e as NodeJS.ErrnoException).code;
  const why =
    code === "EISDIR"
      ? "it is a directory"
      : code === "EACCES"
        ? "permission denied"
        : e instanceof Error
          ? e.message
          : String(e);
  return new OffloadError("invalid_argument", `cannot ${what} the results file ${path}: ${why}`, {
    path: "results",
  });
}

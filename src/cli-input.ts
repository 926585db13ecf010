/**
 * What the CLI's commands read from the user, and the error for what the user got wrong (one line, exit
 * code 2): the sessions file (JSONL, gzipped or not) and a `--config` JSON patch. The parsers come in as
 * arguments: the commands import the library's modules only once the Node version is known to run them.
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";

/** A problem with what the user asked for: one line, exit code 2. */
export class UsageError extends Error {}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** The sessions of `file`, parsed by `parse`; a file that cannot be read or parsed is a usage error. */
export function readSessionsFile<T>(file: string, parse: (text: string, name: string) => T): T {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT"
        ? "no such file"
        : code === "EISDIR"
          ? "it is a directory"
          : code === "EACCES"
            ? "permission denied"
            : message(e);
    throw new UsageError(`cannot read ${file}: ${why}`);
  }
  let text: string;
  try {
    text = (file.endsWith(".gz") ? gunzipSync(raw) : raw).toString("utf8");
  } catch (e) {
    throw new UsageError(`${file} is not a readable gzip file: ${message(e)}`);
  }
  try {
    return parse(text, file);
  } catch (e) {
    throw new UsageError(message(e));
  }
}

/** A `--config` patch, checked by `check` so a typo is a usage error, not a failure half way through. */
export function configFromText(
  text: string,
  check: (value: unknown) => unknown,
): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new UsageError(
      `--config is not JSON (${message(e)}); e.g. --config '{"tool_result_medium_tier":"cache_anchor"}'`,
    );
  }
  try {
    check(value);
  } catch (e) {
    throw new UsageError(message(e));
  }
  return value as Record<string, unknown>;
}

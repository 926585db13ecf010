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

/**
 * The sessions of `file`, parsed by `parse`; a file that cannot be read or parsed, or that holds no session,
 * is a usage error naming it. Gzip is told by its magic bytes, whatever the file is called.
 */
export function readSessionsFile<T>(
  file: string,
  parse: (text: string, name: string) => readonly T[],
): readonly T[] {
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
  const gzipped = raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b;
  try {
    text = (gzipped ? gunzipSync(raw) : raw).toString("utf8");
  } catch (e) {
    throw new UsageError(`${file} is not a readable gzip file: ${message(e)}`);
  }
  let sessions: readonly T[];
  try {
    sessions = parse(text, file);
  } catch (e) {
    const why = message(e);
    throw new UsageError(why.includes(file) ? why : `${file}: ${why}`);
  }
  if (sessions.length === 0)
    throw new UsageError(
      `${file}: no sessions (${text.trim() === "" ? "the file is empty" : "no line holds one"}); one {id, system, tools?, messages} per line, or one Anthropic request per line`,
    );
  return sessions;
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

/**
 * The one typed error path. Every failure the service or library reports is an OffloadError with a
 * stable `type`, an HTTP status, a message written for the caller, and where it helps, the path of
 * the problem in the caller's input. Nothing else (no stack, no internals) reaches a client.
 */
export type OffloadErrorType =
  | "invalid_json"
  | "invalid_request"
  | "invalid_config"
  | "invalid_argument"
  | "unauthorized"
  | "not_found"
  | "conflict"
  | "payload_too_large"
  | "unprocessable"
  | "storage_error"
  | "upstream_error"
  | "unsupported_attachment"
  | "extraction_dependency_missing"
  | "extraction_failed"
  | "internal";

const STATUS: Record<OffloadErrorType, number> = {
  invalid_json: 400,
  invalid_request: 400,
  invalid_config: 400,
  invalid_argument: 400,
  unauthorized: 401,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unprocessable: 422,
  storage_error: 503,
  upstream_error: 502,
  // Attachment errors are answers, not faults: the caller sends the file natively instead
  // (src/extract/errors.ts).
  unsupported_attachment: 422,
  extraction_dependency_missing: 422,
  extraction_failed: 422,
  internal: 500,
};

/** One problem in the caller's input, as zod reports it: every one is kept, not only the first. */
export interface ErrorIssue {
  /** zod's issue code (invalid_type, too_small, unrecognized_keys…). */
  code: string;
  /**
   * Where it is, formatted by `formatPath` (`messages[3].content[1]`,
   * `x-offload-config.tool_result_x`).
   */
  path: string;
  message: string;
}

/**
 * The wire shape of every error: `issues` only when there are several (the one issue is `message`).
 */
export interface ErrorBody {
  error: {
    type: OffloadErrorType;
    message: string;
    path?: string;
    issues?: ErrorIssue[];
  };
}

/**
 * Every failure the library or the service reports: a stable `type`, its HTTP `status`, a message
 * written for the caller and, where it helps, the `path` of the problem in the caller's input (and
 * every `issues`).
 *
 * @example
 * try {
 *   await compact({ request, session: "s", store });
 * } catch (e) {
 *   if (isOffloadError(e) && e.type === "invalid_request") console.error(e.path, e.message);
 * }
 */
export class OffloadError extends Error {
  readonly type: OffloadErrorType;
  readonly status: number;
  readonly path: string | undefined;
  /** Every problem found in the input (a zod validation's issues), when more than one may be. */
  readonly issues: readonly ErrorIssue[];

  constructor(
    type: OffloadErrorType,
    message: string,
    options: { path?: string; cause?: unknown; issues?: readonly ErrorIssue[] } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "OffloadError";
    this.type = type;
    this.status = STATUS[type];
    this.path = options.path;
    this.issues = options.issues ?? [];
  }

  /** The stable response body: `{"error":{"type","message","path?","issues?"}}`. */
  toJSON(): ErrorBody {
    return {
      error: {
        type: this.type,
        message: this.message,
        ...(this.path === undefined ? {} : { path: this.path }),
        ...(this.issues.length > 1 ? { issues: this.issues.map((i) => ({ ...i })) } : {}),
      },
    };
  }
}

/** True for an OffloadError (of this copy of the library or another: the check is by class). */
export function isOffloadError(value: unknown): value is OffloadError {
  return value instanceof OffloadError;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * How errors and reports name a place in the caller's input: `messages[3].content[0].tool_use_id`,
 * odd keys quoted (`headers["x-key"]`). `root` names where the input came from and prefixes the
 * path (`x-offload-config.tool_result_recall_mode`); the empty path is the root itself, `$` when
 * there is none.
 */
export function formatPath(path: readonly PropertyKey[], root = ""): string {
  let out = root;
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && IDENTIFIER.test(key)) out += out === "" ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out === "" ? "$" : out;
}

/** What zod says about one problem (zod 4's issue, as far as it is read here). */
interface ZodIssueLike {
  readonly code: string;
  readonly path: readonly PropertyKey[];
  readonly message: string;
  readonly keys?: readonly string[];
  readonly expected?: unknown;
}

/** Issues named in an error's message; the rest are counted (all of them are in `issues`). */
const MESSAGE_ISSUES = 8;

/**
 * The one translation of a zod error into an OffloadError: every issue kept as `{code, path,
 * message}`, the message naming each (`path: problem; …`), `path` the first one's. `root` prefixes
 * the paths (where the value came from), `label` the message; with `input`, a missing field reads
 * "required" rather than a type mismatch.
 */
export function zodError(
  type: OffloadErrorType,
  error: { readonly issues: readonly ZodIssueLike[] },
  options: { root?: string; label?: string; input?: unknown } = {},
): OffloadError {
  const root = options.root ?? "";
  const issues: ErrorIssue[] = error.issues.map((issue) => {
    if (issue.code === "unrecognized_keys") {
      const keys = issue.keys ?? [];
      return {
        code: issue.code,
        path: formatPath([...issue.path, ...keys.slice(0, 1)], root),
        message: `unknown field${keys.length === 1 ? "" : "s"} ${keys.map((k) => JSON.stringify(k)).join(", ")}`,
      };
    }
    const missing =
      issue.code === "invalid_type" &&
      "input" in options &&
      issue.path.length > 0 &&
      valueAt(options.input, issue.path) === undefined;
    return {
      code: issue.code,
      path: issue.path.length === 0 && root === "" ? "" : formatPath(issue.path, root),
      message: missing ? `required (${String(issue.expected)})` : issue.message,
    };
  });
  const named = issues
    .slice(0, MESSAGE_ISSUES)
    .map((i) => (i.path === "" ? i.message : `${i.path}: ${i.message}`));
  if (issues.length > MESSAGE_ISSUES) named.push(`and ${issues.length - MESSAGE_ISSUES} more`);
  const text = named.join("; ") || "invalid input";
  const first = issues[0]?.path;
  return new OffloadError(type, options.label === undefined ? text : `${options.label}: ${text}`, {
    ...(first === undefined || first === "" ? {} : { path: first }),
    issues,
  });
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

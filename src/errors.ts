/**
 * The one typed error path. Every failure the service or library reports is an OffloadError with a stable
 * `type`, an HTTP status, a message written for the caller, and where it helps, the path of the problem in
 * the caller's input. Nothing else (no stack, no internals) reaches a client.
 */
export type OffloadErrorType =
  | "invalid_json"
  | "invalid_request"
  | "invalid_config"
  | "invalid_argument"
  | "unauthorized"
  | "not_found"
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
  payload_too_large: 413,
  unprocessable: 422,
  storage_error: 503,
  upstream_error: 502,
  // Attachment errors are answers, not faults: the caller sends the file natively instead (src/extract/errors.ts).
  unsupported_attachment: 422,
  extraction_dependency_missing: 422,
  extraction_failed: 422,
  internal: 500,
};

export class OffloadError extends Error {
  readonly type: OffloadErrorType;
  readonly status: number;
  readonly path: string | undefined;

  constructor(
    type: OffloadErrorType,
    message: string,
    options: { path?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "OffloadError";
    this.type = type;
    this.status = STATUS[type];
    this.path = options.path;
  }

  /** The stable response body: `{"error":{"type","message","path?"}}`. */
  toJSON(): { error: { type: OffloadErrorType; message: string; path?: string } } {
    return {
      error: {
        type: this.type,
        message: this.message,
        ...(this.path === undefined ? {} : { path: this.path }),
      },
    };
  }
}

export function isOffloadError(value: unknown): value is OffloadError {
  return value instanceof OffloadError;
}

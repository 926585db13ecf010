/**
 * The one error response: `{"error":{"type","message","path?"}}` with the OffloadError's status.
 * Anything that is not an OffloadError is a 500 whose body says nothing about internals; operators
 * get the error's name and message in the log (no bodies, keys or stacks go out).
 */
import { HTTPException } from "hono/http-exception";
import type { z } from "zod";
import { isOffloadError, OffloadError, type OffloadErrorType, zodError } from "../errors.ts";

const BY_STATUS: Record<number, OffloadErrorType> = {
  400: "invalid_request",
  401: "unauthorized",
  404: "not_found",
  413: "payload_too_large",
  422: "unprocessable",
};

export function toOffloadError(err: unknown, log: (line: string) => void): OffloadError {
  if (isOffloadError(err)) {
    // Storage errors were logged with their cause where they happened (store/backend-calls.ts).
    if (err.status >= 500 && err.type !== "storage_error")
      log(
        `[edge-offload] ${err.type}: ${err.message}${err.cause instanceof Error ? ` (${err.cause.name}: ${err.cause.message.slice(0, 200)})` : ""}`,
      );
    return err;
  }
  if (err instanceof HTTPException && BY_STATUS[err.status] !== undefined)
    return new OffloadError(BY_STATUS[err.status]!, err.message || "request refused");
  log(
    `[edge-offload] internal error: ${err instanceof Error ? `${err.name}: ${err.message.slice(0, 200)}` : typeof err}`,
  );
  return new OffloadError("internal", "internal error");
}

export function errorResponse(err: OffloadError): Response {
  const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8" };
  if (err.status === 401) headers["www-authenticate"] = 'Bearer realm="edge-offload"';
  if (err.status === 503) headers["retry-after"] = "1";
  return new Response(JSON.stringify(err.toJSON()), { status: err.status, headers });
}

/** Validate with a zod schema; a 400 that names every problem, `path` the first one's. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, where = ""): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw zodError("invalid_request", result.error, { root: where, input: value });
}

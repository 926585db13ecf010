/**
 * The pieces every path of /openapi.json is built from: JSON Schema from zod, references, error
 * answers.
 */
import { z } from "zod";
import { ExtractLimitsSchema } from "../extract/options.ts";

/** A zod schema as JSON Schema 2020-12, for what the API takes (`input`) or gives (`output`). */
export function schema(s: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(s, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
  }) as Record<string, unknown>;
  return rest;
}

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const json = (name: string) => ({ "application/json": { schema: ref(name) } });

export function errors(...statuses: number[]): Record<string, unknown> {
  const why: Record<number, string> = {
    400: "Bad JSON or a wrong shape (the path names where), or a bad config field.",
    401: "No key, or an unknown one.",
    404: "Unknown session, mem_id or route.",
    409: "The turn already has a different usage (the first report stands).",
    413: "Body over the configured limit (OFFLOAD_MAX_BODY_BYTES, default 32 MiB).",
    422: "The file cannot be extracted: send it natively (the error says why).",
    500: "Internal error (no details are given out).",
    503: "A storage backend failed; safe to retry.",
  };
  return Object.fromEntries(
    statuses.map((s) => [String(s), { description: why[s], content: json("Error") }]),
  );
}

/** The extraction limits as query parameters, from the schema the route validates them with. */
export function extractQuery(): Record<string, unknown>[] {
  const limits = Object.entries(ExtractLimitsSchema.shape).map(([name, field]) => ({
    name,
    in: "query",
    required: false,
    description: field.description,
    schema: schema(field, "input"),
  }));
  const onError = {
    name: "on_error",
    in: "query",
    required: false,
    description: "multipart: warn = one result per file; raise = the first failure as 422.",
    schema: { type: "string", enum: ["warn", "raise"], default: "warn" },
  };
  return [...limits, onError];
}

export const sessionId = {
  name: "session_id",
  in: "path",
  required: true,
  schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{1,128}$" },
};
export const configHeader = {
  name: "x-offload-config",
  in: "header",
  required: false,
  description: "A JSON config patch for this request only (fields of ConfigPatch).",
  schema: { type: "string" },
};

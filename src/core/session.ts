/**
 * How callers name a session: a string id (tenant "default") or `{ tenant, session }`, the one shape a
 * session reference has everywhere (compact, recall, the integrations, every store method). An object
 * that names it otherwise (`{ tenant, id }`) is refused, never read as some other session.
 */
import { OffloadError } from "../errors.ts";
import type { SessionRef } from "./types.ts";

export type SessionInput = string | { tenant?: string; session: string };

export const DEFAULT_TENANT = "default";
const ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A tenant or session id as the rule allows it (1-128 chars of letters, digits and . _ : -). */
export function isSessionId(id: string): boolean {
  return ID.test(id);
}

const SHAPE =
  'a session is a string id or { tenant, session } (e.g. { tenant: "acme", session: "chat-42" })';

/** The session a caller names, validated: ids are 1-128 chars of letters, digits and . _ : - */
export function sessionRef(input: SessionInput): SessionRef {
  if (typeof input !== "string") checkShape(input, "session");
  const tenant = typeof input === "string" ? DEFAULT_TENANT : (input.tenant ?? DEFAULT_TENANT);
  const session = typeof input === "string" ? input : input.session;
  if (typeof session !== "string" || !ID.test(session)) {
    throw new OffloadError(
      "invalid_argument",
      "session id must be 1-128 chars of letters, digits and . _ : -",
      { path: "session" },
    );
  }
  if (typeof tenant !== "string" || !ID.test(tenant)) {
    throw new OffloadError(
      "invalid_argument",
      "tenant must be 1-128 chars of letters, digits and . _ : -",
      { path: "tenant" },
    );
  }
  return { tenant, session };
}

/**
 * A store method's `ref` checked for its shape: `{ tenant, session }` with both set. What a store is handed
 * must never be silently another (or no) session: `{ tenant, id }` would delete nothing.
 */
export function checkRef(ref: SessionRef, path = "ref"): void {
  checkShape(ref, path);
  if (typeof ref.tenant !== "string" || typeof ref.session !== "string")
    throw new OffloadError("invalid_argument", `${path}: ${SHAPE}, with both set`, { path });
}

function checkShape(input: unknown, path: string): void {
  if (typeof input !== "object" || input === null || Array.isArray(input))
    throw new OffloadError("invalid_argument", `${path}: ${SHAPE}`, { path });
  if ("id" in input || !("session" in input))
    throw new OffloadError(
      "invalid_argument",
      `${path}: ${SHAPE}${"id" in input ? "; `id` is not a member of a session reference" : ""}`,
      { path },
    );
}

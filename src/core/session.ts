/**
 * How callers name a session: a string id (tenant "default") or `{ tenant, id }` / `{ tenant,
 * session }`.
 */
import { OffloadError } from "../errors.ts";
import type { SessionRef } from "./types.ts";

export type SessionInput = string | { tenant?: string; id: string } | SessionRef;

export const DEFAULT_TENANT = "default";
const ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A tenant or session id as the rule allows it (1-128 chars of letters, digits and . _ : -). */
export function isSessionId(id: string): boolean {
  return ID.test(id);
}

/** The session a caller names, validated: ids are 1-128 chars of letters, digits and . _ : - */
export function sessionRef(input: SessionInput): SessionRef {
  const tenant = typeof input === "string" ? DEFAULT_TENANT : (input.tenant ?? DEFAULT_TENANT);
  const session = typeof input === "string" ? input : "session" in input ? input.session : input.id;
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

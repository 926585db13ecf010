import type { Policy } from "../policy.ts";

/** Send every request as the client built it. */
export const nonePolicy: Policy = {
  name: "none",
  description: "no policy: every result re-sent in full",
  start: () => ({ send: async (r) => r, recover: async () => null }),
};

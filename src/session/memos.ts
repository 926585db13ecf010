/**
 * Which of a session's proxy memos a request needs: those anchored on an id the request carries
 * (a recall memo on its client calls' ids, an alias on the response id the client saw). Only these
 * travel with a turn's begin, however many the session keeps.
 */
import type { ProxyMemo } from "../proxy/port.ts";

export function anchoredMemos(
  memos: readonly ProxyMemo[],
  anchors: readonly string[] | undefined,
): ProxyMemo[] {
  if (anchors === undefined || anchors.length === 0 || memos.length === 0) return [];
  const ids = new Set(anchors);
  return memos.filter((m) =>
    (m.kind === "recall" ? m.anchors : [m.from]).some((id) => ids.has(id)),
  );
}

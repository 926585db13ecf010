/**
 * A turn seen through another: the same start and the same methods, some of them replaced (a dry
 * run's turn that writes nothing, a replay's turn that hides the idle time). The methods are
 * called on the turn itself, so a class with private state works underneath.
 */
import type { Turn } from "../ports.ts";

export function turnOver(turn: Turn, replaced: Partial<Turn>): Turn {
  return {
    config: turn.config,
    records: turn.records,
    recall_declared: turn.recall_declared,
    memos: turn.memos,
    tool_stats: turn.tool_stats,
    session_tool_stats: turn.session_tool_stats,
    calibrations: turn.calibrations,
    gap_seconds: turn.gap_seconds,
    idle_seconds: turn.idle_seconds,
    ...(turn.session_lengths === undefined ? {} : { session_lengths: turn.session_lengths }),
    read: (ids) => turn.read(ids),
    putBody: (body, meta) => turn.putBody(body, meta),
    getBody: (memId) => turn.getBody(memId),
    hasBody: (memId) => turn.hasBody(memId),
    commit: (commit) => turn.commit(commit),
    finish: (finish) => turn.finish(finish),
    get seq() {
      return turn.seq;
    },
    notes: turn.notes,
    extractions: turn.extractions,
    ...replaced,
  };
}

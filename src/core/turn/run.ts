/**
 * One turn, step by step: read the session's sticky decisions (the turn's start has most of them),
 * replay them and take the first decisions (decide.ts, replay.ts), decide the attachments, commit
 * (first writer wins), then render the edits, declare the recall tool, place the cache anchor
 * (anchor.ts) and count what was done (report.ts). A failure to read or save the session's state is
 * a problem of the turn, never a lost result: the request goes out as sent.
 */
import { AttachmentTurn } from "../attachments/turn.ts";
import type { Calibration } from "../calibration.ts";
import { cacheCold } from "../cold.ts";
import type { Edit, ToolResultSite } from "../formats/types.ts";
import { describeCause } from "../problems.ts";
import type { ResultRecord } from "../types.ts";
import { placeAnchor } from "./anchor.ts";
import { movedBreakpoints, movedOutcome, moveEdits, movePoint } from "./breakpoint.ts";
import {
  arrivalId,
  charsTakenOut,
  type Decision,
  type Outcome,
  pending,
  pressureId,
  type Replaced,
  recallToolTokens,
  replacedFrom,
  settleId,
  type TurnContext,
  warmId,
} from "./context.ts";
import { decide, type FirstDecision, firstDeliveryCandidate } from "./decide.ts";
import { INLINE_TOOLS_BETA, inlineDeclaration, inlineDeclares } from "./declare.ts";
import { turnEstimate, turnSketch } from "./estimate.ts";
import { Flight } from "./flight.ts";
import { frozenBefore, frozenReason } from "./frozen.ts";
import { contextWindow, relievePressure } from "./pressure.ts";
import { replay, sameDecision } from "./replay.ts";
import { type CompactReport, countTurn, emptyReport, otherTokensOf, turnLog } from "./report.ts";
import { isHot, ruleCounts, withRule } from "./tool-rules.ts";

export interface TurnResult {
  edits: Edit[];
  decisions: Decision[];
  report: CompactReport;
}

/**
 * The calibration for the turn's model, when it is on: the session's own once ready, else the
 * tenant's, as the turn began with them.
 */
function calibrationOf(ctx: TurnContext): Calibration | null {
  const model = ctx.price?.id;
  if (model === undefined || !ctx.config.tool_result_calibration_enabled) return null;
  return ctx.loaded.calibrations[model] ?? null;
}

/**
 * "free" declaration: the recall tool goes in where adding it rewrites nothing cached: the
 * session's first turn (nothing is cached yet), or a turn whose cache has lapsed.
 */
function declaresFree(ctx: TurnContext): boolean {
  const idle = ctx.loaded.idle_seconds;
  return (
    idle === null || idle === undefined || cacheCold(ctx.format, ctx.analysis.breakpoints, idle)
  );
}

export async function runTurn(ctx: TurnContext): Promise<TurnResult> {
  const { analysis, config } = ctx;
  const { sites } = analysis;
  const media = new AttachmentTurn(ctx);
  try {
    // A result's context-pressure decision has a record of its own (pressure.ts), and so have a
    // decline while the cache is warm (decide.ts), the breakpoint move (breakpoint.ts) and, while the
    // result is fresh, a declined first delivery. (A loop: a request may hold 100,000 results, too
    // many to spread into one call's arguments.)
    const pressured = contextWindow(ctx) !== null;
    const ids: string[] = [];
    for (const s of sites) {
      ids.push(s.tool_use_id);
      if (pressured) ids.push(pressureId(s.tool_use_id));
      if (!ctx.offload) continue;
      ids.push(warmId(s.tool_use_id), settleId(s.tool_use_id));
      if (!s.settled) ids.push(arrivalId(s.tool_use_id));
    }
    for (const id of await media.identify()) ids.push(id);
    // The turn's start (its own fields), with every record the request needs.
    ctx.loaded = { ...ctx.turn, records: await ctx.turn.read(ids) };
    ctx.calibration = calibrationOf(ctx);
  } catch (cause) {
    // Without the sticky decisions any change could contradict an earlier turn: pass the request
    // through.
    ctx.problems.push({
      code: "storage_error",
      message: `session state unavailable, request passed through (${describeCause(cause)})`,
    });
    const report = {
      ...emptyReport(ctx.format, true, ctx.offload),
      errors: ctx.problems,
      model: analysis.model,
      results: sites.length,
    };
    return { edits: [], decisions: [], report };
  }
  const { loaded } = ctx;
  ctx.replaced = replacedChars(ctx, sites);

  const hot = (site: ToolResultSite) => isHot(ctx, site);
  // Once declared in a session the tool stays (stubs point at it); "eager" declares it with the
  // first enabled turn. Never newly under a preserved-thinking model's thinking (frozen.ts).
  const declarable = ctx.offload && frozenBefore(ctx) === null;
  ctx.toolDeclared =
    loaded.recall_declared ||
    analysis.has_recall_tool ||
    (declarable && config.tool_result_recall_tool_declaration === "eager") ||
    (declarable && config.tool_result_recall_tool_declaration === "free" && declaresFree(ctx));
  const outcomes = new Map<ToolResultSite, Outcome>();
  // Fresh results whose breakpoint moves (breakpoint.ts): by a standing record, or one decided now.
  const settling = new Set<ToolResultSite>();
  const fresh: { site: ToolResultSite; record: ResultRecord }[] = [];
  const declaredBefore = ctx.toolDeclared;

  const first = (site: ToolResultSite, decided: FirstDecision): void => {
    if (decided.record !== undefined) fresh.push({ site, record: decided.record });
    outcomes.set(site, decided.outcome);
  };
  const firstDelivery = (site: ToolResultSite, decided: FirstDecision | null): void => {
    if (decided?.record !== undefined) {
      first(site, decided);
      return;
    }
    const declined = decided?.outcome.decision;
    // Kept under a preserved-thinking model's thinking: that is the reason, not the hot window.
    const kept = pending(
      ctx,
      site,
      hot(site),
      declined !== undefined && frozenReason(declined.reason) ? declined.reason : undefined,
    );
    outcomes.set(
      site,
      declined?.gate === undefined
        ? kept
        : { decision: { ...kept.decision, gate: declined.gate, reason: declined.reason } },
    );
  };

  // A first decision parses its body, one result at a time; one that stores its body goes on while
  // the next are decided (flight.ts bounds how much body text is held at once).
  const flight = new Flight();
  const later: { site: ToolResultSite; arrival: boolean; done: Promise<FirstDecision> }[] = [];
  // Kept while warm stands until the cache lapses; then the result is weighed again.
  const cold = cacheCold(ctx.format, analysis.breakpoints, loaded.idle_seconds);
  for (const site of sites) {
    const record =
      loaded.records.get(pressureId(site.tool_use_id)) ??
      loaded.records.get(site.tool_use_id) ??
      (cold || !ctx.offload ? undefined : loaded.records.get(warmId(site.tool_use_id)));
    // The decision taken on the result's arrival: its breakpoint moved (kept in full while fresh, then
    // offloaded), or its first delivery declined (kept while fresh).
    const moved = ctx.offload ? loaded.records.get(settleId(site.tool_use_id)) : undefined;
    const arrived = ctx.offload ? loaded.records.get(arrivalId(site.tool_use_id)) : undefined;
    if (record !== undefined) outcomes.set(site, await replay(ctx, site, record));
    else if (moved !== undefined && !site.settled) {
      outcomes.set(site, movedOutcome(pending(ctx, site, hot(site)), moved.reason));
      settling.add(site);
    } else if (arrived !== undefined && !site.settled) {
      const kept = pending(ctx, site, hot(site), arrived.reason);
      outcomes.set(site, {
        decision: { ...kept.decision, ...(arrived.gate === null ? {} : { gate: arrived.gate }) },
      });
    } else if (hot(site) || !site.settled) {
      // First delivery (opt-in): a large fresh result may be offloaded before the model ever reads
      // it; or its breakpoint moved and its offload decided for once it is settled.
      const decided =
        firstDeliveryCandidate(ctx, site) || movePoint(ctx, site) !== null
          ? await decide(ctx, site, true, flight)
          : null;
      if (decided !== null && "later" in decided)
        later.push({ site, arrival: true, done: decided.later });
      else firstDelivery(site, decided);
    } else {
      const decided = await decide(ctx, site, false, flight, moved === undefined ? null : "settle");
      if ("later" in decided) later.push({ site, arrival: false, done: decided.later });
      else first(site, decided);
    }
  }
  for (const l of later) {
    const decided = await l.done;
    if (l.arrival) firstDelivery(l.site, decided);
    else first(l.site, decided);
  }
  fresh.sort((a, b) => a.site.index - b.site.index);
  // The recall tool comes with the first stub: without one that landed, nothing new declares it.
  if (!fresh.some((f) => f.record.action === "offloaded")) ctx.toolDeclared = declaredBefore;

  await media.decide(loaded.records);
  const pressure = await relievePressure(
    ctx,
    sites,
    hot,
    outcomes,
    fresh,
    turnEstimate(ctx, sites, outcomes, otherTokensOf(ctx, sites, media.tally()), 0, media.tally())
      .sent,
  );

  const declare = ctx.toolDeclared && (ctx.offload || loaded.recall_declared);
  const toolTokens =
    declare && !analysis.has_recall_tool
      ? recallToolTokens(ctx.format, config.tool_result_recall_mode)
      : 0;
  const decisionsNow = () => sites.map((s) => withRule(ctx, s, outcomes.get(s)!.decision));
  const countsNow = () => countTurn(ctx, sites, outcomes, fresh.length, toolTokens, media.tally());
  const committed = decisionsNow();
  const rewritten = (site: ToolResultSite | undefined): boolean =>
    site !== undefined &&
    outcomes.get(site)!.replacement !== undefined &&
    site.content !== undefined;
  const siteEdits = (): Edit[] =>
    sites.filter(rewritten).map((site) => ({
      start: site.content!.start,
      end: site.content!.end,
      text: ctx.adapter.renderContent(
        ctx.raw,
        site,
        outcomes.get(site)!.replacement!,
        media.overridesIn(site.index),
      ),
    }));
  const addsTool = declare && !analysis.has_recall_tool;
  const anchoring = config.tool_result_medium_tier === "cache_anchor";
  // The request as it will go out, for the turn's sketch (the billing counterfactual's view of it);
  // rendered again below once the commit has settled every decision.
  // In `tools`, or inline after the earliest stub (declare.ts): read from the outcomes as they stand, so
  // again once the commit has settled them.
  const declarationNow = (): { edit: Edit; inline: boolean } | null => {
    if (!addsTool) return null;
    if (inlineDeclares(ctx)) {
      const edit = inlineDeclaration(
        ctx,
        sites,
        (s) => outcomes.get(s)?.decision.action === "offloaded",
      );
      if (edit !== null) return { edit, inline: true };
      // No stub to follow (or no valid place there): `tools`, unless a preserved-thinking model's
      // thinking forbids changing them.
      if (frozenBefore(ctx) !== null) return null;
    }
    return {
      edit: ctx.adapter.declareRecallTool(ctx.raw, ctx.root, config.tool_result_recall_mode),
      inline: false,
    };
  };
  const plannedDeclaration = declarationNow();
  const declaration = plannedDeclaration?.edit ?? null;
  const planned = anchoring ? placeAnchor(ctx, sites, outcomes, declaration) : null;
  const moving = new Set(settling);
  for (const f of fresh)
    if (f.record.tool_use_id === settleId(f.site.tool_use_id)) moving.add(f.site);
  const log = {
    ...turnLog(ctx, countsNow(), committed),
    estimate: {
      ...turnEstimate(
        ctx,
        sites,
        outcomes,
        otherTokensOf(ctx, sites, media.tally()),
        toolTokens,
        media.tally(),
      ),
      ...turnSketch(ctx, sites, outcomes, {
        edits: [...siteEdits(), ...media.edits((i) => rewritten(sites[i]), false)],
        declaration:
          declaration === null
            ? null
            : {
                text: declaration.text,
                tokens: toolTokens,
                ...(plannedDeclaration?.inline ? { at: declaration.start } : {}),
              },
        anchor:
          planned?.edit == null || planned.report.ttl === null
            ? null
            : { at: planned.edit.start, ttl: planned.report.ttl },
        breakpoints: movedBreakpoints(ctx, sites, moving),
      }),
    },
  };
  try {
    const result = await ctx.turn.commit({
      records: [...fresh.map((f) => f.record), ...media.records()],
      recall_declared: declare,
      log,
      decisions: committed,
    });
    // First writer wins: where a concurrent turn decided a result first, render its decision
    // instead. A record the store did not keep was not saved: that result stays full this turn.
    for (const f of fresh) {
      const standing = result.records.get(f.record.tool_use_id);
      if (standing === undefined)
        outcomes.set(
          f.site,
          pending(ctx, f.site, false, "kept full: the decision could not be saved"),
        );
      else if (f.record.tool_use_id === settleId(f.site.tool_use_id)) settling.add(f.site);
      else if (!sameDecision(standing, f.record))
        outcomes.set(f.site, await replay(ctx, f.site, standing));
    }
    await media.settle(result.records);
  } catch (cause) {
    // Unsaved decisions would not be sticky: keep those results full this turn (a later turn
    // decides again).
    ctx.problems.push({
      code: "storage_error",
      message: `decisions could not be saved; new results kept full (${describeCause(cause)})`,
    });
    for (const f of fresh)
      outcomes.set(
        f.site,
        pending(ctx, f.site, false, "kept full: the decision could not be saved"),
      );
    media.unsaved();
  }

  const edits: Edit[] = siteEdits();
  edits.push(...media.edits((i) => rewritten(sites[i])));
  let recallTool: CompactReport["recall_tool"] = analysis.has_recall_tool ? "present" : "none";
  const declared = declarationNow();
  if (declared !== null) {
    edits.push(declared.edit);
    recallTool = "added";
  }
  // The move goes with its standing record only: unsaved, the result is written as the client asked.
  for (const e of moveEdits(ctx, sites, settling)) if (!media.absorb(e)) edits.push(e);
  let anchor: CompactReport["anchor"] = null;
  if (anchoring) {
    const placed = placeAnchor(ctx, sites, outcomes, declared?.edit ?? null);
    anchor = placed.report;
    if (placed.edit !== null && !media.absorb(placed.edit)) edits.push(placed.edit);
  }
  const decisions = decisionsNow();
  const counts = countsNow();
  return {
    edits,
    decisions,
    report: {
      format: ctx.format,
      enabled: true,
      offload: ctx.offload,
      model: analysis.model,
      priced_as: ctx.price?.id ?? null,
      turn: analysis.assistant_turns,
      ...counts,
      saved_tokens: counts.tokens_before - counts.tokens_after,
      recall_tool: recallTool,
      ...(declared?.inline ? { anthropic_beta: [INLINE_TOOLS_BETA] } : {}),
      shadow: false,
      anchor,
      attachments: media.report(),
      errors: ctx.problems,
      estimate: log.estimate,
      pressure,
      tool_rules: ruleCounts(ctx, decisions),
    },
  };
}

/**
 * What the session's earlier decisions take out of this request, result by result: a full body the client
 * sent again counts its length less its stub's; a stub it sent back counts nothing.
 */
function replacedChars(ctx: TurnContext, sites: readonly ToolResultSite[]): Replaced {
  const out: [number, number][] = [];
  for (const site of sites) {
    const record =
      ctx.loaded.records.get(pressureId(site.tool_use_id)) ??
      ctx.loaded.records.get(site.tool_use_id);
    if (record === undefined || record.action === "kept" || record.rendered === null) continue;
    out.push([site.position, charsTakenOut(ctx, site, record.rendered)]);
  }
  return replacedFrom(out);
}

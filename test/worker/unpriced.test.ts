// An unknown model through the service: the compact answer's x-offload-summary and the session's report both
// name the model and the config key that prices it (tool_result_pricing_model), instead of a silent "kept".
import { describe, expect, it } from "vitest";
import { SessionReportSchema } from "../../src/routes/schemas/report.ts";
import { call, compactPath, conversation, ON, sid, summary } from "./helpers.ts";

describe("an unknown model over HTTP", () => {
  it("is named in the summary header and in the session report's last turn", async () => {
    const session = sid("unpriced");
    const body = { ...conversation(), model: "acme-gateway-large" };
    const res = await call(compactPath(session), { body, config: ON });
    expect(res.status).toBe(200);
    const s = summary(res);
    expect(s).toMatchObject({ model: "acme-gateway-large", priced_as: null, offloaded: 0 });
    expect(s.errors).toEqual([
      {
        code: "unpriced_model",
        message: expect.stringContaining('unknown model "acme-gateway-large" (no price)'),
      },
    ]);
    expect(s.errors[0]!.message).toContain("tool_result_pricing_model");

    const report = SessionReportSchema.parse(
      await (await call(`/v1/sessions/${session}/report`)).json(),
    );
    const decision = report.last_turn!.decisions.find((d) => d.tool_use_id === "toolu_1")!;
    expect(decision).toMatchObject({ tier: "large", action: "kept" });
    expect(decision.reason).toContain('unknown model "acme-gateway-large"');
    expect(decision.reason).toContain("tool_result_pricing_model");
    expect(report.turns.at(-1)!.errors).toBe(1);
  });
});

import { defineConfig } from "vitest/config";

// The real coding agents (Claude Code, Codex CLI) against the Worker and a scripted fake provider on
// 127.0.0.1: `npm run test:agents`, a CI step of its own (.ci/run). Not in `npm test`: the first run installs
// ~800 MB of agent binaries from the npm registry into a cache folder (test/agents/agents.ts).
export default defineConfig({
  test: {
    name: "agents",
    include: ["test/agents/**/*.test.ts"],
    environment: "node",
    testTimeout: 180_000,
    hookTimeout: 600_000,
    // One Worker and one fake for both agents, run one after the other (they are CPU-heavy).
    fileParallelism: false,
  },
});

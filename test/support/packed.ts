/**
 * The package as a user gets it, for the tests that try it from outside the repository: `npm pack` in a copy
 * of the sources (its prepack build never touches the worktree's dist/), then the tarball installed with npm
 * into a fresh project (cached packages first, the registry only for what the cache lacks). Other packages a
 * test needs beside it are linked from the repository's node_modules, as if the project had installed them.
 */
import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../..", import.meta.url));
export const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
/** A shell's environment with this Node first on PATH (npm runs scripts with the `node` it finds). */
export const env = {
  ...process.env,
  PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}`,
};

/** What `npm pack` needs besides what it ships: the build's inputs. */
const SOURCES = [
  "package.json",
  "package-lock.json",
  "tsconfig.base.json",
  "tsconfig.build.json",
  "README.md",
  "LICENSE",
  "src",
  "docs",
];

export function npm(args: string[], cwd: string): string {
  const out = spawnSync("npm", [...args, "--no-audit", "--no-fund"], {
    cwd,
    env,
    encoding: "utf8",
  });
  if (out.status !== 0)
    throw new Error(`npm ${args.join(" ")} failed:\n${out.stderr}${out.stdout}`);
  return out.stdout;
}

export interface Packed {
  /** The temporary folder holding everything below. */
  work: string;
  tarball: string;
  /** The consumer project, edge-offload installed from the tarball. */
  app: string;
  /** Links packages of the repository's node_modules into the app's (as if it had installed them). */
  link(names: readonly string[]): void;
  remove(): void;
}

/** Packs the package and installs the tarball into a fresh ES-module project. */
export function packAndInstall(label: string): Packed {
  const work = mkdtempSync(join(tmpdir(), `edge-offload-${label}-`));
  const repo = join(work, "repo");
  for (const name of SOURCES) cpSync(join(root, name), join(repo, name), { recursive: true });
  symlinkSync(join(root, "node_modules"), join(repo, "node_modules"));
  const name = npm(["pack", "--silent", "--pack-destination", work], repo)
    .trim()
    .split("\n")
    .pop()!;
  const tarball = join(work, name);
  const app = join(work, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), '{"name":"app","private":true,"type":"module"}\n');
  npm(["install", "--prefer-offline", tarball], app);
  return {
    work,
    tarball,
    app,
    link(names) {
      for (const n of names) {
        const target = join(app, "node_modules", n);
        if (existsSync(target)) continue;
        mkdirSync(dirname(target), { recursive: true });
        symlinkSync(join(root, "node_modules", n), target);
      }
    },
    remove: () => rmSync(work, { recursive: true, force: true }),
  };
}

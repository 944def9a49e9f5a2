/**
 * Issue 44 item 1: the README is for the people who use edgelock: short, the Quickstart first,
 * the project's history and figures in docs/. (check:snippets type-checks its code and
 * check:installed runs its Worker Quickstart with its wrangler.toml, as written.)
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const README = readFileSync(join(import.meta.dirname, "../../../README.md"), "utf8");
const headings = [...README.matchAll(/^## (.+)$/gm)].map((match) => match[1]);

describe("README", () => {
  it("is short: under 300 lines", () => {
    expect(README.split("\n").length).toBeLessThan(300);
  });

  it("says what it is, installs, runs a Worker, then maps the API, in that order", () => {
    const order = [
      "Install",
      "Quickstart: a Worker",
      "With Hono",
      "API map",
      "Redisson ↔ edgelock",
    ];
    const at = order.map((heading) => headings.indexOf(heading));
    expect(at.every((index) => index >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
  });

  it("shows the Quickstart's wrangler.toml, and the Hono version's nodejs_compat line", () => {
    const tomls = [...README.matchAll(/^```toml\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
    expect(tomls[0]).toMatch(/^main = "src\/index\.ts"$/m);
    expect(tomls.some((toml) => toml?.includes('compatibility_flags = ["nodejs_compat"]'))).toBe(
      true,
    );
  });

  it("keeps the project's history and figures out (they live in docs/)", () => {
    expect(README).not.toMatch(/\bround \d\b/i);
    expect(README).not.toMatch(/\bissue \d+\b/i);
    expect(README).not.toMatch(/\d+(\.\d+)? ?%/);
    expect(README).not.toMatch(/\d+(\.\d+)? KiB/);
    expect(headings).not.toContain("Status");
  });
});

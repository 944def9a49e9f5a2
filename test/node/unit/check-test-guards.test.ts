/** scripts/check-test-guards.ts: which skip sites and conditional expects it finds, and their reasons. */
import { describe, expect, it } from "vitest";
import { guardSites } from "../../../scripts/check-test-guards.js";

const sitesOf = (source: string) =>
  guardSites("sample.test.ts", source).map(({ line, kind, why }) => ({ line, kind, why }));

describe("check-test-guards", () => {
  it("finds skip, skipIf and runIf sites of describe, it and test, with the reason above", () => {
    const source = [
      "describe.skipIf(noRedis)('a', () => {});",
      "// why it may not run",
      "// guard: needs Redis",
      "it.runIf(hasRedis)('b', () => {});",
      "test.skip('c', () => {});",
      "describe.skip.each([1])('d %s', () => {});",
      "describe.each([1])('e %s', () => {});",
      "ctx.skip();",
    ].join("\n");
    expect(sitesOf(source)).toEqual([
      { line: 1, kind: "skip", why: undefined },
      { line: 4, kind: "skip", why: "needs Redis" },
      { line: 5, kind: "skip", why: undefined },
      { line: 6, kind: "skip", why: undefined },
    ]);
  });

  it("finds an expect that a branch may pass by, not one every way through asserts", () => {
    const source = [
      "it('x', () => {",
      "  if (a) expect(1).toBe(1);", // 2: passed by when !a
      "  if (a) expect(1).toBe(1); else expect(2).toBe(2);",
      "  if (a) { expect(1).toBe(1); } else if (b) { expect(2).toBe(2); }", // 4: !a && !b
      "  if (a) { expect(1).toBe(1); } else { expect.unreachable('a'); }",
      "  a && expect(1).toBe(1);", // 6
      "  a ? expect(1).toBe(1) : expect(2).toBe(2);",
      "  for (const v of vs) expect(v).toBe(1);",
      "  // guard: only when a",
      "  if (a) {",
      "    expect(1).toBe(1);",
      "  }",
      "});",
      "function model(m) {",
      "  if (m.busy) { expect(h).toBeNull(); return; }",
      "  expect(h).not.toBeNull();",
      "}",
    ].join("\n");
    expect(sitesOf(source)).toEqual([
      { line: 2, kind: "conditional expect", why: undefined },
      { line: 4, kind: "conditional expect", why: undefined },
      { line: 4, kind: "conditional expect", why: undefined },
      { line: 6, kind: "conditional expect", why: undefined },
      { line: 11, kind: "conditional expect", why: "only when a" },
    ]);
  });
});

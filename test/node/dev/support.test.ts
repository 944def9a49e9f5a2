/** The test-support rule for which backends run: real Redis whenever possible, always in CI. */
import { afterEach, describe, expect, it } from "vitest";
import { backendKindsUnderTest } from "../../support/backends.js";

describe("backendKindsUnderTest", () => {
  const saved = { bin: process.env.REDIS_SERVER_BIN, ci: process.env.CI };
  afterEach(() => {
    for (const [name, value] of [
      ["REDIS_SERVER_BIN", saved.bin],
      ["CI", saved.ci],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it("falls back to the embedded engine without redis-server", () => {
    process.env.REDIS_SERVER_BIN = "/nonexistent/redis-server";
    process.env.CI = "false";
    expect(backendKindsUnderTest()).toEqual(["embedded"]);
  });

  it("throws in CI when redis-server is missing", () => {
    process.env.REDIS_SERVER_BIN = "/nonexistent/redis-server";
    process.env.CI = "true";
    expect(() => backendKindsUnderTest()).toThrow(/CI must test against a real Redis/);
  });
});

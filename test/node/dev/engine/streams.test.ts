/** Stream behaviour that depends on the clock (auto IDs, idle times), on a fake clock. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Backend } from "../../../../dev/backend.js";
import { FakeClock, type Plain, startEngine } from "./helpers.js";

describe("embedded engine: streams over time", () => {
  let clock: FakeClock;
  let backend: Backend;
  let run: (...command: string[]) => Promise<Plain>;

  beforeEach(async () => {
    clock = new FakeClock(1_000);
    ({ backend, run } = await startEngine(clock));
  });
  afterEach(async () => backend.close());

  it("XADD * takes the clock's ms and counts up within one ms or when the clock goes back", async () => {
    expect(await run("XADD", "s", "*", "f", "1")).toBe("1000-0");
    expect(await run("XADD", "s", "*", "f", "2")).toBe("1000-1");
    clock.advance(5);
    expect(await run("XADD", "s", "*", "f", "3")).toBe("1005-0");
    clock.advance(-100);
    expect(await run("XADD", "s", "*", "f", "4")).toBe("1005-1");
    expect(await run("XADD", "s", "2000-*", "f", "5")).toBe("2000-0");
    expect(await run("XADD", "s", "2000-*", "f", "6")).toBe("2000-1");
  });

  it("XPENDING reports idle time and deliveries; XCLAIM and XAUTOCLAIM honour min-idle", async () => {
    await run("XADD", "s", "1-0", "f", "1");
    await run("XADD", "s", "2-0", "f", "2");
    await run("XGROUP", "CREATE", "s", "g", "0");
    await run("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">");
    clock.advance(300);
    expect(await run("XPENDING", "s", "g", "-", "+", "10")).toEqual([
      ["1-0", "alice", 300n, 1n],
      ["2-0", "alice", 300n, 1n],
    ]);
    expect(await run("XPENDING", "s", "g", "IDLE", "500", "-", "+", "10")).toEqual([]);
    expect(await run("XCLAIM", "s", "g", "bob", "500", "1-0", "JUSTID")).toEqual([]);
    expect(await run("XCLAIM", "s", "g", "bob", "200", "1-0", "JUSTID")).toEqual(["1-0"]);
    expect(await run("XPENDING", "s", "g", "-", "+", "10", "bob")).toEqual([
      ["1-0", "bob", 0n, 1n],
    ]);
    expect(await run("XAUTOCLAIM", "s", "g", "carol", "250", "0", "JUSTID")).toEqual([
      "0-0",
      ["2-0"],
      [],
    ]);
    clock.advance(40);
    expect(await run("XINFO", "CONSUMERS", "s", "g")).toEqual([
      ["name", "alice", "pending", 0n, "idle", 340n],
      ["name", "bob", "pending", 1n, "idle", 40n],
      ["name", "carol", "pending", 1n, "idle", 40n],
    ]);
  });
});

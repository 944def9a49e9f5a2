import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Backend, Command } from "../../../../dev/backend.js";
import { createEmbeddedBackend, EMBEDDED_DESCRIPTION } from "../../../../dev/engine/index.js";
import { plain } from "./helpers.js";

const EXECABORT = { error: "EXECABORT Transaction discarded because of previous errors." };

describe("embedded engine: transactions, pipelines, lifecycle", () => {
  let backend: Backend;
  const tx = async (...commands: Command[]) => plain(await backend.transaction(commands));

  beforeEach(async () => {
    backend = await createEmbeddedBackend();
  });
  afterEach(async () => backend.close());

  it("describes itself", () => {
    expect(backend.description).toBe(EMBEDDED_DESCRIPTION);
    expect(backend.description).toContain("Lua 5.4 via wasmoon");
  });

  it("runs a transaction and returns every reply", async () => {
    expect(
      await tx(
        ["SET", "a", "1"],
        ["INCR", "a"],
        ["GET", "a"],
        ["EVAL", "return redis.call('incr', 'a')", "0"],
      ),
    ).toEqual([{ status: "OK" }, 2n, "2", 3n]);
  });

  it("discards the whole transaction for unknown commands or wrong arity", async () => {
    expect(await tx(["SET", "a", "1"], ["NOPE"])).toEqual(EXECABORT);
    expect(await tx(["SET", "a", "1"], ["GET"])).toEqual(EXECABORT);
    expect(await tx(["SET", "a", "1"], ["SCRIPT", "BOGUS"])).toEqual(EXECABORT);
    expect(await tx(["SET", "a", "1"], ["MULTI"])).toEqual(EXECABORT);
    expect(plain(await backend.command(["EXISTS", "a"]))).toBe(0n);
  });

  it("keeps going after runtime errors, reporting them in place", async () => {
    expect(
      await tx(["SET", "s", "x"], ["INCR", "s"], ["SET", "t", "y"], ["HGET", "s", "f"]),
    ).toEqual([
      { status: "OK" },
      { error: "ERR value is not an integer or out of range" },
      { status: "OK" },
      { error: "WRONGTYPE Operation against a key holding the wrong kind of value" },
    ]);
    expect(plain(await backend.command(["GET", "t"]))).toBe("y");
  });

  it("sees one frozen clock for the whole transaction", async () => {
    let now = 5_000_000;
    const moving = await createEmbeddedBackend({ now: () => (now += 1000) });
    try {
      const reply = plain(await moving.transaction([["TIME"], ["TIME"]])) as string[][];
      expect(reply[0]).toEqual(reply[1]);
    } finally {
      await moving.close();
    }
  });

  it("is atomic with respect to concurrent callers", async () => {
    await backend.command(["SET", "n", "0"]);
    const increments = Array.from({ length: 50 }, () =>
      backend.transaction([
        ["GET", "n"],
        ["INCR", "n"],
      ]),
    );
    const replies = (await Promise.all(increments)).map(
      (reply) => plain(reply) as [string, bigint],
    );
    for (const [before, after] of replies) expect(BigInt(before) + 1n).toBe(after);
    expect(plain(await backend.command(["GET", "n"]))).toBe("50");
  });

  it("pipelines run in order and are not atomic", async () => {
    const replies = await backend.pipeline([
      ["SET", "a", "1"],
      ["INCR", "a"],
      ["NOPE"],
      ["GET", "a"],
    ]);
    expect(replies.map(plain)).toEqual([
      { status: "OK" },
      2n,
      { error: "ERR unknown command 'NOPE', with args beginning with: " },
      "2",
    ]);
  });

  it("close is idempotent and later calls reject", async () => {
    const closing = await createEmbeddedBackend();
    await closing.close();
    await closing.close();
    await expect(closing.command(["PING"])).rejects.toThrow(/closed/);
  });

  it("MULTI as a plain command explains itself", async () => {
    expect(plain(await backend.command(["MULTI"]))).toMatchObject({
      error: expect.stringContaining("transaction"),
    });
  });
});

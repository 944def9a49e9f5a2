/**
 * lengthenTtl and lengthenTtlInto (src/hold/lua.ts): the waiting side's keys are kept alive by
 * `PEXPIRE … GT` (then `NX`) in place of `PTTL` then `PEXPIRE`. Both forms must do what the read
 * did: lengthen a shorter TTL, give a key without one its TTL, never shorten a longer one, never
 * make a key. And each costs what its doc says, in billed commands, on both backends.
 */
import { describe, expect, it } from "vitest";
import { lengthenTtl, lengthenTtlInto } from "../../../src/hold/lua.js";
import { KEY_LOCKING_SHEBANG } from "../../../src/transport/call.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";

/** The key's state before: none, no TTL, a TTL shorter or longer than the 5 s asked. */
type Before = "missing" | "no TTL" | "1 s" | "60 s";

const ASKED_MS = 5_000;

describe.each(backendKindsUnderTest())("lengthening a key's TTL on %s", (kind) => {
  const bed = useTestBed(kind);

  /**
   * Runs `lua` (with KEYS[1] and ARGV[1] = 5000) on a key set up as `before`, under per-key
   * locking as the library's scripts run on Upstash.
   */
  async function run(lua: string, before: Before) {
    const redis = bed.redis();
    const key = `${freshPrefix()}:k`;
    if (before !== "missing") await redis.hset(key, { waiter: "1" });
    if (before === "1 s") await redis.pexpire(key, 1_000);
    if (before === "60 s") await redis.pexpire(key, 60_000);
    const start = bed.server.stats.snapshot().billedCommands;
    const reply = await redis.eval(`${KEY_LOCKING_SHEBANG}\n${lua}`, [key], [String(ASKED_MS)]);
    const billed = bed.server.stats.snapshot().billedCommands - start - 1; // less the EVAL
    return { reply, billed, pttl: await redis.pttl(key) };
  }

  const forms = {
    "PEXPIRE GT first": `${lengthenTtl("KEYS[1]", "tonumber(ARGV[1])")}\nreturn 0`,
    "the read first (usuallyLonger)": `${lengthenTtl("KEYS[1]", "tonumber(ARGV[1])", true)}\nreturn 0`,
  };

  it.each(Object.keys(forms) as (keyof typeof forms)[])(
    "%s does what PTTL then PEXPIRE did",
    async (form) => {
      const lua = forms[form];
      const missing = await run(lua, "missing");
      expect(missing.pttl).toBe(-2); // no key made
      const noTtl = await run(lua, "no TTL");
      expect(noTtl.pttl).toBeGreaterThan(ASKED_MS - 1_000);
      expect(noTtl.pttl).toBeLessThanOrEqual(ASKED_MS);
      const shorter = await run(lua, "1 s");
      expect(shorter.pttl).toBeGreaterThan(ASKED_MS - 1_000);
      const longer = await run(lua, "60 s");
      expect(longer.pttl).toBeGreaterThan(50_000); // never shortened
      // The cost its doc gives: GT first pays one where the TTL was shorter, the read first one
      // where it was longer; two otherwise.
      const costs = {
        missing: missing.billed,
        noTtl: noTtl.billed,
        shorter: shorter.billed,
        longer: longer.billed,
      };
      expect(costs).toEqual(
        form === "PEXPIRE GT first"
          ? { missing: 2, noTtl: 2, shorter: 1, longer: 2 }
          : { missing: 2, noTtl: 2, shorter: 2, longer: 1 },
      );
    },
  );

  it("lengthenTtlInto answers the PTTL after, reading it only where GT set nothing", async () => {
    const lua = `local pttl = tonumber(ARGV[1])\n${lengthenTtlInto("KEYS[1]", "ARGV[1]", "pttl")}\nreturn pttl`;
    const shorter = await run(lua, "1 s");
    expect({ reply: shorter.reply, billed: shorter.billed }).toEqual({
      reply: ASKED_MS,
      billed: 1,
    });
    const longer = await run(lua, "60 s");
    expect(longer.reply).toBeGreaterThan(50_000);
    expect(longer.billed).toBe(2);
    expect(longer.pttl).toBeGreaterThan(50_000);
    const noTtl = await run(lua, "no TTL");
    expect({ reply: noTtl.reply, billed: noTtl.billed }).toEqual({ reply: ASKED_MS, billed: 3 });
    expect(noTtl.pttl).toBeGreaterThan(ASKED_MS - 1_000);
    const missing = await run(lua, "missing");
    expect({ reply: missing.reply, pttl: missing.pttl }).toEqual({ reply: -2, pttl: -2 });
  });
});

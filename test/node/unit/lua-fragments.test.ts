import { describe, expect, it } from "vitest";
import { LUA_FRAGMENTS } from "../../../src/hold/fragment.js";
import { SERVER_NOW_MS } from "../../../src/hold/lua.js";
import { learnHandOff, learnRoundTrip, readPace } from "../../../src/hold/pace.js";
import { WAITER_LUA } from "../../../src/hold/queue/lua.js";
import { checkScriptNeeds, declaredFragments, defineScript } from "../../../src/hold/script.js";
import { ACQUIRE, FAIR_ACQUIRE } from "../../../src/locks/exclusive/lock.js";
import { RELEASE } from "../../../src/locks/exclusive/release.js";
import { WRITE_ACQUIRE } from "../../../src/locks/read-write-lock/write-acquire.js";
import { SCRIPTS } from "../../../src/scripts.js";

/** The pace hash read, and a fragment that needs it, the clock and the hash (learnHandOff). */
const PACE = readPace("statsKey");
const HAND_OFF = learnHandOff("statsKey", "true");

/** A script of its own for the test, over `lua`. */
function script(name: string, lua: string, args: readonly string[] = ["paceTtlMs"]) {
  return defineScript({ name, keys: ["statsKey"], args, replies: "count", lua });
}

describe("Lua fragments and what they need", () => {
  it("holds every script of the catalogue to its fragments' declarations, and finds them", () => {
    const fragments = declaredFragments();
    let found = 0;
    for (const catalogued of SCRIPTS.values()) found += checkScriptNeeds(catalogued, fragments);
    // The check must see the fragments: where the declarations were dropped (a bundle), it would
    // pass without holding anything to them.
    expect(found).toBeGreaterThanOrEqual(80);
    for (const queued of [ACQUIRE, FAIR_ACQUIRE, WRITE_ACQUIRE, RELEASE]) {
      expect(checkScriptNeeds(queued, fragments), queued.name).toBeGreaterThanOrEqual(10);
    }
    const names = new Set(fragments.map((fragment) => fragment.name));
    for (const name of ["SERVER_NOW_MS", "WAITER_LUA", "joinQueue", "handOffToParkedHead"]) {
      expect(names, name).toContain(name);
    }
  });

  it("throws, naming the script, the fragment and the local, when nothing defines a need", () => {
    const missingNow = script("test.missingNow", `${PACE}\n${HAND_OFF}\nreturn {1}`);
    expect(() => checkScriptNeeds(missingNow)).toThrow(
      /^Script test\.missingNow: fragment learnHandOff needs the local now, /,
    );
  });

  it("throws when the script lacks an argument a fragment reads", () => {
    const missingArg = script("test.missingArg", `${PACE}\n${learnRoundTrip()}\nreturn {1}`);
    expect(() => checkScriptNeeds(missingArg)).toThrow(
      /test\.missingArg: fragment learnRoundTrip needs the local roundTripMs/,
    );
    const withArg = script("test.withArg", `${PACE}\n${learnRoundTrip()}\nreturn {1}`, [
      "paceTtlMs",
      "roundTripMs",
    ]);
    expect(checkScriptNeeds(withArg)).toBeGreaterThanOrEqual(1);
  });

  it("counts a local only where it is defined before the fragment", () => {
    const late = script("test.late", `${PACE}\n${HAND_OFF}\n${SERVER_NOW_MS}\nreturn {1}`);
    expect(() => checkScriptNeeds(late)).toThrow(/test\.late: fragment learnHandOff needs .* now/);
    const early = script("test.early", `${SERVER_NOW_MS}\n${PACE}\n${HAND_OFF}\nreturn {1}`);
    expect(checkScriptNeeds(early)).toBe(3); // SERVER_NOW_MS, readPace, learnHandOff
    // A local of the script's own text serves as well as a fragment's.
    const own = script("test.own", `local now = 0\n${PACE}\n${HAND_OFF}\nreturn {1}`);
    expect(checkScriptNeeds(own)).toBe(2);
  });

  it("names a key or argument the builder was given among the needs", () => {
    const wrongKey = script(
      "test.wrongKey",
      `${SERVER_NOW_MS}\n${PACE}\n${learnHandOff("holdStatsKey", "true")}`,
    );
    expect(() => checkScriptNeeds(wrongKey)).toThrow(
      /fragment learnHandOff needs the local holdStatsKey/,
    );
  });

  it("holds each declaration to its own text", () => {
    expect(() =>
      declaredFragments([{ name: "test.providesNothing", lua: WAITER_LUA, provides: ["now"] }]),
    ).toThrow(
      "Fragment test.providesNothing says it provides now, which its text does not declare.",
    );
    expect(() =>
      declaredFragments([{ name: "test.readsNothing", lua: SERVER_NOW_MS, needs: ["owner"] }]),
    ).toThrow("Fragment test.readsNothing says it needs owner, which its text does not read.");
    // Listing the fragments builds their texts again, which declares them again: not kept.
    const count = LUA_FRAGMENTS.length;
    declaredFragments();
    expect(LUA_FRAGMENTS.length).toBe(count);
  });
});

import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { LockScript, scriptHeader } from "../../../src/locks/script.js";
import { LOCK_SCRIPTS } from "../../../src/locks/scripts.js";

// Every lock script's SHA-1. A change here is a change of a script: deliberate, reviewed, and
// visible to anyone who cached or allow-listed the old SHA.
const PINNED: ReadonlyArray<readonly [string, string]> = [
  ["lock.acquire", "1dba17f24b57e4563a9158bcc72b1d294883889c"],
  ["lock.extend", "cd6fbf65666de31983260e02d69058ce006228a6"],
  ["lock.forceRelease", "3151c46869a610f2cd576df17172761039812dc4"],
  ["lock.inspect", "7184e3d58f3591a4a470e81dd25af1684b018fe3"],
  ["lock.release", "717b3e6889b4b3799f6e530594add0aca448652b"],
  ["fairLock.acquire", "46642ff5793e909bb366888680db07dd5cb72067"],
  ["queue.leave", "011ba0b7dfe7d950aee085d40f16a9061b876da2"],
  ["queue.length", "f9dfe848d5aeb066841cdee1e85875ed0ec7e40f"],
  ["readWriteLock.abandonRead", "c3d8f074657e3a27fbbec6f39890b4e5911fd895"],
  ["readWriteLock.acquireRead", "20492a5756bb12fd60e7ccd0249d8b4346ff87a2"],
  ["readWriteLock.extendRead", "7e421d608b88f9dfd96d05afc8280cb5fa501341"],
  ["readWriteLock.forceReleaseRead", "e8a7181687012432ac8cf2fe5933e5d3ad31dd9c"],
  ["readWriteLock.inspectRead", "794cff7247ec177504f97a38ccbdf0d0c29de891"],
  ["readWriteLock.releaseRead", "c6c7e4103d78d5a8c4193fee4367a22695d1f46e"],
  ["readWriteLock.acquireWrite", "c438a638e0219f341ab4f9bb6b351129fc6e58b0"],
  ["multiLock.acquire", "aecb234e0fbb94b6fdd9c3151d5b56a3d8941b60"],
  ["multiLock.extend", "d56aed7661bab528f88cd4d1dbc31003507eb9ac"],
  ["multiLock.release", "eff083ff74b34f67827a094291c1d7ebc71e8665"],
  ["multiLock.rollback", "0e9f9f6e8dcb45eaa3f545afac9f6aabc52ffa7e"],
  ["redLock.undoAcquire", "19d448a7130a7022f265e0a1f1ae4b4e8383d534"],
];

describe("the script catalogue", () => {
  it("lists every script once, each with its pinned SHA-1", async () => {
    expect([...LOCK_SCRIPTS.keys()].sort()).toEqual(PINNED.map(([name]) => name).sort());
    for (const [name, sha] of PINNED) {
      const script = LOCK_SCRIPTS.get(name);
      expect(await script?.sha1(), name).toBe(sha);
      expect(
        createHash("sha1")
          .update(script?.source ?? "")
          .digest("hex"),
        name,
      ).toBe(sha);
    }
  });

  it("sends each script with Upstash's per-key locking flag as its first line, where it is on", async () => {
    for (const [name, script] of LOCK_SCRIPTS) {
      const flagged = script.keyLocking;
      expect(flagged.source, name).toBe(`#!lua flags=allow-key-locking\n${script.source}`);
      expect(await flagged.sha1(), name).toBe(
        createHash("sha1").update(flagged.source).digest("hex"),
      );
      // The flag is the only difference: the pinned source pins the flagged script too.
    }
  });

  it("declares every key and argument by name, and the body uses no position", () => {
    for (const script of LOCK_SCRIPTS.values()) {
      if (!(script instanceof LockScript)) continue;
      const header = scriptHeader(script.keyNames, script.argNames);
      expect(script.source.startsWith(header), script.name).toBe(true);
      const body = script.source.slice(header.length);
      expect(body, script.name).not.toMatch(/(KEYS|ARGV)\[\d+\]/);
      for (const name of [...script.keyNames, ...script.argNames]) {
        expect(body, `${script.name} uses ${name}`).toMatch(new RegExp(`\\b${name}\\b`));
      }
    }
  });
});

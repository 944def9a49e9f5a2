import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { LockScript, scriptHeader } from "../../../src/locks/script.js";
import { LOCK_SCRIPTS } from "../../../src/locks/scripts.js";

// Every lock script's SHA-1. A change here is a change of a script: deliberate, reviewed, and
// visible to anyone who cached or allow-listed the old SHA.
const PINNED: ReadonlyArray<readonly [string, string]> = [
  ["lock.acquire", "cded5cb2453d3231480bce300f09eaf115dc8aec"],
  ["lock.extend", "cd6fbf65666de31983260e02d69058ce006228a6"],
  ["lock.forceRelease", "74b8f6260dc524dc4834d8b23bf1f700b00e7c99"],
  ["lock.inspect", "7184e3d58f3591a4a470e81dd25af1684b018fe3"],
  ["lock.release", "9f68b2dbca19fc8abdee991c1f07a3047579c554"],
  ["fairLock.acquire", "814e38a99546a51ea61fd1590eb67690a6e08d5a"],
  ["queue.leave", "0916069f583c19e1541b8c25258ec15b210eecba"],
  ["queue.length", "f9dfe848d5aeb066841cdee1e85875ed0ec7e40f"],
  ["readWriteLock.acquireRead", "20492a5756bb12fd60e7ccd0249d8b4346ff87a2"],
  ["readWriteLock.extendRead", "7e421d608b88f9dfd96d05afc8280cb5fa501341"],
  ["readWriteLock.forceReleaseRead", "eb5d09a2b1193ce3349629ae83da78fdaa7bc682"],
  ["readWriteLock.inspectRead", "794cff7247ec177504f97a38ccbdf0d0c29de891"],
  ["readWriteLock.releaseRead", "9e7df0de4a313d5f8930cd9684785c896f1984db"],
  ["readWriteLock.acquireWrite", "7929e96d9c747af0727d4f1a37cd156451852a27"],
  ["multiLock.acquire", "cf9d93804f0735372214867bc98ba3f1419a0cf6"],
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

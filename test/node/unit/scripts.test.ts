import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { LockScript, scriptHeader } from "../../../src/hold/script.js";
import { READ_ONLY_KEY_LOCKING_SHEBANG, ReadScript } from "../../../src/inspector/redis.js";
import { SCRIPTS } from "../../../src/scripts.js";
import { flaggedSource, withoutKeyLocking } from "../../../src/transport/call.js";

// Every script's SHA-1 (the locks', the Hono middleware's and the inspector's). A change here is a change of a
// script: deliberate, reviewed, and visible to anyone who cached or allow-listed the old SHA.
const PINNED: ReadonlyArray<readonly [string, string]> = [
  ["lock.acquire", "82eff8170ba69563242844814f475e50bf980e8a"],
  ["lock.extend", "cd6fbf65666de31983260e02d69058ce006228a6"],
  ["lock.forceRelease", "c2fed7078fe1df331390b5f42133c936ae658783"],
  ["lock.inspect", "7184e3d58f3591a4a470e81dd25af1684b018fe3"],
  ["lock.release", "5b256bd0a001c545fe9b09df89f790049bdfcfd5"],
  ["fairLock.acquire", "88570a55fb4e1fa6814f757c4f2184466b9dcb65"],
  ["queue.leave", "f821af2730623c2e49fa3adc32d4001b6f46742a"],
  ["queue.length", "f9dfe848d5aeb066841cdee1e85875ed0ec7e40f"],
  ["readWriteLock.abandonRead", "c3d8f074657e3a27fbbec6f39890b4e5911fd895"],
  ["readWriteLock.acquireRead", "95514496ede1171419c79e3e7a63eb5b7599fed5"],
  ["readWriteLock.extendRead", "08d97451240cbdf9845e6bf48605cf6ba2cd6cbd"],
  ["readWriteLock.forceReleaseRead", "b78209c8db2089c732454b7f2feec579beede8ff"],
  ["readWriteLock.inspectRead", "88a08237df40736ad72c5e6433565d08e471b474"],
  ["readWriteLock.releaseRead", "bc53f570da50804693beec8cab6ed0075bafdb4b"],
  ["readWriteLock.acquireWrite", "ef5f7ead9ded2938e59fa9b8e00a004405521ca0"],
  ["multiLock.acquire", "aecb234e0fbb94b6fdd9c3151d5b56a3d8941b60"],
  ["multiLock.extend", "d56aed7661bab528f88cd4d1dbc31003507eb9ac"],
  ["multiLock.release", "eff083ff74b34f67827a094291c1d7ebc71e8665"],
  ["multiLock.rollback", "0e9f9f6e8dcb45eaa3f545afac9f6aabc52ffa7e"],
  ["redLock.undoAcquire", "19d448a7130a7022f265e0a1f1ae4b4e8383d534"],
  ["semaphore.acquire", "ba33aeb8878bfd3a9cb11b96de199a1cd4f0f558"],
  ["semaphore.extend", "f5e2811451f0a2026b5bac24194d1942ac709f91"],
  ["semaphore.release", "616cc78c7214a539d3cf4953500f9f06341944b1"],
  ["semaphore.abandon", "284c9bf23ef5999be3ed90003b9eb83bdcfdba7e"],
  ["semaphore.capacity", "691fe4681cdfe79636de0c50077d7c29bfbf4d01"],
  ["semaphore.state", "b725f5df0c7f89c7fca50647e8744f5403d1bacb"],
  ["countDownLatch.trySetCount", "ca60f00352aa2836814f05d9cde33c31027dcc51"],
  ["countDownLatch.countDown", "74a1a214fbad5a59bb5c9a4921a2ec56601671b2"],
  ["countDownLatch.count", "8e981740c04bec42071427a5b70a22648ed1810e"],
  ["idempotency.lookup", "b0fc2dd2a5525d42dd75154b4124cf14d5d47f37"],
  ["idempotency.put", "1447d1a29373e47989f03d0fbb4c70ef8ab36dbf"],
  ["inspector.readLock", "1d7c2b0d97e0d24542c183fbd6c15dc9e3f6b579"],
  ["inspector.readSemaphore", "6b37a8f07abfe346301e6d9136dd3b81e25b2ae4"],
  // The latch's own read (countDownLatch.count), sent read-only: the same text, the same SHA-1.
  ["inspector.readLatch", "8e981740c04bec42071427a5b70a22648ed1810e"],
  // Sent as EVAL, so a global database's primary answers it (remove-waiter's lookup).
  ["inspector.queueMembers", "0219b28e57835b6959ef4e3073f7ab45c8ce6de4"],
];

describe("the script catalogue", () => {
  it("lists every script once, each with its pinned SHA-1", async () => {
    expect([...SCRIPTS.keys()].sort()).toEqual(PINNED.map(([name]) => name).sort());
    for (const [name, sha] of PINNED) {
      const script = SCRIPTS.get(name);
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
    let cut = 0;
    for (const [name, script] of SCRIPTS) {
      const flagged = script.keyLocking;
      if (script instanceof ReadScript) {
        // Read-only (EVAL_RO): `no-writes` beside the flag, and nothing to cut.
        expect(flagged.source, name).toBe(`${READ_ONLY_KEY_LOCKING_SHEBANG}\n${script.source}`);
      } else {
        expect(flagged.source, name).toBe(flaggedSource(script.source));
        expect(flagged.source.startsWith("#!lua flags=allow-key-locking\n"), name).toBe(true);
      }
      expect(await flagged.sha1(), name).toBe(
        createHash("sha1").update(flagged.source).digest("hex"),
      );
      // The flag and the parts cut out for it are the only difference: the pinned source pins
      // the flagged script too.
      if (flagged.source.length < script.source.length) cut += 1;
      // Under the flag every key must be one of the script's KEYS: none is built from parts.
      expect(flagged.source, name).not.toMatch(/redis\.call\('\w+', [^,)]*\.\./);
      expect(flagged.source, name).not.toContain(":wake:");
      expect(flagged.source, name).not.toContain(":op:");
    }
    // The push hand-off's parts (acquire and release scripts of the queued kinds) are cut.
    expect(cut).toBeGreaterThanOrEqual(6);
  });

  it("cuts only whole marked parts out of a flagged script", () => {
    const source = `local a = 1\n${withoutKeyLocking("redis.call('DEL', k .. ':x')")}\nreturn a`;
    expect(flaggedSource(source)).toBe("#!lua flags=allow-key-locking\nlocal a = 1\n\nreturn a");
    expect(() => flaggedSource(source.replace("--[[/unflagged]]", ""))).toThrow(
      "an unflagged part of a script has no end",
    );
  });

  it("declares every key and argument by name, and the body uses no position", () => {
    for (const script of SCRIPTS.values()) {
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

/**
 * Security properties: owner tokens are 128 random bits, never derived from the name; nobody
 * releases or extends a lock it does not own; the REST token never shows in errors, events or
 * console output; lock names stay inside their prefix and hash tag; Lua gets data only through
 * KEYS and ARGV (checked on every Script of src/locks/** and on the wire).
 */
import { readdirSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Redis } from "@upstash/redis";
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { lockKeys, subscribableChannel } from "../../../src/hold/script.js";
import {
  LockBackendError,
  LockClient,
  type LockEvent,
  LockNotHeldError,
  type RedisLike,
} from "../../../src/index.js";
import { Script } from "../../../src/transport/call.js";
import { textOf } from "../../chaos/operations.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, until, useTestBed } from "../exclusive/testbed.js";
import { isValidName, nameCase } from "./arbitraries.js";

/** The Redis Cluster hash tag of a key: what decides its slot. */
function hashTag(key: string): string {
  const open = key.indexOf("{");
  if (open === -1) return key;
  const close = key.indexOf("}", open + 1);
  return close === -1 || close === open + 1 ? key : key.slice(open + 1, close);
}

/** Names that would break a script built by string concatenation, or a naive key scheme. */
const HOSTILE_NAMES = [
  "'); redis.call('FLUSHALL') --",
  "]] .. redis.call('DEL', KEYS[1]) .. [[",
  '" .. ARGV[1] .. "',
  "KEYS[1]",
  "x:fence",
  "x:op:0123456789abcdef01234567",
  "*",
  "?[a-z]",
  "line\nbreak",
  "nul\0byte",
  "back\\slash",
  "%s%d%n",
  "😀 unicode ünïcödé",
  "\u202eright-to-left",
  " ",
];

/** Every Script exported by a module under src/locks or src/hold, whichever primitive it belongs to. */
async function lockScripts(): Promise<Script[]> {
  const scripts = new Set<Script>();
  for (const folder of ["../../../src/locks/", "../../../src/hold/"]) {
    const root = new URL(folder, import.meta.url);
    const files = readdirSync(fileURLToPath(root), { recursive: true, encoding: "utf8" }).filter(
      (file) => file.endsWith(".ts"),
    );
    for (const file of files) {
      const module: Record<string, unknown> = await import(
        pathToFileURL(fileURLToPath(new URL(file, root))).href
      );
      for (const value of Object.values(module)) if (value instanceof Script) scripts.add(value);
    }
  }
  return [...scripts];
}

/** Commands that take no key. */
const KEYLESS = new Set(["TIME", "PING", "ECHO"]);

/**
 * The one exception: a push hand-off's release writes the woken waiter's operation record and
 * wake list, which it cannot list in KEYS (the releaser does not know who waits), an acquire
 * whose park is in flight beside it wakes its own wake list, and a leave ends the pop its waiter
 * gave up on (its wake list). They are the lock key plus a
 * literal suffix and the waiter's operation id, exactly as LockKeys.operation / .wake name them,
 * so they carry the lock's hash tag: same cluster slot, no key from input.
 */
const HAND_OFF_KEY = /^lockKey \.\. ':(?:op|wake):' \.\. (?:id|parkId|behindId|waiterId)$/;

/** What is wrong with a script's use of keys and code, if anything. */

function luaProblems(source: string): string[] {
  const problems: string[] = [];
  if (/\b(?:loadstring|load|dofile|require|setfenv|getfenv)\s*\(|\b_G\b/.test(source)) {
    problems.push("runs dynamic code");
  }
  // Locals that alias a KEYS entry (`local lock = KEYS[2 * i - 1]`) may stand for a key…
  const aliases = new Set(
    [...source.matchAll(/local\s+(\w+)\s*=\s*KEYS\[[^\]]+\]/g)].map((m) => m[1]!),
  );
  for (const alias of aliases) {
    const declared =
      source.match(new RegExp(`local\\s+${alias}\\s*=\\s*KEYS\\[`, "g"))?.length ?? 0;
    const assigned = source.match(new RegExp(`\\b${alias}\\s*=(?!=)`, "g"))?.length ?? 0;
    // …as long as nothing else is ever assigned to them.
    if (assigned !== declared) problems.push(`reassigns the key alias ${alias}`);
  }
  for (const call of source.matchAll(/redis\.p?call\(\s*([^,)]*?)\s*(?:,\s*([^,)]+?)\s*)?[,)]/g)) {
    const [, command = "", key = ""] = call;
    if (!/^'[A-Za-z]+'$|^"[A-Za-z]+"$/.test(command)) {
      problems.push(`calls a command named by an expression: ${command}`);
      continue;
    }
    if (KEYLESS.has(command.slice(1, -1).toUpperCase())) continue;
    if (!/^KEYS\[[^\]]+\]$/.test(key) && !aliases.has(key) && !HAND_OFF_KEY.test(key)) {
      problems.push(`passes a key that is not from KEYS: ${command.slice(1, -1)} ${key}`);
    }
  }
  return problems;
}

describe("owner tokens", () => {
  it("are 128 bits from the CSPRNG, as 32 hex characters, every one different", () => {
    const random = vi.spyOn(globalThis.crypto, "getRandomValues");
    try {
      LockClient.newOwner();
      expect(random).toHaveBeenCalledTimes(1);
      expect((random.mock.calls[0]![0] as Uint8Array).byteLength).toBe(16);
    } finally {
      random.mockRestore();
    }
    const owners = Array.from({ length: 4_096 }, () => LockClient.newOwner());
    expect(new Set(owners).size).toBe(owners.length);
    for (const owner of owners) expect(owner).toMatch(/^[0-9a-f]{32}$/);
    // Each of the 128 bits is set in about half the tokens (12 standard deviations of slack).
    for (let bit = 0; bit < 128; bit++) {
      const nibble = 31 - Math.floor(bit / 4);
      const ones = owners.filter((owner) => (Number.parseInt(owner[nibble]!, 16) >> (bit % 4)) & 1);
      expect(ones.length / owners.length).toBeGreaterThan(0.4);
      expect(ones.length / owners.length).toBeLessThan(0.6);
    }
  });

  it("do not depend on the name, the client or the order of acquisition", async () => {
    const answers: RedisLike = {
      eval: async () => [1, 1, 1, 30_000],
      evalsha: async () => [1, 1, 1, 30_000],
    };
    const owners: string[] = [];
    for (let round = 0; round < 2; round++) {
      const client = new LockClient({ redis: answers, prefix: "same" });
      for (const name of ["orders:shipping", "orders:shipping", "orders:billing"]) {
        owners.push((await client.lock(name).tryAcquire({ leaseMs: 1_000 }))!.owner);
      }
    }
    expect(new Set(owners).size).toBe(owners.length);
    // Owners are hex: no part of a name (which has letters beyond a-f) can show through.
    for (const owner of owners) {
      expect(owner).toMatch(/^[0-9a-f]{32}$/);
      expect(owner).not.toMatch(/ship|bill|order/);
    }
  });
});

describe("lock names", () => {
  it("never leave their prefix or their hash tag (any valid prefix and name)", () => {
    const valid = nameCase.filter((c) => c.valid).map((c) => c.value as string);
    fc.assert(
      fc.property(valid, valid, valid, (prefix, name, otherName) => {
        const keys = lockKeys(prefix, name);
        const all = [keys.lock, keys.fence, keys.operation("0123456789abcdef01234567")];
        for (const key of all) {
          expect(key.startsWith(`${prefix}:{${name}}`)).toBe(true);
          expect(hashTag(key)).toBe(name);
        }
        // guard: the property draws both names; when they coincide there is no other lock.
        if (otherName !== name) {
          const others = lockKeys(prefix, otherName);
          const theirs = [others.lock, others.fence, others.operation("0123456789abcdef01234567")];
          for (const key of all) expect(theirs).not.toContain(key);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("that Redis would store alike are refused (a lone surrogate becomes U+FFFD)", () => {
    const client = new LockClient({ redis: { eval: async () => 0, evalsha: async () => 0 } });
    expect(isValidName("a\ud800")).toBe(false);
    expect(() => client.lock("a\ud800")).toThrow(/well-formed/);
    expect(() => client.lock("a\udbff")).toThrow(/well-formed/);
    expect(client.lock("a\ud83d\ude00").name).toBe("a😀");
  });
});

describe("Lua scripts", () => {
  it("take every key from KEYS, name every command literally, and run no dynamic code", async () => {
    const scripts = await lockScripts();
    expect(scripts.length).toBeGreaterThanOrEqual(5);
    const problems = scripts.flatMap((script) =>
      luaProblems(script.source).map((problem) => `${script.name}: ${problem}`),
    );
    expect(problems).toEqual([]);
  });

  it("the checker itself catches a key built by concatenation or a command from data", () => {
    expect(luaProblems("return redis.call('GET', KEYS[1] .. ':x')")).not.toEqual([]);
    expect(luaProblems("return redis.call('DEL', 'edgelock:{' .. ARGV[1] .. '}')")).not.toEqual([]);
    expect(luaProblems("return redis.call(ARGV[1], KEYS[1])")).not.toEqual([]);
    expect(
      luaProblems("local k = KEYS[1]\nk = k .. ARGV[1]\nreturn redis.call('GET', k)"),
    ).not.toEqual([]);
    expect(luaProblems("return loadstring(ARGV[1])()")).not.toEqual([]);
    expect(luaProblems("local k = KEYS[2]\nreturn redis.call('GET', k)")).toEqual([]);
    // The Lua derives them as LockKeys does.
    const keys = lockKeys("edgelock", "orders:42");
    expect(keys.operation("ab12")).toBe(`${keys.lock}:op:ab12`);
    expect(keys.wake("ab12")).toBe(`${keys.lock}:wake:ab12`);
    // The hand-off's derived keys: only the lock key's own suffixes, nothing else.
    expect(luaProblems("return redis.call('SET', lockKey .. ':op:' .. id, 1)")).toEqual([]);
    expect(luaProblems("return redis.call('SET', lockKey .. ':x:' .. id, 1)")).not.toEqual([]);
    expect(luaProblems("return redis.call('SET', ARGV[1] .. ':op:' .. id, 1)")).not.toEqual([]);
  });
});

describe.each(backendKindsUnderTest())("on %s", (kind) => {
  const bed = useTestBed(kind);

  it("refuses to release or extend a lock for anyone but its owner", async () => {
    const mine = bed.client();
    const theirs = bed.client({ prefix: mine.prefix });
    const held = await mine.lock("mine").acquire({ leaseMs: 5_000 });
    const impostors = [
      LockClient.newOwner(),
      held.owner.toUpperCase(),
      `${held.owner}0`,
      held.owner.slice(0, 31),
      held.owner.slice(0, 16),
    ].filter((owner) => owner !== held.owner);
    for (const owner of impostors) {
      await expect(theirs.lock("mine").release({ owner })).rejects.toBeInstanceOf(LockNotHeldError);
    }
    expect(await theirs.lock("mine").holdCount(held.owner)).toBe(1);

    // A handle whose lease ran out touches nothing of the next holder's.
    const stale = await theirs.lock("brief").acquire({ leaseMs: 150 });
    await until(async () => !(await mine.lock("brief").isLocked()), 3_000);
    const current = await mine.lock("brief").acquire({ leaseMs: 1_000 });
    await expect(stale.extend(60_000)).rejects.toBeInstanceOf(LockNotHeldError);
    expect(await mine.lock("brief").remainingTtl()).toBeLessThanOrEqual(1_000);
    await expect(stale.release()).rejects.toBeInstanceOf(LockNotHeldError);
    expect(await mine.lock("brief").holdCount(current.owner)).toBe(1);
    await current.release();
    await held.release();
  });

  it("never shows the REST token in errors, events or console output", async () => {
    const logged: string[] = [];
    const methods = ["log", "info", "warn", "error", "debug"] as const;
    const spies = methods.map((method) =>
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
        logged.push(args.map((arg) => textOf(arg)).join(" "));
      }),
    );
    const wrongToken = LockClient.newOwner();
    try {
      let current: RedisLike = bed.redis();
      const refused = new Redis({
        url: bed.server.url,
        token: wrongToken,
        enableTelemetry: false,
        retry: { retries: 1, backoff: () => 5 },
      });
      const switchable: RedisLike = {
        eval: (script, keys, args) => current.eval(script, keys, args),
        evalsha: (sha, keys, args) => current.evalsha(sha, keys, args),
      };
      const client = new LockClient({
        redis: switchable,
        prefix: freshPrefix(),
        watchdogTimeoutMs: 300,
      });
      const seen: unknown[] = [];
      const events: LockEvent[] = [];
      client.on("renewalFailed", (event) => events.push(event));
      client.on("lockLost", (event) => events.push(event));
      const watched = await client.lock("watched").acquire();
      const leased = await client.lock("leased").acquire({ leaseMs: 5_000 });

      current = refused; // from now on every request is refused: 401
      await until(() => watched.signal.aborted, 5_000);
      seen.push(watched.signal.reason);
      const calls = [
        () => client.lock("other").acquire({ leaseMs: 1_000 }),
        () => client.lock("other").tryAcquire(),
        () => leased.extend(1_000),
        () => leased.release(),
        () => client.lock("other").isLocked(),
        () => client.lock("other").forceRelease(),
        () => client.lock("other").release({ owner: leased.owner }),
        () => client.withLock("other", async () => {}),
      ];
      for (const call of calls) {
        const outcome = await call().then(
          () => "resolved",
          (error: unknown) => error,
        );
        seen.push(outcome);
      }

      expect(seen.filter((outcome) => !(outcome instanceof Error))).toEqual([]);
      expect(seen.filter((outcome) => outcome instanceof LockBackendError)).toHaveLength(
        calls.length,
      );
      expect(events.map((event) => event.type)).toContain("renewalFailed");
      expect(events.map((event) => event.type)).toContain("lockLost");
      for (const item of [...seen, ...events, ...logged]) {
        const text = textOf(item);
        expect(text).not.toContain(bed.server.token);
        expect(text).not.toContain(wrongToken);
      }
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it("stores hostile names under their own hash tag, with the scripts' source unchanged", async () => {
    const prefix = freshPrefix();
    const redis = bed.redis();
    const scripts = await lockScripts();
    // As sent with or without Upstash's key-locking flag.
    const variants = scripts.flatMap((script) => [script, script.keyLocking]);
    const sources = new Set(variants.map((script) => script.source));
    const shas = new Set(await Promise.all(variants.map((script) => script.sha1())));
    const sent: { kind: "eval" | "evalsha"; body: string; keys: string[] }[] = [];
    const recording: RedisLike = {
      eval: (script, keys, args) => {
        sent.push({ kind: "eval", body: script, keys });
        return redis.eval(script, keys, args);
      },
      evalsha: (sha, keys, args) => {
        sent.push({ kind: "evalsha", body: sha, keys });
        return redis.evalsha(sha, keys, args);
      },
    };
    const sentinel = `${prefix}-sentinel`;
    await redis.set(sentinel, "alive");
    const client = new LockClient({ redis: recording, prefix });
    for (const name of HOSTILE_NAMES) {
      const lock = client.lock(name);
      const outer = await lock.acquire({ leaseMs: 5_000 });
      const inner = await lock.acquire({ leaseMs: 5_000, owner: outer.owner });
      expect(inner.fencingToken).toBe(outer.fencingToken);
      await outer.extend(5_000);
      expect(await lock.holdCount(outer.owner)).toBe(2);
      await inner.release();
      await outer.release();
      expect(await lock.isLocked()).toBe(false);
    }
    expect(await redis.get(sentinel)).toBe("alive");
    // On the wire: only the known scripts, and only keys of the names' own hash tags. The hand-off
    // channels (declared in KEYS, never stored) carry the name as it survives a subscribe URL.
    const names = new Set([...HOSTILE_NAMES, ...HOSTILE_NAMES.map(subscribableChannel)]);
    for (const request of sent) {
      if (request.kind === "eval") expect(sources.has(request.body)).toBe(true);
      else expect(shas.has(request.body)).toBe(true);
      for (const key of request.keys) {
        expect(key.startsWith(`${prefix}:{`)).toBe(true);
        expect(names.has(hashTag(key))).toBe(true);
      }
    }
    const stored = await redis.keys(`${prefix}:*`);
    expect(stored.length).toBeGreaterThan(0);
    for (const key of stored) expect(names.has(hashTag(key))).toBe(true);
    // Each name has its own fence counter: none collided with another.
    const fences = stored.filter((key) => key.endsWith("}:fence"));
    expect(new Set(fences.map(hashTag)).size).toBe(HOSTILE_NAMES.length);
  });
});

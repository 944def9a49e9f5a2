/**
 * MultiLock and RedLock inside workerd, through @upstash/redis/cloudflare, against the local
 * servers. Several "databases" are separate Redis clients with separate key prefixes (logical
 * databases); a database that is down is a RedisLike whose requests fail.
 */

import { env } from "cloudflare:workers";
import { Redis } from "@upstash/redis/cloudflare";
import { describe, expect, it } from "vitest";
import {
  LockBackendError,
  LockClient,
  QuorumUnreachableError,
  type RedisLike,
  RedLock,
} from "../../src/index.js";

const servers: { kind: string; url: string; token: string }[] = JSON.parse(
  env.EDGELOCK_TEST_SERVERS,
);
let prefixes = 0;

/** A Redis client that counts the script calls it sends (each one HTTP request here). */
function counted(server: { url: string; token: string }) {
  const redis = new Redis({ url: server.url, token: server.token });
  const counter = { calls: 0 };
  const port: RedisLike = {
    eval: (script, keys, args) => {
      counter.calls += 1;
      return redis.eval(script, keys, args);
    },
    evalsha: (sha, keys, args) => {
      counter.calls += 1;
      return redis.evalsha(sha, keys, args);
    },
  };
  return { port, counter };
}

/** A database that is down: every request fails as a lost connection would. */
function down(): RedisLike {
  const refused = () => Promise.reject(new Error("fetch failed: connection refused"));
  return { eval: refused, evalsha: refused };
}

function clientOn(redis: RedisLike, prefix?: string) {
  prefixes += 1;
  return new LockClient({
    redis,
    prefix: prefix ?? `w${Date.now().toString(36)}m${prefixes}`,
    retries: 0,
  });
}

const until = async (predicate: () => boolean, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe.each(servers)("MultiLock and RedLock in workerd on $kind", (server) => {
  it("MultiLock on one database: one request to acquire, one to release, all or nothing", async () => {
    const { port, counter } = counted(server);
    const client = clientOn(port);
    const locks = ["a", "b", "c"].map((name) => client.lock(name));
    const multi = client.multiLock(locks);
    const before = counter.calls;
    const held = await multi.acquire({ leaseMs: 5_000 });
    expect(counter.calls - before).toBe(1);
    expect(held.fencingTokens).toEqual([1, 1, 1]);
    const mid = counter.calls;
    await held.release();
    expect(counter.calls - mid).toBe(1);

    const other = await locks[1]!.acquire({ leaseMs: 5_000 });
    expect(await multi.tryAcquire({ leaseMs: 5_000 })).toBeNull();
    expect(await locks[0]!.isLocked()).toBe(false);
    expect(await locks[2]!.isLocked()).toBe(false);
    await other.release();
  });

  it("MultiLock across databases rolls back when one of them is down", async () => {
    const up = clientOn(new Redis({ url: server.url, token: server.token }));
    const x = up.lock("x");
    const multi = up.multiLock([x, clientOn(down()).lock("y")]);
    await expect(multi.acquire({ leaseMs: 5_000 })).rejects.toBeInstanceOf(LockBackendError);
    expect(await x.isLocked()).toBe(false);
  });

  it("RedLock holds on a majority, survives one database down, refuses with two", async () => {
    const prefix = `w${Date.now().toString(36)}r${++prefixes}`;
    const databases = [0, 1, 2].map((i) =>
      clientOn(new Redis({ url: server.url, token: server.token }), `${prefix}db${i}`),
    );
    const lock = new RedLock(databases).lock("orders:7");
    const held = await lock.acquire({ leaseMs: 5_000 });
    await until(() => held.heldOn === 3);
    expect(held.fencingTokens).toEqual([1, 1, 1]);
    expect(held.validityMs).toBeGreaterThan(0);
    expect(held.validityMs).toBeLessThanOrEqual(5_000 - 52);
    const rival = new RedLock(
      [0, 1, 2].map((i) =>
        clientOn(new Redis({ url: server.url, token: server.token }), `${prefix}db${i}`),
      ),
    ).lock("orders:7");
    expect(await rival.tryAcquire({ leaseMs: 5_000 })).toBeNull();
    await held.release();
    for (const db of databases) expect(await db.lock("orders:7").isLocked()).toBe(false);

    const oneDown = new RedLock([databases[0]!, databases[1]!, clientOn(down())]).lock("orders:8");
    const survived = await oneDown.acquire({ leaseMs: 5_000 });
    expect(survived.fencingTokens).toEqual([1, 1, null]);
    await survived.release();

    const twoDown = new RedLock([databases[0]!, clientOn(down()), clientOn(down())]).lock(
      "orders:9",
    );
    await expect(twoDown.acquire({ leaseMs: 5_000, waitMs: 5_000 })).rejects.toBeInstanceOf(
      QuorumUnreachableError,
    );
    expect(await databases[0]!.lock("orders:9").isLocked()).toBe(false);
  });
});

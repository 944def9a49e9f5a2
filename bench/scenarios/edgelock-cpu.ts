/**
 * edgelock's own CPU per acquire+release, without any transport: the LockClient runs against an
 * in-memory RedisLike that answers every script at once with the reply Redis would give. What is
 * left is the library's work (options, owner, ids, handle, reply decoding).
 */
import { LockClient } from "../../src/index.js";
import { ACQUIRE } from "../../src/locks/exclusive/lock.js";
import type { RedisLike } from "../../src/transport/redis-like.js";

/**
 * Answers the acquire script (known by its source or SHA-1, not by its key count, which changes
 * with the script) with a first hold, and every other script (the release) with "released".
 */
async function cannedRedis(): Promise<RedisLike> {
  let fence = 0;
  // Either text may be sent: the plain one, or the one flagged for Upstash's key locking.
  const texts = new Set([ACQUIRE.source, ACQUIRE.keyLocking.source]);
  const shas = new Set([await ACQUIRE.sha1(), await ACQUIRE.keyLocking.sha1()]);
  const answer = async (isAcquire: boolean) => (isAcquire ? [1, ++fence, 1, 10_000] : [1, 0]);
  return {
    eval: (script) => answer(texts.has(script)),
    evalsha: (sha) => answer(shas.has(sha)),
  };
}

export async function measureEdgelockOwnCpu(ops: number): Promise<number> {
  const lock = new LockClient({ redis: await cannedRedis(), prefix: "bench" }).lock("cpu");
  for (let i = 0; i < 100; i++) await (await lock.acquire({ leaseMs: 10_000 })).release();
  const before = process.cpuUsage();
  for (let i = 0; i < ops; i++) await (await lock.acquire({ leaseMs: 10_000 })).release();
  const cpu = process.cpuUsage(before);
  return (cpu.user + cpu.system) / 1000 / ops;
}

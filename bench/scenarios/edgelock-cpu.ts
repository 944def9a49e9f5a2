/**
 * edgelock's own CPU per acquire+release, without any transport: the LockClient runs against an
 * in-memory RedisLike that answers every script at once with the reply Redis would give. What is
 * left is the library's work (options, owner, ids, handle, reply decoding).
 */
import { LockClient } from "../../src/index.js";
import type { RedisLike } from "../../src/transport/redis-like.js";

/** Acquire has 5 keys (lock, fence, operation record, pace, pollers), release 3. */
function cannedRedis(): RedisLike {
  let fence = 0;
  const answer = async (keys: string[]) => (keys.length === 5 ? [1, ++fence, 1, 10_000] : [1, 0]);
  return {
    eval: (_script, keys) => answer(keys),
    evalsha: (_sha, keys) => answer(keys),
  };
}

export async function measureEdgelockOwnCpu(ops: number): Promise<number> {
  const lock = new LockClient({ redis: cannedRedis(), prefix: "bench" }).lock("cpu");
  for (let i = 0; i < 100; i++) await (await lock.acquire({ leaseMs: 10_000 })).release();
  const before = process.cpuUsage();
  for (let i = 0; i < ops; i++) await (await lock.acquire({ leaseMs: 10_000 })).release();
  const cpu = process.cpuUsage(before);
  return (cpu.user + cpu.system) / 1000 / ops;
}

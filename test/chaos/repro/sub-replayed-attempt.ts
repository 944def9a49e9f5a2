/**
 * Reproduction (found by the chaos run's fair-sub kind): a copy of the attempt that registered a
 * subscribed waiter, reaching Redis after that waiter heard its grant and released the hold,
 * takes the lock a second time for the same acquisition (operation id). With a blocking pop it
 * replays instead (the hand-off writes the operation record); over a subscription the grant is
 * recorded only in the parked hash, and that record goes when the lock is next freed.
 *
 *   npx tsx test/chaos/repro/sub-replayed-attempt.ts [embedded|redis-server] [lock|fairLock|writeLock] [sub|pop]
 *
 * The copy is what @upstash/redis sends when it re-sends a request whose answer was lost (the
 * waiter does not wait for that answer once its word came), or a slow network's late delivery.
 */
import { Redis } from "@upstash/redis";
import { startDevServer } from "../../../dev/index.js";
import { LockClient, type LockHandle, type RedisLike } from "../../../src/index.js";
import { ACQUIRE_ARGS } from "../../../src/locks/exclusive/lock.js";
import { STREAM_LINGER_MS } from "../../../src/wait/push/client-state.js";

const backend = (process.argv[2] ?? "embedded") as "embedded" | "redis-server";
const kind = (process.argv[3] ?? "lock") as "lock" | "fairLock" | "writeLock";
const wakeBy = (process.argv[4] ?? "sub") === "pop" ? "pop" : "subscription";
const server = await startDevServer({ backend, profile: wakeBy === "pop" ? "redis" : "upstash" });
const redis = () => new Redis({ url: server.url, token: server.token, enableTelemetry: false });
const prefix = `repro${Date.now().toString(36)}`;

/** The waiter's client, recording every script it sends (to send a copy later). */
const sent: { script?: string; sha?: string; keys: string[]; args: string[] }[] = [];
const waiterRedis = redis();
const recording: RedisLike = {
  eval: (script, keys, args) => {
    sent.push({ script, keys, args });
    return waiterRedis.eval(script, keys, args);
  },
  evalsha: (sha, keys, args) => {
    sent.push({ sha, keys, args });
    return waiterRedis.evalsha(sha, keys, args);
  },
  exec: (command) => waiterRedis.exec(command),
  subscribe: (channel) => waiterRedis.subscribe(channel),
};
const keyLocking = wakeBy === "pop" ? { scriptKeyLocking: false } : {};
const holder = new LockClient({ redis: redis(), prefix, ...keyLocking });
const waiter = new LockClient({
  redis: recording,
  prefix,
  ...keyLocking,
  wait: { mode: "push", wakeBy, parkMs: 5_000, claimMs: 2_000 },
});
const lockOf = (client: LockClient) =>
  kind === "lock"
    ? client.lock("job")
    : kind === "fairLock"
      ? client.fairLock("job")
      : client.readWriteLock("job").writeLock();

const held: LockHandle = await lockOf(holder).acquire({ leaseMs: 10_000 });
const waiting = lockOf(waiter).acquire({ leaseMs: 10_000, waitMs: 20_000 });
// Registered (parked) once an attempt with claimMs > 0 was answered busy.
const parkedKey = `${prefix}:{job}:parked`;
for (let i = 0; i < 500; i++) {
  const parked = await redis().hgetall<Record<string, string>>(parkedKey);
  if (parked && Object.keys(parked).length > 0) break;
  await new Promise((resolve) => setTimeout(resolve, 10));
}
await held.release();
const handle = await waiting;
console.log(`${kind} (${wakeBy}): the waiter holds fence ${handle.fencingToken}`);
await handle.release();
console.log(`released; lock held: ${await lockOf(holder).isLocked()}`);

// The registering attempt (an acquire script sent with claimMs > 0), delivered once more.
const CLAIM_MS = ACQUIRE_ARGS.indexOf("claimMs");
const WAKE_BY = ACQUIRE_ARGS.indexOf("wakeBy");
const registering = sent.filter(
  ({ args }) =>
    (args[WAKE_BY]?.startsWith("sub") || args[WAKE_BY] === "pop") && Number(args[CLAIM_MS]) > 0,
);
const copy = registering[registering.length - 1]!;
const reply =
  copy.script === undefined
    ? await redis().evalsha(copy.sha!, copy.keys, copy.args)
    : await redis().eval(copy.script, copy.keys, copy.args);
const holds = await lockOf(holder).holdCount(handle.owner);
console.log(`copy of the registering attempt answered ${JSON.stringify(reply)}`);
console.log(
  holds > 0
    ? `BUG: the finished acquisition's owner holds the lock again (hold count ${holds}, fence ${await redis().get(`${prefix}:{job}:fence`)})`
    : "ok: the copy took nothing",
);
// The waiter's stream lingers a moment after its last wait: let it end before the server does.
await new Promise((resolve) => setTimeout(resolve, STREAM_LINGER_MS + 200));
await server.close();
process.exit(holds > 0 ? 1 : 0);

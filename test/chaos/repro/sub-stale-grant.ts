/**
 * Reproduction (found by the chaos run's lock-sub kind: "server holds every hold its client
 * trusts" and "a trusted hold is the lock's current one"): a subscribed waiter trusts a grant
 * that lapsed long before, while another owner holds the lock.
 *
 * A grant's word says `<ms since registration>`, counted from the registration that was current
 * when the grant was made; the waiter times it from its *latest* registering attempt. When the
 * word comes late (a slow stream), the grant lapses unclaimed, another owner takes the lock and
 * the grant's record goes with the next release, the waiter's next attempt (same operation id)
 * finds no record and registers again; the late word then arrives, is timed from that newer
 * registration, and is trusted: the waiter returns a handle with the lapsed grant's token.
 *
 *   npx tsx test/chaos/repro/sub-stale-grant.ts [embedded|redis-server] [lock|fairLock|writeLock]
 *
 * Exit 1 when the waiter got a hold the server does not have.
 */
import { Redis } from "@upstash/redis";
import { startDevServer } from "../../../dev/index.js";
import { LockClient, type LockHandle, type RedisLike } from "../../../src/index.js";
import type { ChannelSubscription, SubscriptionEvents } from "../../../src/transport/redis-like.js";
import { STREAM_LINGER_MS } from "../../../src/wait/push/client-state.js";

const backend = (process.argv[2] ?? "embedded") as "embedded" | "redis-server";
const kind = (process.argv[3] ?? "lock") as "lock" | "fairLock" | "writeLock";
const server = await startDevServer({ backend, profile: "upstash" });
const redis = () => new Redis({ url: server.url, token: server.token, enableTelemetry: false });
const prefix = `repro${Date.now().toString(36)}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every word on the waiter's stream reaches it this much later (in order). */
const WORD_DELAY_MS = 600;
const waiterRedis = redis();
const slowWords: RedisLike = {
  eval: (script, keys, args) => waiterRedis.eval(script, keys, args),
  evalsha: (sha, keys, args) => waiterRedis.evalsha(sha, keys, args),
  subscribe(channel): ChannelSubscription {
    const inner = waiterRedis.subscribe<unknown>(channel);
    return {
      on<T extends keyof SubscriptionEvents>(
        type: T,
        listener: (event: SubscriptionEvents[T]) => void,
      ) {
        if (type !== "message") {
          inner.on(type, listener as (event: unknown) => void);
          return;
        }
        inner.on("message", (event) => {
          setTimeout(() => (listener as (e: typeof event) => void)(event), WORD_DELAY_MS);
        });
      },
      unsubscribe: () => inner.unsubscribe(),
    };
  },
};
const holder = new LockClient({ redis: redis(), prefix });
const intruder = new LockClient({ redis: redis(), prefix });
const waiter = new LockClient({
  redis: slowWords,
  prefix,
  wait: { mode: "push", wakeBy: "subscription", parkMs: 500, claimMs: 200 },
});
const lockOf = (client: LockClient) =>
  kind === "lock"
    ? client.lock("job")
    : kind === "fairLock"
      ? client.fairLock("job")
      : client.readWriteLock("job").writeLock();

const held: LockHandle = await lockOf(holder).acquire({ leaseMs: 10_000 });
let waiterHandle: LockHandle | undefined;
let resolvedAt = 0;
const waiting = lockOf(waiter)
  .acquire({ leaseMs: 10_000, waitMs: 5_000 })
  .then((handle) => {
    waiterHandle = handle;
    resolvedAt = Date.now();
    return handle;
  });
// Registered to be told by word (` sub`).
const parkedKey = `${prefix}:{job}:parked`;
for (;;) {
  const parked = await redis().hgetall<Record<string, string>>(parkedKey);
  if (Object.values(parked ?? {}).some((value) => / sub\d+\.\d+$/.test(String(value)))) break;
  await sleep(5);
}
const t0 = Date.now();
await held.release(); // grants the waiter the lock for 200 ms; its word comes 600 ms late
console.log(
  `+${Date.now() - t0} ms: released; the waiter was granted fence ${held.fencingToken + 1}`,
);
await sleep(250); // the grant lapsed unclaimed
const first = await lockOf(intruder).tryAcquire({ leaseMs: 10_000 });
await first?.release(); // frees the lock: the grant's record goes
const second = await lockOf(intruder).tryAcquire({ leaseMs: 10_000 });
console.log(
  `+${Date.now() - t0} ms: another owner holds the lock, fence ${second?.fencingToken} (took ${first?.fencingToken} before)`,
);
await Promise.race([waiting.catch(() => {}), sleep(2_000)]);
const trusted = waiterHandle;
let stale = false;
if (trusted === undefined) {
  console.log("ok: the waiter trusts no hold");
} else {
  const waiterHolds = await lockOf(holder).holdCount(trusted.owner);
  stale = waiterHolds === 0;
  console.log(
    `+${resolvedAt - t0} ms: the waiter returned a handle with fence ${trusted.fencingToken}, ` +
      `valid until +${trusted.expiresAt - t0} ms; the server shows it holding ${waiterHolds} ` +
      `(the other owner holds fence ${second?.fencingToken})`,
  );
  if (waiterHolds === 0) console.log("BUG: the waiter trusts a hold the server does not have");
}
await second?.release().catch(() => {});
await trusted?.release().catch(() => {});
await sleep(STREAM_LINGER_MS + 200);
await server.close();
process.exit(stale ? 1 : 0);

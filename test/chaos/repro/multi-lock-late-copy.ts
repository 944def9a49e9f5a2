/**
 * Minimal reproduction of what round-3 chaos found in the MultiLock (seeds 20260915 and
 * 20260917, `--kind multi --short --ops 300`): a late copy of a busy acquisition attempt takes
 * the members again after the acquisition succeeded by a later attempt and was released.
 *
 *   npx tsx test/chaos/repro/multi-lock-late-copy.ts [redis-server|embedded]
 *
 * The MultiLock draws fresh operation ids for every attempt (`attemptAll`), and a busy attempt
 * records nothing, so a copy of it that reaches Redis late runs as a new acquisition instead of
 * replaying the one that succeeded (the plain, fair and read-write locks share one id across the
 * attempts of one acquisition). Exits 1 while the owner is left holding after its release.
 */
import { Redis } from "@upstash/redis";
import { startDevServer } from "../../../dev/index.js";
import { LockClient } from "../../../src/index.js";
import { recordingRedis } from "../../support/recording-redis.js";

const backend = process.argv[2] === "embedded" ? "embedded" : "redis-server";
const server = await startDevServer({ backend });
try {
  const redis = () => new Redis({ url: server.url, token: server.token, enableTelemetry: false });
  const prefix = `repro${Date.now().toString(36)}`;
  const recording = recordingRedis(redis());
  const waiter = new LockClient({ redis: recording.client, prefix });
  const other = new LockClient({ redis: redis(), prefix });

  // Another owner holds one member; it lets go after 150 ms.
  const blocker = await other.lock("a").acquire({ leaseMs: 30_000 });
  setTimeout(() => void blocker.release(), 150);

  const multi = waiter.multiLock([waiter.lock("a"), waiter.lock("b")]);
  const before = recording.calls.length;
  const held = await multi.acquire({ leaseMs: 30_000, waitMs: 5_000 });
  const attempts = recording.calls.slice(before);
  console.log(`acquired after ${attempts.length} script calls (the first one busy)`);
  await held.release();
  const afterRelease = await Promise.all(
    ["a", "b"].map((name) => other.lock(name).isHeldBy(held.owner)),
  );
  console.log(`after release: owner holds a=${afterRelease[0]}, b=${afterRelease[1]}`);

  await attempts[0]!(); // the first, busy, attempt reaches Redis again only now
  const afterCopy = await Promise.all(
    ["a", "b"].map((name) => other.lock(name).isHeldBy(held.owner)),
  );
  console.log(
    `after the late copy of the busy attempt: owner holds a=${afterCopy[0]}, b=${afterCopy[1]}`,
  );
  const counts = await Promise.all(
    ["a", "b"].map((name) => other.lock(name).holdCount(held.owner)),
  );
  console.log(`hold counts: a=${counts[0]}, b=${counts[1]}`);
  if (afterCopy.some(Boolean)) {
    console.log("DRIFT: a released MultiLock is held again by its owner (nobody holds a handle)");
    process.exitCode = 1;
  } else {
    console.log("ok: the late copy took nothing");
  }
} finally {
  await server.close();
}

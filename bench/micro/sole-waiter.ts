/**
 * Issue 43's sole waiter: a holder takes the lock (a lease, or watchdog mode), another client on
 * the defaults waits with `waitMs` 45 s, and the holder releases after 44 s. Prints the waiter's
 * attempts, the streams it opened and the pops it sent (the requests of its wait), and how soon
 * after the release it held the lock. The local server, embedded engine.
 *
 *   npx tsx bench/micro/sole-waiter.ts [--profile upstash|redis] [--watchdog] [--lease 60000]
 *     [--release-after 44000] [--wait 45000]
 */
import { parseArgs } from "node:util";
import { Redis } from "@upstash/redis";
import { startDevServer } from "../../dev/index.js";
import { LockClient, type LockClientOptions } from "../../src/index.js";
import { sleep } from "../../src/platform.js";
import { STREAM_LINGER_MS } from "../../src/wait/push/client-state.js";

const { values } = parseArgs({
  options: {
    profile: { type: "string", default: "upstash" },
    watchdog: { type: "boolean", default: false },
    lease: { type: "string", default: "60000" },
    "release-after": { type: "string", default: "44000" },
    wait: { type: "string", default: "45000" },
  },
});
const profile = values.profile === "redis" ? "redis" : "upstash";
const releaseAfterMs = Number(values["release-after"]);

const server = await startDevServer({ backend: "embedded", profile });
const client = (options: Partial<LockClientOptions> = {}) =>
  new LockClient({
    redis: new Redis({ url: server.url, token: server.token, enableTelemetry: false }),
    prefix: "sole-waiter",
    ...options,
  });
const lock = client().lock("job");
const held = values.watchdog
  ? await lock.acquire()
  : await lock.acquire({ leaseMs: Number(values.lease) });
let attempts = 0;
const waiter = client({
  observer: {
    onAttempt: (script) => {
      if (script.name === "lock.acquire") attempts += 1;
    },
  },
});
server.stats.reset();
let releasedAt = Number.POSITIVE_INFINITY;
const releasing = new Promise<void>((resolve) =>
  setTimeout(async () => {
    releasedAt = Date.now();
    await held.release();
    resolve();
  }, releaseAfterMs),
);
process.stdout.write(`waiting ${releaseAfterMs / 1000} s for the release…\n`);
const handle = await waiter.lock("job").acquire({ leaseMs: 10_000, waitMs: Number(values.wait) });
const servedAfterMs = Date.now() - releasedAt;
await releasing;
const { streams, commandsByName } = server.stats.snapshot();
const pops = commandsByName.BLPOP ?? 0;
await handle.release();
console.log(
  JSON.stringify({
    profile,
    holder: values.watchdog ? "watchdog" : `lease ${values.lease} ms`,
    attempts,
    subscribes: streams.subscriptions,
    pops,
    requests: attempts + streams.subscriptions + pops,
    servedAfterReleaseMs: servedAfterMs,
  }),
);
// The clients' streams end STREAM_LINGER_MS after their last waiter; closing the server under
// them would fail them ("Stream reading error" from @upstash/redis).
await sleep(STREAM_LINGER_MS + 250);
await server.close();
process.exit(0);

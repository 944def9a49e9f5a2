/**
 * The conformance suite: one plain-JS module, the same text in every runtime (Node, Bun, Deno,
 * Vercel's Edge runtime VM, workerd), against the packed package and a running `edgelock dev`.
 * It uses only what every runtime has (fetch, Request, timers) and the packages' public entries.
 *
 * runConformance({ redis, prefix }) resolves with one row per feature:
 *   { feature, status: "ok" | "unavailable" | "fail", detail }
 * "unavailable" is a LockScopeUnavailableError (no AsyncLocalStorage): the runner decides per
 * runtime whether it was expected, and checks its words.
 */
import { isEdgelockError, LockClient } from "edgelock";
import { concurrencyLimit, idempotency, withLock } from "edgelock/hono";
import { inspectorHandler } from "edgelock/inspector";
import { Hono } from "hono";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class CheckFailed extends Error {}

function check(ok, what) {
  if (!ok) throw new CheckFailed(what);
}

/** Each feature: its name and a function of (ctx) that throws on failure, else returns a detail. */
const FEATURES = [
  [
    "lock",
    async ({ client, other }) => {
      const lock = client.lock("orders:1");
      const outer = await lock.acquire({ leaseMs: 10_000 });
      const inner = await lock.acquire({ leaseMs: 10_000, owner: outer.owner });
      check((await lock.holdCount(outer.owner)) === 2, "the same owner re-enters");
      check(inner.fencingToken === outer.fencingToken, "a re-entry keeps the fencing token");
      check((await other.lock("orders:1").tryAcquire()) === null, "another owner is refused");
      await inner.release();
      await outer.release();
      check(!(await lock.isLocked()), "free after both releases");
      return `re-entry, fencing token ${outer.fencingToken}`;
    },
  ],
  [
    "contended lock",
    async ({ client }) => {
      let inside = 0;
      let most = 0;
      let counter = 0;
      const tokens = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const held = await client.lock("counter").acquire({ leaseMs: 10_000, waitMs: 20_000 });
          inside++;
          most = Math.max(most, inside);
          const read = counter;
          await sleep(20);
          counter = read + 1;
          inside--;
          await held.release();
          return held.fencingToken;
        }),
      );
      check(most === 1, `at most one holder at a time (saw ${most})`);
      check(counter === 6, `six read-modify-writes, none lost (counter ${counter})`);
      check(new Set(tokens).size === 6, "six distinct fencing tokens");
      return "6 contenders, one at a time";
    },
  ],
  [
    "fair FIFO",
    async ({ client }) => {
      const queue = client.fairLock("queue");
      const first = await queue.acquire({ leaseMs: 10_000 });
      const served = [];
      const waiters = [];
      for (const name of ["W1", "W2", "W3"]) {
        waiters.push(
          queue.acquire({ leaseMs: 10_000, waitMs: 20_000 }).then(async (held) => {
            served.push(name);
            await held.release();
          }),
        );
        await sleep(300); // each waiter queued before the next
      }
      await first.release();
      await Promise.all(waiters);
      check(served.join(",") === "W1,W2,W3", `served in arrival order (got ${served.join(",")})`);
      return "3 waiters served in arrival order";
    },
  ],
  [
    "read-write",
    async ({ client }) => {
      const doc = client.readWriteLock("doc");
      const one = await doc.readLock().acquire({ leaseMs: 10_000 });
      const two = await doc.readLock().acquire({ leaseMs: 10_000 });
      check(
        (await doc.writeLock().tryAcquire({ leaseMs: 10_000 })) === null,
        "readers keep a writer out",
      );
      await one.release();
      await two.release();
      const write = await doc.writeLock().acquire({ leaseMs: 10_000, waitMs: 5_000 });
      check(
        (await doc.readLock().tryAcquire({ leaseMs: 10_000 })) === null,
        "a writer keeps readers out",
      );
      await write.release();
      return "2 readers together, then a writer alone";
    },
  ],
  [
    "semaphore",
    async ({ client }) => {
      const api = client.semaphore("api", { initialPermits: 2 });
      const one = await api.acquire({ leaseMs: 10_000 });
      const two = await api.acquire({ leaseMs: 10_000 });
      check(one.fencingToken < two.fencingToken, "permit holds get growing fencing tokens");
      check((await api.tryAcquire({ leaseMs: 10_000 })) === null, "a full semaphore refuses");
      await one.release();
      await two.release();
      check((await api.availablePermits()) === 2, "every permit is back");
      return "2 permits";
    },
  ],
  [
    "latch",
    async ({ client }) => {
      const batch = client.countDownLatch("batch");
      check(await batch.trySetCount(2), "the latch is set");
      await batch.countDown();
      check(!(await batch.await({ waitMs: 0 })), "closed at 1");
      const opened = batch.await({ waitMs: 10_000 });
      await batch.countDown();
      check(await opened, "a waiter sees it open at 0");
      return "count 2, a waiter released at 0";
    },
  ],
  [
    "push waiting",
    async ({ client, redis, prefix }) => {
      const waiter = new LockClient({
        redis,
        prefix,
        scriptKeyLocking: true,
        wait: { mode: "push", wakeBy: "subscription" },
      });
      const held = await client.lock("job").acquire({ leaseMs: 30_000 });
      const waiting = waiter.lock("job").acquire({ leaseMs: 10_000, waitMs: 20_000 });
      await sleep(500);
      const releasedAt = Date.now();
      await held.release();
      const next = await waiting;
      const handOffMs = Date.now() - releasedAt;
      await next.release();
      check(next.fencingToken === held.fencingToken + 1, "the waiter holds next");
      // A 30 s lease: only the word on the channel (or a poll) can wake it this early.
      check(handOffMs < 5_000, `handed over by word (${handOffMs} ms after release)`);
      return `handed over ${handOffMs} ms after release (subscription)`;
    },
  ],
  [
    "client.scope()",
    async ({ client }) => {
      const count = await client.scope(async () => {
        const first = await client.lock("scoped").acquire({ leaseMs: 10_000 });
        const again = await client.lock("scoped").acquire({ leaseMs: 10_000 });
        const holds = await client.lock("scoped").holdCount(first.owner);
        await again.release();
        await first.release();
        return holds;
      });
      check(count === 2, "acquisitions in one scope share an owner");
      return "nested acquisitions re-enter";
    },
  ],
  [
    "Hono withLock()",
    async ({ client }) => {
      const app = new Hono();
      app.onError((error) => {
        throw error;
      });
      app.post(
        "/orders/:id",
        withLock({ client, key: (c) => `hono:${c.req.param("id")}`, leaseMs: 10_000 }),
        async (c) => {
          // The handler's own acquisition of the request's lock re-enters (one owner per request).
          const nested = await client.lock(`hono:${c.req.param("id")}`).acquire({ waitMs: 2_000 });
          await nested.release();
          return c.json({ fencingToken: c.get("lock").fencingToken });
        },
      );
      const res = await app.request("/orders/1", { method: "POST" });
      check(res.status === 200, `answered ${res.status}`);
      const body = await res.json();
      return `fencing token ${body.fencingToken}, the handler re-entered`;
    },
  ],
  [
    "idempotency()",
    async ({ client }) => {
      let runs = 0;
      const app = new Hono();
      app.post("/pay", idempotency({ client }), (c) => {
        runs++;
        return c.json({ payment: runs });
      });
      const send = () =>
        app.request("/pay", { method: "POST", headers: { "idempotency-key": "k-1" } });
      const first = await send();
      const second = await send();
      const bodies = [await first.text(), await second.text()];
      check(
        first.status === 200 && second.status === 200,
        `answered ${first.status}, ${second.status}`,
      );
      check(runs === 1, `the handler ran once (ran ${runs})`);
      check(bodies[0] === bodies[1], "the retry got the stored response");
      return "a retry replayed, the handler ran once";
    },
  ],
  [
    "concurrencyLimit()",
    async ({ client }) => {
      let releaseFirst;
      const gate = new Promise((resolve) => (releaseFirst = resolve));
      let entered;
      const inside = new Promise((resolve) => (entered = resolve));
      const app = new Hono();
      app.get(
        "/ai",
        concurrencyLimit({ client, name: "ai", permits: 1, leaseMs: 10_000 }),
        async (c) => {
          entered();
          await gate;
          return c.text("done");
        },
      );
      const first = app.request("/ai");
      await inside;
      const second = await app.request("/ai");
      releaseFirst();
      const firstRes = await first;
      await firstRes.text();
      check(second.status === 429, `the second at once answered ${second.status}`);
      check(firstRes.status === 200, `the first answered ${firstRes.status}`);
      return "1 permit: the second request got 429";
    },
  ],
  [
    "inspector handler",
    async ({ client }) => {
      const held = await client.lock("inspected").acquire({ leaseMs: 30_000 });
      try {
        const handler = inspectorHandler({ client, access: () => "read", names: ["inspected"] });
        const res = await handler(new Request("http://localhost/_edgelock/api/snapshot"));
        check(res.status === 200, `the snapshot answered ${res.status}`);
        const snapshot = await res.json();
        const seen = snapshot.locks.find((lock) => lock.name === "inspected");
        check(seen !== undefined, "the held lock is in the snapshot");
        const page = await handler(new Request("http://localhost/_edgelock/"));
        check(page.status === 200 && (await page.text()).includes("edgelock"), "the page");
        return "the page, and a held lock in the snapshot";
      } finally {
        await held.release();
      }
    },
  ],
];

/** The feature names, in the order the suite runs them. */
export const FEATURE_NAMES = FEATURES.map(([name]) => name);

/**
 * Runs every feature against `redis` (an `@upstash/redis` client on the dev server), keys under
 * `prefix` (one per runtime, so runs never meet); `only`, a list of feature names, runs those.
 */
export async function runConformance({ redis, prefix, only }) {
  const client = new LockClient({ redis, prefix });
  const other = new LockClient({ redis, prefix });
  const rows = [];
  for (const [feature, run] of FEATURES) {
    if (only !== undefined && !only.includes(feature)) continue;
    try {
      const detail = await run({ client, other, redis, prefix });
      rows.push({ feature, status: "ok", detail });
    } catch (error) {
      const unavailable = isEdgelockError(error) && error.name === "LockScopeUnavailableError";
      rows.push({
        feature,
        status: unavailable ? "unavailable" : "fail",
        detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
    }
  }
  return rows;
}

/**
 * Push hand-off over a subscription inside workerd, through @upstash/redis/cloudflare's
 * `subscribe()` against the local server on production Upstash's profile (pops do not block,
 * scripts run under the key-locking flag): the stream is read inside workerd, the release's word
 * wakes the waiter holding the lock (plain, fair, write), and a stream ends with its acquisition,
 * given up or not (a Worker's stream must not outlive the invocation that opened it).
 */

import { Redis } from "@upstash/redis/cloudflare";
import { describe, expect, it } from "vitest";
import { lockKeys } from "../../src/hold/script.js";
import {
  LockAbortedError,
  LockClient,
  type RedisLike,
  SemaphoreCapacityError,
} from "../../src/index.js";
import { semaphoreKeys } from "../../src/locks/semaphore/keys.js";
import { subscribeHearingEnd } from "../../src/transport/redis-like.js";
import { MAX_STREAMS_ON_WORKERS } from "../../src/wait/push/client-state.js";
import { sleepMs, TEST_SERVERS, until } from "./clients.js";

const servers = TEST_SERVERS;
let prefixes = 0;

function contenders(server: { url: string; token: string }) {
  prefixes += 1;
  const prefix = `ws${Date.now().toString(36)}${prefixes}`;
  const redis = () => new Redis({ url: server.url, token: server.token });
  // As a client of an upstash.io database would know from its URL.
  const holder = new LockClient({ redis: redis(), prefix, scriptKeyLocking: true });
  const waiter = new LockClient({
    redis: redis(),
    prefix,
    scriptKeyLocking: true,
    wait: { mode: "push", wakeBy: "subscription" },
  });
  const view = redis();
  /** Streams subscribed to the lock's hand-off channels, over every shard. */
  const subscribers = async (name: string) => {
    const { handOffChannels } = lockKeys(prefix, name);
    const reply = await view.exec<(string | number)[]>(["PUBSUB", "NUMSUB", ...handOffChannels]);
    return reply
      .filter((_, index) => index % 2 === 1)
      .reduce<number>((sum, n) => sum + Number(n), 0);
  };
  const subscribedWaiters = async (name: string) => {
    const parked = await view.hgetall<Record<string, string>>(`${prefix}:{${name}}:parked`);
    return Object.values(parked ?? {}).filter((value) => / sub\d+\.\d+$/.test(String(value)))
      .length;
  };
  return { prefix, holder, waiter, view, subscribers, subscribedWaiters };
}

describe.each(servers)("push hand-off over a subscription in workerd on $kind", (server) => {
  it.each(["lock", "fairLock", "write lock"] as const)(
    "%s: the release's word wakes the waiter holding the lock; its stream then ends",
    async (kind) => {
      const { holder, waiter, subscribers, subscribedWaiters } = contenders(server);
      const lockOf = (client: LockClient) =>
        kind === "write lock" ? client.readWriteLock("job").writeLock() : client[kind]("job");
      const held = await lockOf(holder).acquire({ leaseMs: 10_000 });
      const waiting = lockOf(waiter).acquire({ leaseMs: 10_000, waitMs: 8_000 });
      await until(async () => (await subscribedWaiters("job")) === 1);
      expect(await subscribers("job")).toBe(1);
      const releasedAt = Date.now();
      await held.release();
      const handle = await waiting;
      expect(Date.now() - releasedAt).toBeLessThan(2_000);
      expect(handle.fencingToken).toBe(held.fencingToken + 1);
      expect(await lockOf(holder).isHeldBy(handle.owner)).toBe(true);
      // On Workers a stream serves one acquisition: closed as it ends.
      await until(async () => (await subscribers("job")) === 0);
      await handle.release();
      expect(await lockOf(holder).isLocked()).toBe(false);
    },
  );

  it("a semaphore's release grants the parked waiters its permits cover, each told by word", async () => {
    const { prefix, holder, waiter, view } = contenders(server);
    const keys = semaphoreKeys(prefix, "pool");
    const parkedWaiters = async () => {
      const parked = await view.hgetall<Record<string, string>>(keys.parked);
      return Object.values(parked ?? {}).filter((value) => / sub\d+\.\d+$/.test(String(value)))
        .length;
    };
    const pool = holder.semaphore("pool", { initialPermits: 2 });
    const held = await pool.acquire({ permits: 2, leaseMs: 10_000 });
    const waiting = [0, 1].map(() =>
      waiter.semaphore("pool").acquire({ leaseMs: 10_000, waitMs: 8_000 }),
    );
    await until(async () => (await parkedWaiters()) === 2);
    const releasedAt = Date.now();
    await held.release();
    const handles = await Promise.all(waiting);
    expect(Date.now() - releasedAt).toBeLessThan(2_000);
    // Both by the release's grants (the next two tokens), not by polls that came after it.
    expect(handles.map((h) => h.fencingToken).sort()).toEqual([
      held.fencingToken + 1,
      held.fencingToken + 2,
    ]);
    expect(await pool.state()).toMatchObject({ held: 2, holds: 2, waiters: 0 });
    await Promise.all(handles.map((h) => h.release()));
  });

  it("a semaphore's shrink tells a parked waiter that can no longer fit, and the release grants the one behind it", async () => {
    const { prefix, holder, view } = contenders(server);
    // Parks of 7.5 s (three quarters of the claim window): only a word ends them sooner.
    const waiter = new LockClient({
      redis: new Redis({ url: server.url, token: server.token }),
      prefix,
      scriptKeyLocking: true,
      wait: { mode: "push", wakeBy: "subscription", claimMs: 10_000, parkMs: 10_000 },
    });
    const keys = semaphoreKeys(prefix, "pool");
    const parkedWaiters = async () => {
      const parked = await view.hgetall<Record<string, string>>(keys.parked);
      return Object.values(parked ?? {}).filter((value) => / sub\d+\.\d+$/.test(String(value)))
        .length;
    };
    const pool = holder.semaphore("pool", { initialPermits: 3 });
    const held = await pool.acquire({ permits: 3, leaseMs: 20_000 });
    const refused = waiter
      .semaphore("pool")
      .acquire({ permits: 3, leaseMs: 10_000, waitMs: 15_000 })
      .then(
        () => undefined,
        (error: unknown) => ({ error, at: Date.now() }),
      );
    await until(async () => (await parkedWaiters()) === 1);
    const waiting = waiter.semaphore("pool").acquire({ leaseMs: 10_000, waitMs: 15_000 });
    await until(async () => (await parkedWaiters()) === 2);
    const shrunkAt = Date.now();
    await pool.setPermits(2);
    const outcome = await refused;
    expect(outcome?.error).toBeInstanceOf(SemaphoreCapacityError);
    expect(outcome!.at - shrunkAt).toBeLessThan(2_000);
    const releasedAt = Date.now();
    await held.release();
    const handle = await waiting;
    expect(Date.now() - releasedAt).toBeLessThan(2_000);
    expect(handle.fencingToken).toBe(held.fencingToken + 1); // by the release's grant
    await handle.release();
  });

  it(`each owner scope (a request) keeps its own ${MAX_STREAMS_ON_WORKERS} streams of a shared client`, async () => {
    const { holder, waiter, subscribers } = contenders(server);
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    // Two requests through one client kept by the isolate, each waiting four times at once.
    const requests = [0, 1].map(() =>
      waiter.scope(() =>
        Promise.all(
          // Each passes the lock on as soon as it holds it.
          Array.from({ length: MAX_STREAMS_ON_WORKERS + 1 }, async () =>
            (await waiter.lock("job").acquire({ leaseMs: 10_000, waitMs: 15_000 })).release(),
          ),
        ),
      ),
    );
    await until(async () => (await subscribers("job")) === 2 * MAX_STREAMS_ON_WORKERS);
    await sleepMs(300);
    expect(await subscribers("job")).toBe(2 * MAX_STREAMS_ON_WORKERS);
    await held.release();
    await Promise.all(requests);
    expect(await holder.lock("job").isLocked()).toBe(false);
    await until(async () => (await subscribers("job")) === 0);
  });

  it(`one request keeps at most ${MAX_STREAMS_ON_WORKERS} streams open, over nested scopes and two clients`, async () => {
    const { prefix, holder, waiter, subscribers } = contenders(server);
    const second = new LockClient({
      redis: new Redis({ url: server.url, token: server.token }),
      prefix,
      scriptKeyLocking: true,
      wait: { mode: "push", wakeBy: "subscription" },
    });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    // Each passes the lock on as soon as it holds it.
    const waits = (client: LockClient, count: number) =>
      Promise.all(
        Array.from({ length: count }, async () =>
          (await client.lock("job").acquire({ leaseMs: 10_000, waitMs: 15_000 })).release(),
        ),
      );
    // One request: two sub-tasks in nested scopes through one client, and a second client,
    // each waiting three times at once (9 streams before the budget was the request's).
    const request = waiter.scope(() =>
      Promise.all([
        waiter.scope(() => waits(waiter, 3)),
        waiter.scope(() => waits(waiter, 3)),
        waits(second, 3),
      ]),
    );
    let most = 0;
    const sample = async () => {
      most = Math.max(most, await subscribers("job"));
      return most;
    };
    await until(async () => (await sample()) >= MAX_STREAMS_ON_WORKERS);
    for (let round = 0; round < 12; round++) {
      await sample();
      await sleepMs(25);
    }
    expect(most).toBe(MAX_STREAMS_ON_WORKERS);
    await held.release();
    await request;
    expect(await holder.lock("job").isLocked()).toBe(false);
    await until(async () => (await subscribers("job")) === 0);
  });

  it(`outside any scope the clients keep at most ${MAX_STREAMS_ON_WORKERS} streams open; more waits poll`, async () => {
    const { prefix, holder, waiter, subscribers } = contenders(server);
    const second = new LockClient({
      redis: new Redis({ url: server.url, token: server.token }),
      prefix,
      scriptKeyLocking: true,
      wait: { mode: "push", wakeBy: "subscription" },
    });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    // Unscoped waits cannot be told apart by request: two clients' share one budget.
    const waits = Array.from({ length: MAX_STREAMS_ON_WORKERS + 2 }, (_, index) =>
      (index % 2 === 0 ? waiter : second).lock("job").acquire({ leaseMs: 10_000, waitMs: 15_000 }),
    );
    await until(async () => (await subscribers("job")) === MAX_STREAMS_ON_WORKERS);
    await sleepMs(300);
    expect(await subscribers("job")).toBe(MAX_STREAMS_ON_WORKERS);
    await held.release();
    // Each passes the lock on as soon as it holds it.
    await Promise.all(waits.map(async (waiting) => (await waiting).release()));
    await until(async () => (await subscribers("job")) === 0);
  });

  it("the end of a stream's body is heard inside workerd (its subscribe's fetch reports it)", async () => {
    // A subscribe that sends its one fetch synchronously, as @upstash/redis's does, to a body
    // that ends at once (the local server's stats) and reads it to its end.
    const bodies: Promise<string>[] = [];
    const finite: RedisLike & Required<Pick<RedisLike, "subscribe">> = {
      eval: () => Promise.reject(new Error("unused")),
      evalsha: () => Promise.reject(new Error("unused")),
      subscribe: () => {
        const sent = fetch(`${server.url}/_edgelock/stats`, {
          headers: { authorization: `Bearer ${server.token}` },
        });
        bodies.push(sent.then((response) => response.text()));
        return { on: () => {}, unsubscribe: async () => {} };
      },
    };
    const realFetch = globalThis.fetch;
    let ended = 0;
    subscribeHearingEnd(finite, "channel", () => {
      ended += 1;
    });
    expect(globalThis.fetch).toBe(realFetch);
    expect(JSON.parse(await bodies[0]!)).toHaveProperty("streams");
    await until(() => ended === 1);
  });

  it("an acquisition cancelled while subscribed closes its stream and leaves the queue", async () => {
    const { holder, waiter, subscribers, subscribedWaiters } = contenders(server);
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const cancel = new AbortController();
    const waiting = waiter.lock("job").acquire({ waitMs: 8_000, signal: cancel.signal });
    await until(async () => (await subscribedWaiters("job")) === 1);
    const abortedAt = Date.now();
    cancel.abort();
    await expect(waiting).rejects.toBeInstanceOf(LockAbortedError);
    expect(Date.now() - abortedAt).toBeLessThan(2_000);
    await until(async () => (await subscribers("job")) === 0);
    expect(await subscribedWaiters("job")).toBe(0);
    await held.release();
  });
});

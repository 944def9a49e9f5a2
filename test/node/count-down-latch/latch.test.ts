/**
 * The count-down latch: trySetCount only when open, countDown exactly once under re-sends,
 * await() true when the count reaches 0 and false on timeout, polling with backoff (no busy
 * loop), an expiry that lets an abandoned latch vanish.
 */
import { describe, expect, it } from "vitest";
import { LockAbortedError, LockInputError, type RedisLike } from "../../../src/index.js";
import { backendKindsUnderTest, LOSSY_BACKEND_TIMEOUT_MS } from "../../support/backends.js";
import { recordingRedis } from "../../support/recording-redis.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("count-down latch on %s", (kind) => {
  const bed = useTestBed(kind);

  it("sets its count only when open, and counts down to open", async () => {
    const latch = bed.client().countDownLatch("steps");
    expect(await latch.count()).toBe(0);
    expect(await latch.trySetCount(2)).toBe(true);
    expect(await latch.trySetCount(5)).toBe(false);
    expect(await latch.countDown()).toBe(1);
    expect(await latch.countDown()).toBe(0);
    // Counting down an open latch does nothing; it can be set again.
    expect(await latch.countDown()).toBe(0);
    expect(await latch.trySetCount(1)).toBe(true);
    expect(await latch.count()).toBe(1);
  });

  it("wakes waiters in other isolates when the count reaches 0", async () => {
    const prefix = freshPrefix();
    const latch = bed.client({ prefix }).countDownLatch("gate");
    await latch.trySetCount(3);
    const waiters = [1, 2].map(() =>
      bed
        .client({ prefix })
        .countDownLatch("gate")
        .await({ waitMs: 10_000, wait: { maxPolls: 10_000 } }),
    );
    for (let i = 0; i < 3; i++) {
      await sleepMs(50);
      await bed.client({ prefix }).countDownLatch("gate").countDown();
    }
    expect(await Promise.all(waiters)).toEqual([true, true]);
  });

  it("answers false on timeout, polling with backoff rather than spinning", async () => {
    const latch = bed.client({ wait: { maxPolls: 10_000 } }).countDownLatch("closed");
    await latch.trySetCount(1);
    const before = bed.lockCommands();
    const started = Date.now();
    expect(await latch.await({ waitMs: 1_000 })).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    // Backoff up to 250 ms: a handful of polls in a second, not hundreds.
    expect(bed.lockCommands() - before).toBeLessThan(40);
    const aborted = await latch
      .await({ signal: AbortSignal.timeout(100) })
      .catch((e: unknown) => e);
    expect(aborted).toBeInstanceOf(LockAbortedError);
  });

  it("counts a re-sent countDown once", async () => {
    const recorded = recordingRedis(bed.redis());
    const latch = bed.client({ redis: recorded.client }).countDownLatch("resent");
    await latch.trySetCount(3);
    const before = recorded.calls.length;
    expect(await latch.countDown()).toBe(2);
    for (const copy of recorded.calls.slice(before)) await copy();
    expect(await latch.count()).toBe(2);
  });

  it("vanishes after its TTL, and reads open then", async () => {
    const latch = bed.client().countDownLatch("abandoned", { ttlMs: 1_000 });
    await latch.trySetCount(2);
    expect(await latch.await({ waitMs: 3_000, wait: { maxPolls: 10_000 } })).toBe(true);
    expect(await latch.count()).toBe(0);
  });

  it("checks input before any request", async () => {
    const client = bed.client();
    const before = bed.requests();
    expect(() => client.countDownLatch("x", { ttlMs: 10 })).toThrow(LockInputError);
    const latch = client.countDownLatch("input");
    await expect(latch.trySetCount(0)).rejects.toBeInstanceOf(LockInputError);
    await expect(latch.await({ waitMs: -1 })).rejects.toBeInstanceOf(LockInputError);
    await expect(latch.await({ timeout: 1 } as never)).rejects.toBeInstanceOf(LockInputError);
    expect(bed.requests()).toBe(before);
  });

  describe("await in push mode: told over the latch's channel", () => {
    /** The bed's Redis, counting reads and subscriptions; its words can be dropped. */
    function listened() {
      const inner = bed.redis();
      const tap = { scripts: 0, subscribes: 0, words: 0, dropWords: false };
      const redis: RedisLike = {
        eval: (script, keys, args) => {
          tap.scripts += 1;
          return inner.eval(script, keys, args);
        },
        evalsha: (sha, keys, args) => {
          tap.scripts += 1;
          return inner.evalsha(sha, keys, args);
        },
        subscribe(channel) {
          tap.subscribes += 1;
          const subscription = inner.subscribe<unknown>(channel);
          return {
            on(type, listener) {
              if (type !== "message") {
                subscription.on(type, listener as (event: unknown) => void);
                return;
              }
              subscription.on("message", (event) => {
                tap.words += 1;
                if (!tap.dropWords) (listener as (heard: typeof event) => void)(event);
              });
            },
            unsubscribe: () => subscription.unsubscribe(),
          };
        },
      };
      return { redis, tap };
    }

    it("reads the count a few times however long the wait, and opens at the word", async () => {
      const prefix = freshPrefix();
      const { redis, tap } = listened();
      const waiter = bed.client({ prefix, redis, wait: { mode: "push", parkMs: 60_000 } });
      await bed.client({ prefix }).countDownLatch("told").trySetCount(1);
      const opened = waiter.countDownLatch("told").await({ waitMs: 30_000 });
      await sleepMs(1_500);
      // One read before listening, one or two while the stream opened, none while told.
      expect(tap.scripts).toBeLessThanOrEqual(4);
      expect(tap.subscribes).toBe(1);
      const countedAt = Date.now();
      await bed.client({ prefix }).countDownLatch("told").countDown();
      expect(await opened).toBe(true);
      expect(Date.now() - countedAt).toBeLessThan(1_000);
      expect(tap.words).toBe(1);
    });

    it("a lost word costs one park: the count is read again after parkMs", async () => {
      const prefix = freshPrefix();
      const { redis, tap } = listened();
      const waiter = bed.client({ prefix, redis, wait: { mode: "push", parkMs: 500 } });
      await bed.client({ prefix }).countDownLatch("lost").trySetCount(1);
      tap.dropWords = true;
      const opened = waiter.countDownLatch("lost").await({ waitMs: 30_000 });
      await sleepMs(300);
      await bed.client({ prefix }).countDownLatch("lost").countDown();
      const countedAt = Date.now();
      expect(await opened).toBe(true);
      expect(Date.now() - countedAt).toBeLessThan(500 + 1_500);
      expect(tap.words).toBe(1);
    });

    it("a long wait on a healthy stream costs a few reads and no poll budget", async () => {
      const prefix = freshPrefix();
      const { redis, tap } = listened();
      // Reading the count every 200 ms, each read a poll, spent five polls in about a second
      // (LockBudgetExceededError at ~21 s with the default maxPolls).
      const waiter = bed.client({
        prefix,
        redis,
        wait: { mode: "push", parkMs: 200, maxPolls: 5 },
      });
      await bed.client({ prefix }).countDownLatch("long").trySetCount(1);
      const opened = waiter.countDownLatch("long").await({ waitMs: 30_000 });
      await sleepMs(3_000);
      const readsWhileWaiting = tap.scripts;
      const countedAt = Date.now();
      await bed.client({ prefix }).countDownLatch("long").countDown();
      expect(await opened).toBe(true);
      expect(Date.now() - countedAt).toBeLessThan(1_000);
      expect(tap.words).toBe(1);
      // Before listening 1–2 reads, then one at confirmation and one after each park of 200,
      // 400, 800 and 1 600 ms: about log2(3 000 / 200), not 3 000 / 200.
      expect(readsWhileWaiting).toBeLessThanOrEqual(8);
      expect(tap.subscribes).toBe(1);
    });

    it("a stream the server ends is replaced at once: the await still hears the opening", async () => {
      const prefix = freshPrefix();
      const { redis, tap } = listened();
      const waiter = bed.client({ prefix, redis, wait: { mode: "push", parkMs: 60_000 } });
      await bed.client({ prefix }).countDownLatch("ended").trySetCount(1);
      const opened = waiter.countDownLatch("ended").await({ waitMs: 30_000 });
      await until(() => tap.subscribes === 1);
      await sleepMs(300);
      // As a proxy closing long-lived streams would; @upstash/redis says nothing of it.
      expect(bed.server.faults.endStreams()).toBeGreaterThanOrEqual(1);
      // Heard: the count read again and a second stream opened (a deaf await parks 60 s).
      await until(() => tap.subscribes === 2);
      await sleepMs(300);
      const countedAt = Date.now();
      await bed.client({ prefix }).countDownLatch("ended").countDown();
      expect(await opened).toBe(true);
      expect(Date.now() - countedAt).toBeLessThan(1_000);
    });

    it("never parks past the latch's expiry, which opens it without a word", async () => {
      const prefix = freshPrefix();
      const { redis, tap } = listened();
      const waiter = bed.client({ prefix, redis, wait: { mode: "push", parkMs: 60_000 } });
      await bed.client({ prefix }).countDownLatch("expiring", { ttlMs: 1_000 }).trySetCount(1);
      const started = Date.now();
      expect(await waiter.countDownLatch("expiring").await({ waitMs: 30_000 })).toBe(true);
      expect(Date.now() - started).toBeLessThan(1_000 + 1_500);
      expect(tap.words).toBe(0);
    });

    it("an abort ends a parked await at once, and its timeout answers false", async () => {
      const prefix = freshPrefix();
      const { redis } = listened();
      const waiter = bed.client({ prefix, redis, wait: { mode: "push", parkMs: 60_000 } });
      await bed.client({ prefix }).countDownLatch("stopped").trySetCount(1);
      const cancel = new AbortController();
      const waiting = waiter.countDownLatch("stopped").await({ signal: cancel.signal });
      await sleepMs(500);
      const abortedAt = Date.now();
      cancel.abort();
      await expect(waiting).rejects.toBeInstanceOf(LockAbortedError);
      expect(Date.now() - abortedAt).toBeLessThan(300);
      const started = Date.now();
      expect(await waiter.countDownLatch("stopped").await({ waitMs: 700 })).toBe(false);
      expect(Date.now() - started).toBeLessThan(700 + 500);
    });
  });

  describe("under a server that refuses and loses a fifth of its requests", () => {
    const lossy = useTestBed(kind, {
      faults: { dropAfterExecute: 0.1, failBeforeExecute: 0.1, latencyMs: 2, jitterMs: 5, seed: 9 },
    });

    it("opens exactly when the last of its counts has come down, never before", async () => {
      const prefix = freshPrefix();
      const latchOf = () =>
        lossy
          .client({ prefix, retries: 5, backendTimeoutMs: LOSSY_BACKEND_TIMEOUT_MS })
          .countDownLatch("lossy");
      expect(await latchOf().trySetCount(24)).toBe(true);
      let opened = false;
      const waiter = latchOf()
        .await({ waitMs: 30_000, wait: { maxPolls: 100_000 } })
        .then((result) => {
          opened = result;
          return result;
        });
      // Eight isolates count down 23 times in all, concurrently, their answers often lost and
      // re-sent: each countDown counts once, so one count is left.
      await Promise.all(
        Array.from({ length: 8 }, async (_, isolate) => {
          const latch = latchOf();
          for (let i = 0; i < (isolate === 7 ? 2 : 3); i++) await latch.countDown();
        }),
      );
      expect(await latchOf().count()).toBe(1);
      await sleepMs(300);
      expect(opened).toBe(false);
      await latchOf().countDown();
      expect(await waiter).toBe(true);
      expect(await latchOf().count()).toBe(0);
    });
  });
});

/**
 * A short chaos run of the semaphore: isolates on a server that delays, fails and loses answers
 * take random numbers of permits in lease and watchdog mode, some crash mid-hold (no release, no
 * renewal), some give up waiting; a fault-free observer that never trusts the clients samples the
 * server all along. Checked: the server never shows more permits held by live leases than the
 * capacity; the permits of the handles the clients trusted (lease not passed, signal not aborted)
 * never exceed it either; and once every lease has passed, every permit is back.
 */
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServerStats } from "../../../dev/index.js";
import { FaultController } from "../../../dev/rest/faults.js";
import { type RestServer, startRestServer } from "../../../dev/rest/server.js";
import {
  LockBackendError,
  LockClient,
  LockWaitTimeoutError,
  type PermitHandle,
  type RedisLike,
} from "../../../src/index.js";
import { backendKindsUnderTest, LOSSY_BACKEND_TIMEOUT_MS } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

const CAPACITY = 4;
const ISOLATES = 8;
const RUN_MS = 6_000;
const LEASE_MS = 1_500;

describe.each(backendKindsUnderTest())("semaphore chaos on %s", (kind) => {
  const faulty = useTestBed(kind, {
    faults: { latencyMs: 2, jitterMs: 10, dropAfterExecute: 0.15, failBeforeExecute: 0.1, seed: 3 },
  });

  // The observer: a fault-free REST server on the same Redis, which the clients never use.
  let observerServer: RestServer | undefined;
  beforeAll(async () => {
    observerServer = await startRestServer({
      backend: faulty.server.backend,
      token: faulty.server.token,
      faults: new FaultController(),
      stats: new ServerStats(),
      host: "127.0.0.1",
      port: 0,
    });
  });
  afterAll(async () => {
    await observerServer?.close();
  });

  /** A process's Redis client, which `kill()` cuts off: nothing it sends arrives any more. */
  function killable(redis: RedisLike): RedisLike & { kill(): void } {
    let dead = false;
    const cut = () => Promise.reject(new Error("this process has crashed"));
    return {
      eval: (script, keys, args) => (dead ? cut() : redis.eval(script, keys, args)),
      evalsha: (sha, keys, args) => (dead ? cut() : redis.evalsha(sha, keys, args)),
      kill: () => {
        dead = true;
      },
    };
  }

  it("never admits more than the capacity, by the server's word and the clients'", async () => {
    const prefix = freshPrefix();
    const observer = new LockClient({
      redis: new Redis({ url: observerServer!.url, token: faulty.server.token }),
      prefix,
    }).semaphore("chaos");
    // Handles the clients trust now: acquired, not released, lease not passed, not lost.
    const trusted = new Set<PermitHandle>();
    const trustedPermits = () => {
      let sum = 0;
      for (const held of trusted) {
        if (!held.signal.aborted && (held.renewing || held.expiresAt > Date.now())) {
          sum += held.permits;
        }
      }
      return sum;
    };
    let mostTrusted = 0;
    let mostOnServer = 0;
    let samples = 0;
    const figures = { acquired: 0, crashed: 0, gaveUp: 0, backendErrors: 0 };
    const endAt = Date.now() + RUN_MS;

    const isolate = async (id: number) => {
      for (let round = 0; Date.now() < endAt; round++) {
        // Each acquisition in a process of its own, so that one can crash alone.
        const redis = killable(faulty.redis());
        const semaphore = new LockClient({
          redis,
          prefix,
          retries: 3,
          watchdogTimeoutMs: LEASE_MS,
          backendTimeoutMs: LOSSY_BACKEND_TIMEOUT_MS,
          wait: { maxPolls: 10_000 },
        }).semaphore("chaos", { initialPermits: CAPACITY });
        const permits = 1 + ((id * 7 + round) % 3);
        let held: PermitHandle;
        try {
          held = await semaphore.acquire({
            permits,
            waitMs: 300 + ((id * 13 + round) % 5) * 200,
            ...((id + round) % 2 === 0 ? { leaseMs: LEASE_MS } : {}),
          });
        } catch (error) {
          if (error instanceof LockWaitTimeoutError) figures.gaveUp += 1;
          else if (error instanceof LockBackendError) figures.backendErrors += 1;
          else throw error;
          continue;
        }
        figures.acquired += 1;
        trusted.add(held);
        mostTrusted = Math.max(mostTrusted, trustedPermits());
        await sleepMs(5 + ((id + round) % 4) * 20);
        mostTrusted = Math.max(mostTrusted, trustedPermits());
        trusted.delete(held);
        if ((id + round) % 9 === 0) {
          // The process dies holding: no release, and its renewals never arrive.
          figures.crashed += 1;
          redis.kill();
          continue;
        }
        await held[Symbol.asyncDispose]();
      }
    };

    const sampling = (async () => {
      while (Date.now() < endAt + LEASE_MS * 2) {
        const state = await observer.state().catch(() => undefined);
        // guard: a sample the faults failed says nothing; enough samples are asserted after.
        if (state !== undefined) {
          samples += 1;
          mostOnServer = Math.max(mostOnServer, state.held);
          // The server's word: never more than the capacity within valid leases.
          expect(state.held).toBeLessThanOrEqual(CAPACITY);
          expect(state.held + state.available).toBe(CAPACITY);
        }
        await sleepMs(5);
      }
    })();
    await Promise.all(Array.from({ length: ISOLATES }, (_, id) => isolate(id)));
    await sampling;

    expect(mostTrusted).toBeLessThanOrEqual(CAPACITY);
    expect(samples).toBeGreaterThan(50);
    expect(figures.acquired).toBeGreaterThan(20);
    // The run did what it says: holders crashed, waiters gave up, the capacity was reached.
    expect(figures.crashed).toBeGreaterThan(0);
    expect(figures.gaveUp).toBeGreaterThan(0);
    expect(mostOnServer).toBeGreaterThanOrEqual(CAPACITY - 1);
    // Every lease has passed: every permit is back, the crashed holders' too.
    expect(await observer.state()).toMatchObject({ capacity: CAPACITY, held: 0, holds: 0 });
  }, 60_000);
});

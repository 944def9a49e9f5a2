/**
 * An acquisition that never parked says so in its attempts (`wakeBy` "poll"): they skip reading
 * the parked hash, which holds nothing of it (issue 42: one billed command per poll). Once an
 * attempt was sent to park, every later one reads it, also when the waiter polls again: its
 * registration, or a grant announced to it, may be there, and must be dropped or taken (the
 * scripts' side: contended-cost.test.ts).
 */
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

interface SentAttempt {
  readonly claimMs: number;
  readonly wakeBy: string;
}

describe.each(backendKindsUnderTest())("an acquisition's attempts on %s", (backend) => {
  // Without Upstash's key-locking flag, so that a waiter may park on a blocking pop.
  const bed = useTestBed(backend, { profile: "redis" });

  /** A Redis client that notes each lock acquire attempt's claim window and `wakeBy`. */
  function watchedRedis() {
    const sent: SentAttempt[] = [];
    const redis = new Redis({ url: bed.server.url, token: bed.server.token });
    const note = (args: unknown[]) => {
      // The lock's acquire script has 10 arguments: … 7 claimMs, 8 parkId, 9 parkBeside, 10 wakeBy.
      if (args.length === 10) sent.push({ claimMs: Number(args[6]), wakeBy: String(args[9]) });
    };
    const watched = new Proxy(redis, {
      get(target, property, receiver) {
        if (property === "eval" || property === "evalsha") {
          return (script: string, keys: string[], args: unknown[]) => {
            note(args);
            return target[property](script, keys, args);
          };
        }
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    return { redis: watched, sent };
  }

  /** A waiter waits for the lock while another client holds it for 300 ms. */
  async function waitBehindHolder(wait: { mode: "poll" } | { mode: "push"; wakeBy: "pop" }) {
    const prefix = freshPrefix();
    const holder = await bed.client({ prefix }).lock("job").acquire({ leaseMs: 10_000 });
    const watched = watchedRedis();
    const waiter = bed.client({ prefix, redis: watched.redis, wait });
    const released = sleepMs(300).then(() => holder.release());
    const held = await waiter.lock("job").acquire({ leaseMs: 10_000, waitMs: 10_000 });
    await released;
    await held.release();
    const parked = await bed.redis().exists(`${prefix}:{job}:parked`);
    return { sent: watched.sent, parked };
  }

  it("a polling acquisition reads no parked hash: every attempt says it never parked", async () => {
    const { sent } = await waitBehindHolder({ mode: "poll" });
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.every((attempt) => attempt.claimMs === 0 && attempt.wakeBy === "poll")).toBe(true);
  });

  it("an attempt sent to park says how it is told, and the grant reaches it", async () => {
    const { sent, parked } = await waitBehindHolder({ mode: "push", wakeBy: "pop" });
    expect(sent[0]).toEqual({ claimMs: 2_000, wakeBy: "pop" });
    expect(sent.every((attempt) => attempt.wakeBy !== "poll")).toBe(true);
    expect(parked).toBe(0);
  });
});

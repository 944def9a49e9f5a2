/**
 * Issue 30 item 3: production Upstash's REST API serves no blocking pops — a `BLPOP` answers at
 * once as if timed out, or is refused. Push mode must notice it (once per client), fall back to
 * polling and stop registering as parked: never a loop of parks, never a failed acquisition.
 */
import { describe, expect, it } from "vitest";
import type { LockClient } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

const CONTENDERS = 6;
const SECTIONS = 4;

const KINDS = [
  { kind: "lock", lockOf: (c: LockClient) => c.lock("job") },
  { kind: "fair lock", lockOf: (c: LockClient) => c.fairLock("job") },
  { kind: "write lock", lockOf: (c: LockClient) => c.readWriteLock("job").writeLock() },
] as const;

describe.each(
  backendKindsUnderTest().flatMap((backend) =>
    (["immediate", "error"] as const).map((blocking) => ({ backend, blocking })),
  ),
)("push mode where pops do not block ($blocking) on $backend", ({ backend, blocking }) => {
  const bed = useTestBed(backend, { profile: "upstash", blocking });

  /** Contenders that each take the lock SECTIONS times; the requests they sent in all. */
  async function contend(kind: (typeof KINDS)[number], mode: "push" | "poll") {
    const prefix = freshPrefix();
    let requests = 0;
    const observer = {
      onAttempt: () => {
        requests += 1;
      },
      onBlocking: () => {
        requests += 1;
      },
    };
    const wait =
      mode === "push" ? ({ mode: "push", wakeBy: "pop" } as const) : ({ mode: "poll" } as const);
    let inside = 0;
    let overlap = 0;
    await Promise.all(
      Array.from({ length: CONTENDERS }, async () => {
        const client = bed.client({ prefix, observer, wait });
        for (let section = 0; section < SECTIONS; section++) {
          const handle = await kind.lockOf(client).acquire({ leaseMs: 5_000, waitMs: 30_000 });
          inside += 1;
          if (inside > 1) overlap += 1;
          await sleepMs(5);
          inside -= 1;
          await handle.release();
        }
      }),
    );
    const parked = await bed.redis().hlen(`${prefix}:{job}:parked`);
    return { requests, overlap, parked };
  }

  it.each(KINDS)(
    "$kind: every acquisition completes, by polling, at polling's cost",
    async (kind) => {
      const push = await contend(kind, "push");
      const poll = await contend(kind, "poll");
      expect(push.overlap).toBe(0);
      expect(push.parked).toBe(0);
      // Each client learns it once (one park, one attempt more); then it polls as polling does.
      // Generous: the polling runs' own spread is larger than that.
      const acquisitions = CONTENDERS * SECTIONS;
      const seen = `push ${push.requests}, poll ${poll.requests} requests for ${acquisitions} acquisitions`;
      expect(push.requests, seen).toBeLessThanOrEqual(poll.requests * 1.5 + 2 * CONTENDERS);
    },
  );
});

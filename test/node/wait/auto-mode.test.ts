/**
 * `wait.mode: "auto"`, the default (issue 43): push where the kind parks and the backend offers a
 * wake channel that works, polling where it does not; the channel decided once the server has
 * shown whether it runs scripts under Upstash's per-key locking (the first attempt's reply), so a
 * client makes the same choice on the local server's `upstash` profile (a loopback URL) as on
 * Upstash's domain.
 */
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "../../../dev/index.js";
import { LockClient, type LockHandle } from "../../../src/index.js";
import type { WaitOptions } from "../../../src/wait/policy.js";
import { DEFAULT_WAIT_POLICY, resolveWaitPolicy } from "../../../src/wait/policy.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, until } from "../exclusive/testbed.js";

describe("the default wait mode", () => {
  it('is "auto", and "auto" is accepted as input', () => {
    expect(DEFAULT_WAIT_POLICY.mode).toBe("auto");
    expect(resolveWaitPolicy({ mode: "auto" }).mode).toBe("auto");
    expect(() => resolveWaitPolicy({ mode: "sometimes" })).toThrow(/"auto", "poll" or "push"/);
  });
});

describe.each(backendKindsUnderTest())("wait.mode auto on %s", (backend) => {
  /**
   * A server of its own per run: what a server makes of the key-locking flag is learnt once per
   * origin and process, so a fresh client of a fresh origin is what a new isolate meets.
   */
  async function onFreshServer<T>(
    profile: "upstash" | "redis",
    run: (server: DevServer) => Promise<T>,
  ): Promise<T> {
    const server = await startDevServer({ backend, profile });
    try {
      return await run(server);
    } finally {
      // A client's stream lingers 1 s after its last wait: closed under it, it logs an error.
      await until(() => server.stats.snapshot().streams.open === 0).catch(() => {});
      await server.close();
    }
  }

  const redisOf = (server: DevServer) => new Redis({ url: server.url, token: server.token });

  /**
   * A holder (whose client names its flag, so that it settles nothing for the others), then two
   * fresh clients on the defaults waiting 150 ms apart; the lock is force-released. Resolves to
   * who held first and how long after the release, and the blocking pops the server saw.
   */
  async function forceReleasedBehindTwoFreshWaiters(server: DevServer, wait: WaitOptions = {}) {
    const prefix = freshPrefix();
    const holder = new LockClient({
      redis: redisOf(server),
      prefix,
      scriptKeyLocking: server.profile === "upstash",
    });
    await holder.lock("job").acquire({ leaseMs: 3_000 });
    const order: string[] = [];
    let releasedAt = Number.POSITIVE_INFINITY;
    const servedAfter: number[] = [];
    const waitAs = async (name: string) => {
      const client = new LockClient({ redis: redisOf(server), prefix, wait });
      const handle: LockHandle = await client
        .lock("job")
        .acquire({ leaseMs: 10_000, waitMs: 10_000 });
      order.push(name);
      servedAfter.push(Date.now() - releasedAt);
      // Held briefly, so that the second is served by this release, not by the first's lease.
      await sleepMs(50);
      await handle.release();
    };
    const head = waitAs("head");
    await sleepMs(150);
    const second = waitAs("second");
    // Both have asked, found the lock busy and settled into their way of waiting.
    await sleepMs(1_000);
    releasedAt = Date.now();
    await holder.lock("job").forceRelease();
    await Promise.all([head, second]);
    const { commandsByName, streams } = server.stats.snapshot();
    const pops = commandsByName.blpop ?? 0;
    // Words pushed on a hand-off stream: a waiter told of its grant.
    const told = streams.pushedMessages;
    return { order, servedAfter, pops, told };
  }

  // The case: two fresh push-mode clients, the later one served first in 2 of 4 runs.
  const MODES: readonly { readonly mode: string; readonly wait: WaitOptions }[] = [
    { mode: "the default", wait: {} },
    { mode: '"push"', wait: { mode: "push" } },
  ];

  it.each(MODES)(
    "$mode on the upstash profile: two fresh clients subscribe, never pop, and the head is served first (3 runs)",
    async ({ wait }) => {
      const runs = [];
      for (let run = 0; run < 3; run++) {
        const { order, servedAfter, pops, told } = await onFreshServer("upstash", (server) =>
          forceReleasedBehindTwoFreshWaiters(server, wait),
        );
        // Handed over by the release (the holder's lease had 1.8 s left), the head first.
        runs.push({
          order,
          headServed: (servedAfter[0] ?? Number.POSITIVE_INFINITY) < 1_000,
          pops,
          toldByWord: told >= 1,
        });
      }
      const expected = { order: ["head", "second"], headServed: true, pops: 0, toldByWord: true };
      expect(runs).toEqual([expected, expected, expected]);
    },
    60_000,
  );

  it("on the redis profile two fresh clients park on blocking pops, the head served first", async () => {
    const { order, servedAfter, pops } = await onFreshServer("redis", (server) =>
      forceReleasedBehindTwoFreshWaiters(server),
    );
    expect(order).toEqual(["head", "second"]);
    expect(servedAfter[0]).toBeLessThan(1_000);
    expect(pops).toBeGreaterThan(0);
  }, 30_000);
});

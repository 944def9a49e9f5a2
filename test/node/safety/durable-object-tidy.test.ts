/**
 * An object whose last hold was released deletes its storage (idle lock names cost nothing); a
 * registration that reaches it while that deletion is under way is kept and renewed. The long
 * chaos run found it (`do`, seed 5: a hold the object never renewed): the deletion was two
 * storage calls, and a registration handled between them was wiped by the second (with the
 * object's schema, so that every later call on it failed). The real LockWatchdog in Node (SQLite
 * storage, its alarm a timer, a storage that answers a deletion late), against the REST server.
 */
import { describe, expect, it } from "vitest";
import { WATCHDOG_ROUTES, type WatchdogStatus } from "../../../src/durable-object/messages.js";
import { durableObjectWatchdog } from "../../../src/durable-object/watchdog.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";
import { objectInNode } from "./durable-object-in-node.js";

/** The lease each renewal sets; the object renews every third of it. */
const LEASE_MS = 1_000;

describe.each(backendKindsUnderTest())("Durable Object watchdog tidying on %s", (backend) => {
  const bed = useTestBed(backend);

  it("a registration that arrives while the object deletes its storage is kept and renewed", async () => {
    // Deletions answer only when the test says (once `slow`): the object's next event runs first.
    let slow = false;
    let answerDeletion: (() => void) | undefined;
    const { object, namespace } = objectInNode(
      { UPSTASH_REDIS_REST_URL: bed.server.url, UPSTASH_REDIS_REST_TOKEN: bed.server.token },
      {
        deletionAnswered: () =>
          slow
            ? new Promise<void>((resolve) => {
                answerDeletion = resolve;
              })
            : Promise.resolve(),
      },
    );
    const rows = async () => {
      const listed = await object.fetch(new Request(`https://watchdog${WATCHDOG_ROUTES.list}`));
      return (await listed.json()) as WatchdogStatus[];
    };
    const prefix = freshPrefix();
    // One object for every lock (the namespace has one): the two holds meet in it.
    const watchdog = durableObjectWatchdog(namespace, { prefix });
    const client = bed.client({ prefix, watchdogTimeoutMs: LEASE_MS, watchdog });
    const rival = bed.client({ prefix });

    const first = await client.lock("first").acquire();
    await watchdog.settled();
    slow = true;
    // The object's only hold released: its deregistration empties the object, which deletes.
    const released = first.release();
    await until(() => answerDeletion !== undefined);
    slow = false;
    const second = await client.lock("second").acquire();
    await until(async () => (await watchdog.status(second)).state === "renewing");
    answerDeletion?.();
    await released;
    await watchdog.settled();

    expect((await rows()).map((row) => [row.state, row.fencingToken])).toEqual([
      ["renewing", second.fencingToken],
    ]);
    const before = await watchdog.status(second);
    // Three leases: held throughout, by the object's renewals alone.
    const watchedUntil = Date.now() + 3 * LEASE_MS;
    while (Date.now() < watchedUntil) {
      expect(await rival.lock("second").tryAcquire({ leaseMs: 5_000 })).toBeNull();
      await sleepMs(250);
    }
    expect(second.signal.aborted).toBe(false);
    const after = await watchdog.status(second);
    expect(after.state).toBe("renewing");
    const renewals = (status: WatchdogStatus) => (status.state === "unknown" ? 0 : status.renewals);
    expect(renewals(after) - renewals(before)).toBeGreaterThanOrEqual(5);
    await second.release();
    await watchdog.settled();
    expect(await rows()).toEqual([]);
  });
});

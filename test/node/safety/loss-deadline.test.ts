/**
 * Issue 13 item 2: a watchdog-renewed hold's `signal` aborts and `lockLost` fires no later than its
 * last confirmed end (lease counted from when the confirming request was sent), whatever renewal
 * requests are still in flight: a request that hangs, or one answered 503 only after 4 s.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { FaultOptions } from "../../../dev/index.js";
import type { LockEvent } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "../exclusive/testbed.js";

const WATCHDOG_MS = 1_500;
// Timer lateness on a loaded machine; the bound itself is the lease.
const SLACK_MS = 500;

function abortedAt(signal: AbortSignal, withinMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), withinMs);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(Date.now());
    });
  });
}

describe.each(backendKindsUnderTest())("loss detection by deadline on %s", (kind) => {
  const bed = useTestBed(kind);
  afterEach(() => bed.server.faults.disable());

  const renewalFaults: Array<[string, FaultOptions]> = [
    ["hang (no answer for a minute)", { latencyMs: 60_000, commands: ["eval", "evalsha"] }],
    [
      "answer 503 after 4 s",
      { latencyMs: 4_000, failBeforeExecute: 1, commands: ["eval", "evalsha"] },
    ],
  ];

  it.each(renewalFaults)("aborts by the last confirmed end when renewals %s", async (_, faults) => {
    const client = bed.client({ watchdogTimeoutMs: WATCHDOG_MS });
    const events: LockEvent[] = [];
    client.on("lockLost", (event) => events.push(event));
    const held = await client.lock(`deadline-${faults.latencyMs}`).acquire();
    const confirmedBy = Date.now();
    bed.server.faults.configure(faults);

    const at = await abortedAt(held.signal, WATCHDOG_MS * 3);
    expect(at, "the signal did not abort").not.toBeNull();
    expect((at ?? 0) - confirmedBy).toBeLessThanOrEqual(WATCHDOG_MS + SLACK_MS);
    expect(events).toHaveLength(1);
  });
});

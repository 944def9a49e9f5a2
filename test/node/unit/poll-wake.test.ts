/**
 * A busy answer's `wakeOn` (a subscription opening, issue 43) ends the sleep before the next
 * attempt early; the delay stays its longest, and the caller's signal still ends the wait.
 */
import { describe, expect, it } from "vitest";
import { LockAbortedError } from "../../../src/errors.js";
import { DEFAULT_WAIT_POLICY } from "../../../src/wait/policy.js";
import { type PollOutcome, pollForLock } from "../../../src/wait/poll.js";

const LONG_MS = 10_000;

function busyThenAcquired(wakeOn: Promise<unknown>): () => Promise<PollOutcome<string>> {
  let attempts = 0;
  return async () => {
    attempts += 1;
    return attempts === 1
      ? { done: false, holderTtlMs: null, nextPollMs: LONG_MS, why: "park", wakeOn }
      : { done: true, value: "held" };
  };
}

describe("pollForLock's wakeOn", () => {
  it("ends the sleep once it settles, well before the delay", async () => {
    let wake = () => {};
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const startedAt = Date.now();
    const result = pollForLock({
      lockName: "job",
      waitMs: 60_000,
      signal: undefined,
      policy: DEFAULT_WAIT_POLICY,
      attempt: busyThenAcquired(woken),
    });
    setTimeout(wake, 50);
    expect(await result).toEqual({ acquired: true, value: "held" });
    expect(Date.now() - startedAt).toBeLessThan(LONG_MS / 4);
  });

  it("the caller's signal still ends a sleep that waits for a wake", async () => {
    const controller = new AbortController();
    const result = pollForLock({
      lockName: "job",
      waitMs: 60_000,
      signal: controller.signal,
      policy: DEFAULT_WAIT_POLICY,
      attempt: busyThenAcquired(new Promise(() => {})),
    });
    const settled = result.then(
      () => "acquired",
      (error: unknown) => error,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    expect(await settled).toBeInstanceOf(LockAbortedError);
  });
});

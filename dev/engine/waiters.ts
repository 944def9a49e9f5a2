/**
 * Clients parked on a blocking pop (BLPOP…) in the embedded engine. Every call that may have
 * pushed data (any command, pipeline, transaction or script) ends with `wake()`, which retries
 * the parked clients in the order they arrived, so the longest-waiting client is served first,
 * as in Redis.
 */
import type { Reply } from "../backend.js";

/** One retry of the parked command: its reply once it found data, undefined while still empty. */
export type BlockedAttempt = () => Reply | undefined;

/** setTimeout's ceiling (~24.8 days); longer timeouts wait this long instead of firing at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Waiter {
  readonly attempt: BlockedAttempt;
  readonly settle: (outcome: { reply: Reply } | { error: Error }) => void;
}

export class BlockedClients {
  private queue: Waiter[] = [];

  get size(): number {
    return this.queue.length;
  }

  /**
   * Parks a client until `attempt` yields a reply, `timeoutMs` passes (then it gets
   * `timeoutReply`; `Infinity` waits forever) or `signal` aborts (then it rejects and leaves).
   */
  park(
    attempt: BlockedAttempt,
    timeoutMs: number,
    timeoutReply: Reply,
    signal: AbortSignal | undefined,
  ): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => waiter.settle({ error: new Error("the client went away") });
      const waiter: Waiter = {
        attempt,
        settle: (outcome) => {
          if (timer !== undefined) clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          this.queue = this.queue.filter((other) => other !== waiter);
          if ("reply" in outcome) resolve(outcome.reply);
          else reject(outcome.error);
        },
      };
      if (signal?.aborted) {
        reject(new Error("the client went away"));
        return;
      }
      this.queue.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (Number.isFinite(timeoutMs)) {
        timer = setTimeout(
          () => waiter.settle({ reply: timeoutReply }),
          Math.min(timeoutMs, MAX_TIMER_MS),
        );
      }
    });
  }

  /** Retries parked clients in arrival order until none can be served (a BLMOVE may feed another). */
  wake(): void {
    let served = true;
    while (served && this.queue.length > 0) {
      served = false;
      for (const waiter of [...this.queue]) {
        const reply = waiter.attempt();
        if (reply === undefined) continue;
        waiter.settle({ reply });
        served = true;
      }
    }
  }

  /** Rejects every parked client (the backend is closing). */
  rejectAll(error: Error): void {
    for (const waiter of [...this.queue]) waiter.settle({ error });
  }
}

/**
 * Renewal by timers in this process, every third of the lease: Node, Bun, Deno, or within one
 * Workers invocation (its timers die with it; the Durable Object watchdog outlives it).
 */
import { LockBackendError } from "../errors.js";
import type { Renewal, RenewalTarget, Renewer } from "./renewer.js";

/** Options of `inProcessRenewer()`. */
export interface InProcessRenewerOptions {
  /**
   * Renew when this fraction of the lease has passed.
   * @default 1 / 3 (Redisson's rhythm)
   */
  renewAtFraction?: number;
}

/** The default watchdog: renews each watchdog-mode hold on this isolate's timers while it runs. */
export function inProcessRenewer(options: InProcessRenewerOptions = {}): Renewer {
  const fraction = options.renewAtFraction ?? 1 / 3;
  return {
    inProcess: true,
    start(target: RenewalTarget, confirmedAt: number): Renewal {
      const interval = Math.max(1, Math.floor(target.leaseMs * fraction));
      // After a failure, try again sooner, several times before the lease could run out.
      const retryDelay = Math.max(50, Math.min(interval, Math.floor(target.leaseMs / 15)));
      let stopped = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      let deadline: ReturnType<typeof setTimeout> | undefined;

      const end = (reason: string, cause?: unknown) => {
        if (stopped) return;
        stopped = true;
        cancel(timer);
        cancel(deadline);
        target.lost(reason, cause);
      };

      // Loss is driven by the clock, not by replies: the hold is lost at its last confirmed end
      // (lease counted from when the confirming request was sent), whatever is still in flight.
      let lastFailure: unknown;
      const confirm = (sentAt: number, leaseMs = target.leaseMs) => {
        cancel(deadline);
        deadline = unrefTimer(
          () => end("no renewal was confirmed before the lease had passed", lastFailure),
          Math.max(0, sentAt + leaseMs - Date.now()),
        );
      };

      const schedule = (delay: number) => {
        timer = unrefTimer(() => void renewOnce(), delay);
      };

      async function renewOnce(): Promise<void> {
        if (stopped) return;
        const sentAt = Date.now();
        let held: boolean;
        try {
          // A request that hangs must not stop renewal: give up on it and try again.
          held = await withTimeout(target.renew(), interval);
        } catch (error) {
          if (stopped) return;
          lastFailure = error;
          target.failed(error);
          schedule(retryDelay);
          return;
        }
        if (stopped) return;
        if (!held) {
          end("the lock was gone or held by another owner when the watchdog renewed it");
          return;
        }
        lastFailure = undefined;
        confirm(sentAt);
        schedule(interval);
      }

      // A handed-off hold has only its claim window yet: renew by half of it.
      const firstLeaseMs = Math.min(target.firstLeaseMs ?? target.leaseMs, target.leaseMs);
      confirm(confirmedAt, firstLeaseMs);
      schedule(Math.max(0, confirmedAt + Math.min(interval, firstLeaseMs / 2) - Date.now()));
      return {
        stop() {
          stopped = true;
          cancel(timer);
          cancel(deadline);
        },
      };
    },
  };
}

/** Clears a timer that may not be set (Workers' clearTimeout takes no undefined). */
function cancel(timer: ReturnType<typeof setTimeout> | undefined): void {
  if (timer !== undefined) clearTimeout(timer);
}

/** A timer that does not keep a Node process alive by itself (a lock held in the background). */
function unrefTimer(run: () => void, delayMs: number): ReturnType<typeof setTimeout> {
  const timer = setTimeout(run, delayMs);
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

/** `promise`, or a rejection once `ms` have passed without it settling. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = unrefTimer(
      () => reject(new LockBackendError(`renewal got no answer within ${ms} ms`)),
      ms,
    );
    promise.then(
      (value) => {
        cancel(timer);
        resolve(value);
      },
      (error: unknown) => {
        cancel(timer);
        reject(error);
      },
    );
  });
}

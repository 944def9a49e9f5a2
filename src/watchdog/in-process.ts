/**
 * Renewal by timers in this process: every third of the lease, re-arm it. Fits Node, Bun, Deno
 * and work inside one Workers invocation (timers die with the invocation; for locks that outlive
 * it, use the Durable Object watchdog).
 */
import type { Renewal, RenewalTarget, Renewer } from "./renewer.js";

export interface InProcessRenewerOptions {
  /** Renew when this fraction of the lease has passed. Default 1/3 (Redisson's rhythm). */
  renewAtFraction?: number;
}

export function inProcessRenewer(options: InProcessRenewerOptions = {}): Renewer {
  const fraction = options.renewAtFraction ?? 1 / 3;
  return {
    start(target: RenewalTarget, confirmedAt: number): Renewal {
      const interval = Math.max(1, Math.floor(target.leaseMs * fraction));
      // After a failure, try again sooner, several times before the lease could run out.
      const retryDelay = Math.max(50, Math.min(interval, Math.floor(target.leaseMs / 15)));
      let lastConfirmed = confirmedAt;
      let stopped = false;
      let timer: ReturnType<typeof setTimeout> | undefined;

      const schedule = (delay: number) => {
        timer = setTimeout(() => void renewOnce(), delay);
        // A lock held in the background must not keep a Node process alive by itself.
        (timer as { unref?: () => void }).unref?.();
      };

      const end = (reason: string, cause?: unknown) => {
        if (stopped) return;
        stopped = true;
        target.lost(reason, cause);
      };

      async function renewOnce(): Promise<void> {
        if (stopped) return;
        const sentAt = Date.now();
        let held: boolean;
        try {
          held = await target.renew();
        } catch (error) {
          if (stopped) return;
          target.failed(error);
          if (Date.now() - lastConfirmed >= target.leaseMs) {
            end("renewals failed until the lease had passed", error);
          } else {
            schedule(retryDelay);
          }
          return;
        }
        if (stopped) return;
        if (!held) {
          end("the lock was gone or held by another owner when the watchdog renewed it");
          return;
        }
        lastConfirmed = sentAt;
        schedule(interval);
      }

      schedule(Math.max(0, confirmedAt + interval - Date.now()));
      return {
        stop() {
          stopped = true;
          if (timer !== undefined) clearTimeout(timer);
        },
      };
    },
  };
}

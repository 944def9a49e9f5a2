/**
 * The seam between a held lock and what keeps its lease alive (timers or a Durable Object): the
 * Renewer contract, the registry that gives each hold one renewal, and the in-process renewer.
 */
import { LockBackendError, LockLostError } from "../errors.js";

/**
 * What a hold renewable from anywhere is, and so which extend script renews it: `"lock"`, the
 * lock hash of a reentrant, fair or write lock (`lock.extend`); `"semaphore"`, a permit hold in a
 * semaphore's leases (`semaphore.extend`).
 */
export type HoldKind = "lock" | "semaphore";

/** The hold a Renewer renews: its lock, owner, fencing token and lease, and how to extend it. */
export interface RenewalTarget {
  readonly name: string;
  readonly owner: string;
  /**
   * The hold's fencing token: renewals name it, so they never re-arm a later hold of the same
   * owner (after this one was force-released or ran out).
   */
  readonly fencingToken: number;
  /**
   * The Redis key of the hold, present only when its kind's extend script renews it from
   * anywhere (reentrant, fair and write locks; semaphore permits): the Durable Object watchdog
   * renews the others in process.
   */
  readonly key?: string;
  /**
   * What `key` holds, and so the script that renews it.
   * @default "lock"
   */
  readonly kind?: HoldKind;
  /** The lease each renewal sets, in ms (the client's watchdogTimeoutMs). */
  readonly leaseMs: number;
  /**
   * The lease at `confirmedAt` when shorter than `leaseMs`: a push hand-off's claim window, until
   * the hold's own lease is confirmed. Only in-process renewers see it (renew by half of it).
   * @default leaseMs
   */
  readonly firstLeaseMs?: number;
  /** Re-arms the lease: true when re-armed, false when the owner no longer holds the lock. */
  renew(): Promise<boolean>;
  /** Renewal has ended because the lock is lost. Called at most once. */
  lost(reason: string, cause?: unknown): void;
  /** One renewal attempt failed; renewal goes on. */
  failed(error: unknown): void;
}

/** One hold's renewal, as a Renewer started it: stopped when the hold is released. */
export interface Renewal {
  /** Stops renewing (after release). Idempotent. */
  stop(): void;
}

/**
 * The watchdog of watchdog-mode holds (the `watchdog` option): `inProcessRenewer()` (the
 * default) or `durableObjectWatchdog()`.
 */
export interface Renewer {
  /** Renewals run on this process's timers; a push hand-off confirms its claim on one too. */
  readonly inProcess?: boolean;
  /**
   * Starts renewing `target`, whose lease was last set at `confirmedAt` (client clock, taken
   * before the request that set it was sent).
   */
  start(target: RenewalTarget, confirmedAt: number): Renewal;
}

/*
 * One renewal per hold (fencing token), shared by its re-entrant handles, whose signals abort
 * together; a later hold of the same owner gets its own, so an ended hold's never confirms it.
 */

/** A handle that wants to hear when its lock is lost. */
export interface WatchedHold {
  lockLost(error: LockLostError): void;
}

interface Entry {
  renewal: Renewal;
  holds: Set<WatchedHold>;
}

export class WatchdogRegistry {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly renewer: Renewer) {}

  /** Adds `hold` to the renewal of hold `holdId`, starting it if needed; returns its removal. */
  join(
    key: string,
    holdId: string,
    hold: WatchedHold,
    target: RenewalTarget,
    confirmedAt: number,
  ): () => void {
    const id = `${key}\n${target.owner}\n${holdId}`;
    let entry = this.entries.get(id);
    if (!entry) {
      const holds = new Set<WatchedHold>();
      const renewal = this.renewer.start(
        {
          ...target,
          renew: () => target.renew(),
          failed: (error) => target.failed(error),
          lost: (reason, cause) => {
            if (this.entries.get(id)?.holds === holds) this.entries.delete(id);
            target.lost(reason, cause);
            const error = new LockLostError(`Lock "${target.name}" was lost: ${reason}.`, {
              cause,
            });
            for (const each of holds) each.lockLost(error);
          },
        },
        confirmedAt,
      );
      entry = { renewal, holds };
      this.entries.set(id, entry);
    }
    const joined = entry;
    joined.holds.add(hold);
    return () => {
      joined.holds.delete(hold);
      if (joined.holds.size === 0) {
        joined.renewal.stop();
        if (this.entries.get(id) === joined) this.entries.delete(id);
      }
    };
  }

  /** Whether renewals run on this process's timers (see Renewer.inProcess). */
  get renewsInProcess(): boolean {
    return this.renewer.inProcess === true;
  }

  /** Number of holds being renewed; for tests. */
  get size(): number {
    return this.entries.size;
  }
}

/*
 * Renewal by timers in this process, every third of the lease: Node, Bun, Deno, or within one
 * Workers invocation (its timers die with it; the Durable Object watchdog outlives it).
 */

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

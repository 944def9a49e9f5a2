/**
 * One renewal per hold (fencing token), shared by its re-entrant handles, whose signals abort
 * together; a later hold of the same owner gets its own, so an ended hold's never confirms it.
 */
import { LockLostError } from "../errors.js";
import type { Renewal, RenewalTarget, Renewer } from "./renewer.js";

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

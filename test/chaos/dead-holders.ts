/**
 * Watches holders that stopped without releasing: probes, through the fault-free observer, until
 * their hold is gone, recording the last time it was still seen and when it was first seen free.
 */
import { sleep as sleepMs } from "../../src/platform.js";
import type { DeadHolderRecord } from "./journal.js";
import type { ChaosPrimitive } from "./primitive.js";

export interface DeadHolderWatch {
  readonly record: DeadHolderRecord;
  /** The bound as known now: it can still move while a request of the holder settles. */
  readonly boundOf: () => number;
  /** What the holder sent (its requests, traced), kept when it is seen held past its bound. */
  readonly describe?: () => string;
}

/** Probes until the hold is gone, or `giveUpAfterMs` past its bound. */
export async function watchDeadHolder(
  primitive: ChaosPrimitive,
  watch: DeadHolderWatch,
  probeIntervalMs: number,
  giveUpAfterMs: number,
): Promise<void> {
  const { record } = watch;
  for (;;) {
    const sentAt = Date.now();
    let held: boolean;
    try {
      held = await primitive.isHeldBy(record.key, record.owner);
    } catch {
      await sleepMs(probeIntervalMs);
      continue;
    }
    if (!held) {
      record.freedAt = Date.now();
      break;
    }
    record.lastSeenHeldAt = sentAt;
    if (sentAt > watch.boundOf() + giveUpAfterMs) break;
    await sleepMs(probeIntervalMs);
  }
  record.boundAt = watch.boundOf();
  if (record.lastSeenHeldAt !== null && record.lastSeenHeldAt > record.boundAt) {
    record.context = watch.describe?.();
  }
}

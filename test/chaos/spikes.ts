/** Latency spikes past the lease: for a moment every request is answered late, then it passes. */
import type { DevServerFaults } from "../../dev/index.js";

export interface SpikeSchedule {
  readonly everyMs: number;
  readonly durationMs: number;
  readonly latencyMs: number;
}

export interface Spikes {
  /** Spikes started so far. */
  readonly count: number;
  /** When each spike started (client ms). */
  readonly startedAt: readonly number[];
  /** Stops the schedule and ends a spike in progress. */
  stop(): void;
}

export function startSpikes(
  controllers: readonly DevServerFaults[],
  schedule: SpikeSchedule,
): Spikes {
  const configure = (latencyMs: number) => {
    for (const faults of controllers) faults.configure({ latencyMs });
  };
  let count = 0;
  const startedAt: number[] = [];
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const calm = () => {
    configure(0);
    if (!stopped) timer = setTimeout(spike, schedule.everyMs);
  };
  const spike = () => {
    if (stopped) return;
    count += 1;
    startedAt.push(Date.now());
    configure(schedule.latencyMs);
    timer = setTimeout(calm, schedule.durationMs);
  };

  if (schedule.everyMs > 0 && schedule.durationMs > 0 && schedule.latencyMs > 0) {
    // The first comes early, so that even a short run on a fast machine meets one.
    timer = setTimeout(spike, schedule.everyMs / 4);
  }
  return {
    get count() {
      return count;
    },
    startedAt,
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      configure(0);
    },
  };
}

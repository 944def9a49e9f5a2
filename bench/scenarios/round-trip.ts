/**
 * The uncontended round trip of each transport under a latency model: the R of the ideal bound.
 * Median of sequential one-command requests (EXISTS), after a warm-up.
 */
import { Redis } from "@upstash/redis";
import type { BenchBackend } from "../backend/backend.js";
import { percentile } from "../metrics.js";
import type { Transport } from "../peers/peer.js";
import { connectTcp } from "../peers/tcp.js";

/**
 * Samples of R: the median of 50 moved by about a millisecond from one measurement to the next
 * (a few % of efficiency at N = 2); 200 halve that, for about 4 s per transport at 20 ms.
 */
export const ROUND_TRIP_SAMPLES = 200;

export async function measureRoundTrips(
  backend: BenchBackend,
  samples: number = ROUND_TRIP_SAMPLES,
): Promise<Record<Transport, number>> {
  const rest = new Redis({ url: backend.restUrl, token: backend.token });
  const tcp = await connectTcp({ ...backend, leaseMs: 0 });
  try {
    const time = async (call: () => Promise<unknown>) => {
      await call();
      const durations: number[] = [];
      for (let i = 0; i < samples; i++) {
        const start = performance.now();
        await call();
        durations.push(performance.now() - start);
      }
      return percentile(durations, 0.5);
    };
    return {
      REST: await time(() => rest.exists("bench:round-trip")),
      TCP: await time(() => tcp.exists("bench:round-trip")),
    };
  } finally {
    tcp.disconnect();
  }
}

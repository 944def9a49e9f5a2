/**
 * Reads one count-down latch in one read-only script: the latch's own read (`latch.count()`),
 * sent as a read-only script so that a read-only token may run it too.
 */

import { ttlOrNull } from "../hold/script.js";
import { LATCH_COUNT } from "../locks/count-down-latch/count.js";
import { latchKeys } from "../locks/count-down-latch/keys.js";
import { type CommandCounter, type ExecRedis, ReadScript } from "./redis.js";
import { list } from "./reply.js";
import type { InspectedLatch } from "./types.js";

// KEYS: 1 count. Reply: {count (0: open or unset), pttl (-2: no latch)}.
export const READ_LATCH = new ReadScript("inspector.readLatch", LATCH_COUNT.source);

/** Reads latch `name`; resolves to null when it is open (its key is gone at 0, or expired). */
export async function readLatch(
  redis: ExecRedis,
  prefix: string,
  name: string,
  counter: CommandCounter,
): Promise<InspectedLatch | null> {
  const reply = await READ_LATCH.run(redis, [latchKeys(prefix, name).count], [], counter);
  const [count, pttl] = list(reply).map(Number);
  if (pttl === -2 || !count) return null;
  return { name, count, ttlLeftMs: ttlOrNull(pttl) };
}

/**
 * The hand-off statistics of a fair lock, kept in its `:pace` hash so that waiters can sleep
 * until the moment worth asking:
 * - `at`: server ms when the current (or last) holder took the lock;
 * - `freed`: server ms of the last release that freed it;
 * - `hold`: average ms from taking the lock to freeing it;
 * - `gap`: average ms from a release to the head of the queue taking the lock.
 * Expiries and force-releases teach nothing: only releases and hand-offs are sampled.
 */

/** How long the statistics outlive the last holder: one hour. */
export const PACE_TTL_MS = 3_600_000;

/**
 * Folds `sample` (a Lua expression, ms) into the moving average `field` of hash `paceKey`
 * (weight 1/4). A sample is counted as at most twice the average, so that one unusually long
 * hold does not make the whole queue sleep too long.
 */
export function learnAverage(paceKey: string, field: string, sample: string): string {
  return `do
  local sample = math.max(1, ${sample})
  local average = tonumber(redis.call('HGET', ${paceKey}, '${field}') or '0')
  if average <= 0 then average = sample
  else average = average + math.floor((math.min(sample, 2 * average) - average) / 4) end
  redis.call('HSET', ${paceKey}, '${field}', math.max(1, average))
end`;
}

/**
 * What scripts learn about a lock's rhythm so that waiters can sleep until the moment worth
 * asking (the client side of pacing is in src/wait/). Statistics live in a hash beside the lock,
 * under its hash tag, and expire on their own. Expiries and force-releases teach nothing: only
 * releases and hand-offs are sampled.
 */

/** How long the statistics outlive the last acquisition or release: one hour. */
export const PACE_TTL_MS = 3_600_000;

/**
 * Folds `sample` (a Lua expression, ms) into the moving average `field` of hash `statsKey`
 * (weight 1/4). A sample is counted as at most twice the average, so that one unusually long
 * hold does not make every waiter sleep too long. With `deviationField`, the mean deviation
 * from the previous average is kept the same way.
 */
export function learnAverage(
  statsKey: string,
  field: string,
  sample: string,
  deviationField?: string,
): string {
  if (deviationField === undefined) {
    return `do
  local sample = math.max(1, ${sample})
  local average = tonumber(redis.call('HGET', ${statsKey}, '${field}') or '0')
  if average <= 0 then average = sample
  else average = average + math.floor((math.min(sample, 2 * average) - average) / 4) end
  redis.call('HSET', ${statsKey}, '${field}', math.max(1, average))
end`;
  }
  return `do
  local sample = math.max(1, ${sample})
  local stats = redis.call('HMGET', ${statsKey}, '${field}', '${deviationField}')
  local average = tonumber(stats[1] or '0')
  local deviation = tonumber(stats[2] or '0')
  if average <= 0 then average = sample
  else
    sample = math.min(sample, 2 * average)
    deviation = deviation + math.floor((math.abs(sample - average) - deviation) / 4)
    average = average + math.floor((sample - average) / 4)
  end
  redis.call('HSET', ${statsKey}, '${field}', math.max(1, average), '${deviationField}', math.max(0, deviation))
end`;
}

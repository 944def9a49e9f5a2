/**
 * What scripts learn about a lock's rhythm so that waiters can sleep until their turn (the
 * client side, queue-directed polling, is src/wait/poll.ts). Statistics live in a hash beside the lock,
 * under its hash tag, and expire on their own. Expiries and force-releases teach nothing: only
 * releases and hand-offs are sampled.
 */
import { LUA_FRAGMENTS } from "./fragment.js";

/**
 * How long the statistics outlive the last acquisition or release that wrote them: one hour at
 * most, half an hour at least (writePace re-arms the TTL only once half of it has passed).
 */
export const PACE_TTL_MS = 3_600_000;

/**
 * The pace hash's field that says when its TTL was last set (server ms): a write re-arms the TTL
 * only when that is more than half the TTL ago, which saves a PEXPIRE, a billed command, at nearly
 * every contended release (issue 42). The field lives and dies with the hash, so a hash made anew
 * (after it expired) has none and gets its TTL at its first write.
 */
export const PACE_RENEWED_FIELD = "renewed";

/**
 * Folds `sample` (a Lua expression, ms) into the moving average `field` of hash `statsKey`, by
 * foldSample's rule: the semaphore's average hold, whose pace hash a release writes on its own.
 * The hash's TTL (`paceTtlMs`, a local) is set again only once half of it has passed since it
 * last was (PACE_RENEWED_FIELD, read with the average in one HMGET), as writePace does.
 */
export function learnAverage(statsKey: string, field: string, sample: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "learnAverage",
    lua: () => learnAverage(statsKey, field, sample),
    needs: [statsKey, "now", "paceTtlMs"],
  });
  return `do
  local read = redis.call('HMGET', ${statsKey}, '${field}', '${PACE_RENEWED_FIELD}')
  local sample = math.max(1, ${sample})
  local average = tonumber(read[1] or '0')
  ${foldSample()}
  if not read[2] or now - tonumber(read[2]) > paceTtlMs / 2 then
    redis.call('HSET', ${statsKey}, '${field}', math.max(1, average), '${PACE_RENEWED_FIELD}', now)
    redis.call('PEXPIRE', ${statsKey}, paceTtlMs)
  else
    redis.call('HSET', ${statsKey}, '${field}', math.max(1, average))
  end
end`;
}

/**
 * The averaging itself, on the Lua locals `sample`, `average` and, with `withDeviation`,
 * `deviation` (weight 1/4). A sample is counted as at most twice the average, so that one
 * unusually long hold does not make every waiter sleep too long; the mean deviation from the
 * previous average is kept the same way. The averages keep their fractions: rounding each step to
 * whole ms would hold a deviation of a few ms at 0 (a step under 4 ms rounds to nothing), and
 * waiters that believe holds never vary aim at the release with no margin. Stored, the average is
 * at least 1 and the deviation at least 0.
 */
function foldSample(withDeviation = false): string {
  if (!withDeviation) {
    return `if average <= 0 then average = sample
  else average = average + (math.min(sample, 2 * average) - average) / 4 end`;
  }
  return `if average <= 0 then average = sample
  else
    sample = math.min(sample, 2 * average)
    deviation = deviation + (math.abs(sample - average) - deviation) / 4
    average = average + (sample - average) / 4
  end`;
}

/**
 * The plain, fair and write lock's pace hash field that names (by its fencing token) the hold the
 * statistics are about: one taken on the slow path (its start is `at`), or a fast-path hold a
 * waiter has queued behind since (its start unknown: `at` deleted). Its release takes the slow
 * path (learn, hand off, reserve) exactly when this names it; an uncontended hold, taken and
 * released on the fast path, costs no statistics at all (issue 42).
 */
export const TIMED_FIELD = "timed";

/**
 * At a busy attempt that joins the queue while the lock is held (`pttl`): a hold taken on the
 * fast path (the token `fenceKey` shows is not TIMED_FIELD's) gets marked, so that its release
 * hands off and learns, and its start, unknown, is forgotten (`at` deleted): neither waiters nor
 * the release read a previous hold's start as this one's.
 */
export function markContendedHold(statsKey: string, fenceKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "markContendedHold",
    lua: () => markContendedHold(statsKey, fenceKey),
    needs: [statsKey, fenceKey, "pttl", "paceTtlMs"],
  });
  return `if pttl ~= -2 then
  local current = redis.call('GET', ${fenceKey}) or '0'
  if redis.call('HGET', ${statsKey}, '${TIMED_FIELD}') ~= current then
    redis.call('HSET', ${statsKey}, '${TIMED_FIELD}', current)
    redis.call('HDEL', ${statsKey}, 'at')
    redis.call('PEXPIRE', ${statsKey}, paceTtlMs)
  end
end`;
}

/**
 * After a hand-off of the freed lock (`handedOff`) by a script that does not learn otherwise (a
 * force release, the read-write lock's read release): the new hold starts now and is timed
 * (TIMED_FIELD), so that its release hands the lock on to the waiters queued behind it (an
 * untimed hold frees on the fast path, which hands off nothing) and learns how long it lasted.
 */
export function timeHandedOffHold(statsKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "timeHandedOffHold",
    lua: () => timeHandedOffHold(statsKey),
    needs: ["handedOff", statsKey, "now", "paceTtlMs"],
  });
  return `if handedOff then
  redis.call('HSET', ${statsKey}, 'at', now, '${TIMED_FIELD}', handedOff)
  redis.call('PEXPIRE', ${statsKey}, paceTtlMs)
end`;
}

/**
 * Reads the pace hash once (`pace`: at, hold, dev, cycle, rtt, `for`, set while the free lock
 * is reserved for the queue's head (reserveForHead), and TIMED_FIELD) for what a script then
 * learns (learnHold, learnHandOff, reserveForHead), which it gathers in `paceWrites`
 * (`paceWrite(field, value, …)`) and writes once (writePace): every HGET and HSET of the hash is
 * a billed command (issue 42). `pace[8]` is PACE_RENEWED_FIELD, for writePace. With `mayBeNil`
 * (`statsKey` an optional key), `pace` is empty where it is nil.
 */
export function readPace(statsKey: string, mayBeNil = false): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "readPace",
    lua: () => readPace(statsKey, mayBeNil),
    needs: [statsKey],
    provides: ["pace", "paceWrites", "paceWrite"],
  });
  const read = `redis.call('HMGET', ${statsKey}, 'at', 'hold', 'dev', 'cycle', 'rtt', 'for', '${TIMED_FIELD}', '${PACE_RENEWED_FIELD}')`;
  return `local pace = ${mayBeNil ? `${statsKey} and ${read} or {}` : read}
local paceWrites = {}
local function paceWrite(...)
  for _, each in ipairs({...}) do paceWrites[#paceWrites + 1] = each end
end`;
}

/** When a release frees the lock: folds the hold (since `at`) into its average and deviation. */
export function learnHold(): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "learnHold",
    lua: () => learnHold(),
    needs: ["now", "pace", "paceWrite"],
  });
  return `if pace[1] then
  local sample = math.max(1, now - tonumber(pace[1]))
  local average = tonumber(pace[2] or '0')
  local deviation = tonumber(pace[3] or '0')
  ${foldSample(true)}
  paceWrite('hold', math.max(1, average), 'dev', math.max(0, deviation))
end`;
}

/**
 * At a first acquisition (or the release that hands the lock over): when the new holder had
 * waited in the queue (`waited`, a Lua expression), the time since the previous holder took the
 * lock is one hand-off cycle; then the current hold starts now and any reservation is spent
 * (its three fields are written and deleted together, so `for` read by readPace tells).
 * With `fence` (a Lua expression: the new hold's token; the plain, fair and write lock, whose
 * uncontended holds take a fast path that times nothing), the hold is also marked as timed (see
 * TIMED_FIELD).
 */
export function learnHandOff(statsKey: string, waited: string, fence?: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "learnHandOff",
    lua: () => learnHandOff(statsKey, waited, fence),
    needs: [statsKey, "now", "pace", "paceWrite"],
  });
  const timed = fence === undefined ? "" : `, '${TIMED_FIELD}', ${fence}`;
  return `if ${waited} and pace[1] then
  local sample = math.max(1, now - tonumber(pace[1]))
  local average = tonumber(pace[4] or '0')
  ${foldSample()}
  paceWrite('cycle', math.max(1, average))
end
paceWrite('at', now${timed})
if pace[6] then redis.call('HDEL', ${statsKey}, 'for', 'for2', 'until') end`;
}

/**
 * What a script gathered in `paceWrites` (see readPace): one HSET, and a PEXPIRE only where the
 * TTL was last set more than half of it ago (PACE_RENEWED_FIELD, as readPace read it).
 */
export function writePace(statsKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "writePace",
    lua: () => writePace(statsKey),
    needs: [statsKey, "pace", "paceWrites", "paceTtlMs", "now"],
  });
  // unpack: Lua 5.1's, as Redis and Upstash run it (the embedded engine provides it too).
  return `if #paceWrites > 0 then
  local rearm = not pace[8] or now - pace[8] > paceTtlMs / 2
  if rearm then paceWrite('${PACE_RENEWED_FIELD}', now) end
  redis.call('HSET', ${statsKey}, unpack(paceWrites))
  if rearm then redis.call('PEXPIRE', ${statsKey}, paceTtlMs) end
end`;
}

/**
 * A round trip within this share of the average (either way) leaves it as it is: only the
 * reservation window (reserveForHead, between 10 and 500 ms) reads it, and a write of the pace
 * hash at every busy poll costs two billed commands (issue 42).
 */
export const ROUND_TRIP_KEPT_WITHIN = 0.25;

/**
 * At a waiter's busy poll: folds its reported round trip (ARGV `roundTripMs`, 0: unknown) in,
 * unless it is within ROUND_TRIP_KEPT_WITHIN of the average.
 */
export function learnRoundTrip(): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "learnRoundTrip",
    lua: () => learnRoundTrip(),
    needs: ["roundTripMs", "pace", "paceWrite"],
  });
  return `if tonumber(roundTripMs) > 0 then
  local sample = math.max(1, tonumber(roundTripMs))
  local average = tonumber(pace[5] or '0')
  if math.abs(sample - average) > ${ROUND_TRIP_KEPT_WITHIN} * average then
  ${foldSample()}
  paceWrite('rtt', math.max(1, average))
  end
end`;
}

/**
 * The busy reply every queued kind answers: {0, holder pttl (-2: free), position (-1: not
 * queued), average hold, hold deviation, average cycle, ms the holder has held, waiters queued}
 * (-1: unknown; the averages rounded to whole ms), from the caller's locals `pttl`, `position`
 * and `queueLength` (the queue's length where joinQueue just counted it, else nil) and the pace hash
 * as read by readPace.
 */
export function busyTurnReply(queueKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "busyTurnReply",
    lua: () => busyTurnReply(queueKey),
    needs: [queueKey, "now", "pttl", "position", "queueLength", "pace"],
  });
  return `local heldFor = -1
if pttl ~= -2 and pace[1] then heldFor = math.max(0, now - tonumber(pace[1])) end
local function ms(value) if value then return math.floor(tonumber(value) + 0.5) end return -1 end
return {0, pttl, position, ms(pace[2]), ms(pace[3]), ms(pace[4]), heldFor, queueLength or redis.call('ZCARD', ${queueKey})}`;
}

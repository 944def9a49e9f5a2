/** The options of `wait`, checked once; poll.ts and parking.ts pace by them. */
import { PUSH_LIMITS, WAIT_DEFAULTS } from "../defaults.js";
import { LockInputError } from "../errors.js";
import { shownSafely } from "../transport/failures.js";
import { checkCount, checkDuration, checkOptions, orDefault } from "../validate.js";

/**
 * How a waiter learns that the lock is free: by asking again (`"poll"`), by being woken
 * (`"push"`), or `"auto"`: woken where the kind and the backend can (docs/push.md), else asking.
 */
export type WaitMode = "auto" | "poll" | "push";

/**
 * Push mode: how a hand-off reaches a parked waiter. `"pop"`: a blocking pop on a list of its
 * own (`BLPOP` through the Redis client's `exec`). `"subscription"`: the lock's hand-off
 * channel, subscribed to over server-sent events (`redis.subscribe`; Upstash's REST API streams
 * pub/sub this way). `"auto"`: a pop while the backend's pops block and scripts run without
 * Upstash's key-locking flag, else a subscription where the Redis client has `subscribe`, else
 * polling (also once streams keep failing). docs/push.md.
 */
export type WakeBy = "auto" | "pop" | "subscription";

export interface WaitOptions {
  /**
   * Ceiling of the first backoff interval, in ms.
   * @default 10
   */
  initialDelayMs?: number;
  /**
   * Largest ceiling of the doubling backoff, in ms. A wait behind a holder with no turn in sight
   * then backs off with the time it has waited: a sleep of an eighth to a quarter of it (30 s at
   * most), so that requests grow with the logarithm of the wait (docs/api.md, "How a waiter paces
   * its polls"); with no holder seen it stays within this. Sleeps towards an expected turn
   * (queue-directed polling) last up to a third of the waiter timeout and land at most this long
   * after the turn. No sleep lasts past the holder's lease end or the caller's deadline.
   * @default 250
   */
  maxDelayMs?: number;
  /**
   * Most requests one acquisition may make, the first attempt included (each a Workers
   * subrequest and a billed Redis command); then LockBudgetExceededError. A guard against a
   * runaway loop, not a clock: on the defaults an hour's wait costs at most about 200 requests
   * for the plain lock polling, 2 200 for a fair lock or a semaphore polling (they ask every
   * third of `waiterTimeoutMs` to keep their place) and 4 800 for a fair lock's head over a
   * subscription (every 1.5 s). Workers Free allows 50 subrequests per invocation: set it lower
   * there.
   * @default 10000
   */
  maxPolls?: number;
  /**
   * How long a wait rides out a backend outage, in ms: a transient failure (network, timeout,
   * 5xx) counts as busy while time and polls are left, until this long after the first failure
   * of an unbroken run; then it is thrown as LockBackendError. A refusal (auth, script error) is
   * thrown at once. 0: no riding out.
   * @default 5000
   */
  outageMs?: number;
  /**
   * `"poll"`: a waiter asks again when its turn is expected. `"push"` (plain, fair and write
   * locks, semaphores, latches): the release hands the lock over inside Redis and wakes the
   * waiter holding it, by a blocking pop or over a subscription (`wakeBy`): one round trip per
   * hand-off; LockInputError where the Redis client can do neither. `"auto"`: push where the
   * Redis client and the server offer a wake channel that works, decided per client from what
   * the server shows, else polling. Other kinds, and `tryAcquire()` without `waitMs`, poll. See
   * docs/push.md.
   * @default "auto"
   */
  mode?: WaitMode;
  /**
   * Push mode: the longest one park (a blocking pop, or a wait for a word on a subscription)
   * lasts, in ms (100 to 60000); woken, or with its turn overdue, the waiter asks again. Over a
   * subscription a park may also last half the time waited so far, or until the turn the lock's
   * statistics expect for a waiter far back in its queue (within half of `waitMs`), 30 s at most,
   * when that is longer: a long wait costs attempts in the logarithm of its length, a long queue
   * about one. Every park counts against `maxPolls`.
   * @default 5000
   */
  parkMs?: number;
  /**
   * Push mode: the claim window, in ms (200 to 60000): the lease a hand-off grants (or the
   * waiter's own, if shorter), confirmed within half of it unless released first. A grant to a
   * waiter that crashed while parked frees the lock after this long.
   * @default 2000
   */
  claimMs?: number;
  /**
   * Push mode: how a hand-off reaches a parked waiter (see WakeBy and docs/push.md).
   * @default "auto"
   */
  wakeBy?: WakeBy;
}

export type WaitPolicy = Readonly<Required<WaitOptions>>;

export const DEFAULT_WAIT_POLICY: WaitPolicy = WAIT_DEFAULTS;

const WAIT_KEYS = [
  "initialDelayMs",
  "maxDelayMs",
  "maxPolls",
  "outageMs",
  "mode",
  "parkMs",
  "claimMs",
  "wakeBy",
] as const;

export function resolveWaitPolicy(
  options: unknown,
  base: WaitPolicy = DEFAULT_WAIT_POLICY,
): WaitPolicy {
  const given = checkOptions<WaitOptions>(options, "wait", WAIT_KEYS);
  const duration = (name: "initialDelayMs" | "maxDelayMs" | "outageMs", min: number) =>
    orDefault(given[name], base[name], (ms) => checkDuration(ms, `wait.${name}`, { min }));
  const policy = {
    initialDelayMs: duration("initialDelayMs", 1),
    maxDelayMs: duration("maxDelayMs", 1),
    maxPolls: orDefault(given.maxPolls, base.maxPolls, (n) =>
      checkCount(n, "wait.maxPolls", 1, 1_000_000),
    ),
    outageMs: duration("outageMs", 0),
    mode: orDefault(given.mode, base.mode, checkWaitMode),
    parkMs: orDefault(given.parkMs, base.parkMs, (ms) =>
      checkDuration(ms, "wait.parkMs", { min: PUSH_LIMITS.minParkMs, max: PUSH_LIMITS.maxParkMs }),
    ),
    claimMs: orDefault(given.claimMs, base.claimMs, (ms) =>
      checkDuration(ms, "wait.claimMs", {
        min: PUSH_LIMITS.minClaimMs,
        max: PUSH_LIMITS.maxClaimMs,
      }),
    ),
    wakeBy: orDefault(given.wakeBy, base.wakeBy, checkWakeBy),
  };
  return { ...policy, maxDelayMs: Math.max(policy.maxDelayMs, policy.initialDelayMs) };
}

function checkWakeBy(value: unknown): WakeBy {
  if (value === "auto" || value === "pop" || value === "subscription") return value;
  throw new LockInputError(
    `wait.wakeBy must be "auto", "pop" or "subscription", got ${shownSafely(value)}.`,
  );
}

function checkWaitMode(value: unknown): WaitMode {
  if (value === "auto" || value === "poll" || value === "push") return value;
  throw new LockInputError(
    `wait.mode must be "auto", "poll" or "push", got ${shownSafely(value)}.`,
  );
}

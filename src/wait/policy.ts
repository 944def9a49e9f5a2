/**
 * The wait policy: the options of `wait` (the client's, and one call's over them), checked once.
 * How they pace a wait is poll.ts's (blind backoff), turn.ts's (queue-directed) and parking.ts's.
 */
import { PUSH_LIMITS, WAIT_DEFAULTS } from "../defaults.js";
import { LockInputError } from "../errors.js";
import { shownSafely } from "../transport/failures.js";
import { checkCount, checkDuration, checkOptions, orDefault } from "../validate.js";

/** How a waiter learns that the lock is free: by asking again, or by being woken. */
export type WaitMode = "poll" | "push";

export interface WaitOptions {
  /** Ceiling of the first backoff interval, in ms. Default 10. */
  initialDelayMs?: number;
  /**
   * Largest backoff ceiling, in ms; the ceiling doubles per poll up to it. Default 250. Sleeps
   * towards an expected turn (queue-directed polling, when the lock knows its usual hold) are
   * not bound by it: they last up to a third of the waiter timeout, never past the holder's
   * lease end (at the head) or the caller's deadline.
   */
  maxDelayMs?: number;
  /**
   * Most requests one acquisition may make, the first attempt included. Each is a Workers
   * subrequest and a billed Redis command; when it runs out the caller gets
   * LockBudgetExceededError. Default 100 (Workers Free allows 50 subrequests per invocation:
   * set it lower there).
   */
  maxPolls?: number;
  /**
   * How long a wait rides out a backend outage, in ms. A poll that fails transiently (network
   * error, timeout, 5xx) counts as a busy answer while the wait has time and polls left, until
   * this long after the first failed poll of an unbroken run; then that failure is thrown as
   * LockBackendError. A refusal (auth, script error) is thrown at once. 0: no riding out.
   * @default 5000
   */
  outageMs?: number;
  /**
   * `"poll"`: a waiter asks again when its turn is expected. `"push"` (the plain, fair and
   * write locks): a waiter parks on a blocking list pop (`BLPOP` over REST, through the Redis client's
   * `exec`), and the holder's release hands the lock over inside Redis and wakes it already
   * holding the lock: one round trip per hand-off, about three requests per contended
   * acquisition. Push needs a server that keeps a request open for `parkMs` (Upstash does;
   * some proxies cut long requests). Other kinds, and `tryAcquire()` without `waitMs`, poll.
   * See docs/push.md.
   * @default "poll"
   */
  mode?: WaitMode;
  /**
   * Push mode: the longest one parking request waits, in ms (100 to 60000). A waiter parks
   * until it is woken or its turn is overdue (shorter near the head), then asks again; every
   * park counts against `maxPolls`.
   * @default 5000
   */
  parkMs?: number;
  /**
   * Push mode: the claim window, in ms (200 to 60000). A hand-off grants the woken waiter this
   * lease (or its own, if shorter); the waiter confirms its full lease within half of it unless
   * it released first. A grant to a waiter that crashed while parked therefore frees the lock
   * after this long.
   * @default 2000
   */
  claimMs?: number;
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
] as const;

/** Validates `options` over `base`. */
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
  };
  return { ...policy, maxDelayMs: Math.max(policy.maxDelayMs, policy.initialDelayMs) };
}

function checkWaitMode(value: unknown): WaitMode {
  if (value === "poll" || value === "push") return value;
  throw new LockInputError(`wait.mode must be "poll" or "push", got ${shownSafely(value)}.`);
}

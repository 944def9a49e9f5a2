/**
 * `durableObjectWatchdog(env.LOCK_WATCHDOG)`: the Renewer that hands lease renewal to the
 * `LockWatchdog` Durable Object, so a watchdog-mode lock or permit hold stays held across
 * invocations (queues, workflows, `waitUntil`) without timers in the holder. Costs:
 * docs/lease-vs-watchdog.md.
 */
import { LockBackendError, LockInputError } from "../errors.js";
import { checkLockName, checkOwner } from "../validate.js";
import type { HoldKind, Renewal, RenewalTarget, Renewer } from "../watchdog/renewer.js";
import { inProcessRenewer } from "../watchdog/renewer.js";
import { callWatchdog, type WatchdogRoute } from "./calls.js";
import {
  checkFencingToken,
  checkHoldKind,
  holdKeyOf,
  type ParsedHoldKey,
  parseHoldKey,
  WATCHDOG_PROTOCOL,
  type WatchdogStatus,
} from "./messages.js";
import {
  checkNamespace,
  type DurableObjectWatchdogOptions,
  type ResolvedWatchdogOptions,
  resolveWatchdogOptions,
} from "./options.js";
import type { WatchdogNamespace } from "./platform.js";
import { type ActiveRegistration, startRegistration } from "./registration.js";
import { objectNameFor } from "./shard.js";

/** How many (kind, name, owner) → key pairs a watchdog remembers for `heartbeat(handle)`. */
const REMEMBERED_KEYS = 1_024;

/**
 * A lock or permit hold as the watchdog knows it: a LockHandle or PermitHandle will do, or
 * `{ name, owner, kind?, fencingToken? }` carried to another invocation. `prefix`: the
 * LockClient's key prefix; default the one of the last hold of (kind, name, owner) started in
 * this isolate, else the watchdog's `prefix` option.
 */
export interface WatchedLock {
  readonly name: string;
  readonly owner: string;
  readonly prefix?: string;
  /**
   * What `name` names: a lock (reentrant, fair or write lock) or a semaphore's permit hold.
   * @default "semaphore" for a PermitHandle (it has `permits`), else "lock"
   */
  readonly kind?: HoldKind;
  /**
   * The hold meant (a handle's `fencingToken`), never another hold of the same owner. Without it
   * `heartbeat()` and `status()` mean the owner's latest hold, and `forget()` every hold.
   * @default undefined (no hold named)
   */
  readonly fencingToken?: number;
}

/**
 * The Renewer that registers watchdog-mode holds with the LockWatchdog Durable Object, which
 * renews them from its alarms; `heartbeat()`, `status()` and `forget()` reach a hold from any
 * invocation. Make it with `durableObjectWatchdog(namespace, options)`.
 */
export class DurableObjectWatchdog implements Renewer {
  readonly #namespace: WatchdogNamespace;
  readonly #options: ResolvedWatchdogOptions;
  readonly #active = new Set<ActiveRegistration>();
  /** Keys of holds started here, by kind, name and owner, so a handle finds its lease after it ended. */
  readonly #keys = new Map<string, string>();
  readonly #pending = new Set<Promise<unknown>>();
  readonly #inProcess = inProcessRenewer();

  /** Use `durableObjectWatchdog(namespace, options)`. */
  constructor(namespace: WatchdogNamespace, options?: DurableObjectWatchdogOptions) {
    this.#namespace = checkNamespace(namespace);
    this.#options = resolveWatchdogOptions(options);
  }

  get options(): ResolvedWatchdogOptions {
    return this.#options;
  }

  /**
   * @internal Called by LockClient when a lock or permits are acquired in watchdog mode. Holds
   * the object cannot renew with their kind's extend script (read locks, MultiLock, RedLock)
   * are renewed in process.
   */
  start(target: RenewalTarget, confirmedAt: number): Renewal {
    const hold = renewableHold(target);
    if (hold === undefined) return this.#inProcess.start(target, confirmedAt);
    const registration = startRegistration(
      {
        namespace: this.#namespace,
        options: this.#options,
        track: (promise) => this.#track(promise),
        forget: (which) => this.#active.delete(which),
      },
      { ...target, key: hold.key, kind: hold.kind },
      confirmedAt,
    );
    this.#active.add(registration);
    this.#remember(hold.kind, target.name, target.owner, hold.key);
    return registration;
  }

  /**
   * Tells the object the holder of `lock` is alive (needed when `heartbeatTimeoutMs` is set) and
   * returns the lease's state. When it says the lock is lost, a hold of it in this isolate is
   * told too: its handle's `signal` aborts. One Durable Object request.
   * @example
   * for (const step of steps) { await run(step); await watchdog.heartbeat(held); }
   */
  heartbeat(lock: WatchedLock): Promise<WatchdogStatus> {
    return this.#ask("heartbeat", lock);
  }

  /** The lease's state as the object knows it, without counting as a heartbeat. One request. */
  status(lock: WatchedLock): Promise<WatchdogStatus> {
    return this.#ask("status", lock);
  }

  /**
   * Stops the renewal of `lock` from an invocation without its handle (after
   * `lock.release({ owner })`), recorded as "released" so a holder heartbeating elsewhere learns
   * it. One request; otherwise the next renewal finds the lock released and stops anyway.
   */
  forget(lock: WatchedLock): Promise<WatchdogStatus> {
    return this.#ask("deregister", lock);
  }

  /**
   * Resolves when every watchdog request started so far has settled — pass it to
   * `ctx.waitUntil()` so that a deregistration is not cut off when the response is sent.
   */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  async #ask(route: WatchdogRoute, lock: WatchedLock): Promise<WatchdogStatus> {
    const { key, owner, fencingToken } = this.#resolve(lock);
    const hold = { v: WATCHDOG_PROTOCOL, key, owner, fencingToken };
    const body = route === "deregister" ? { ...hold, registration: null } : hold;
    const objectName = objectNameFor(this.#options.shardBy, key, owner);
    // Only holds registered before the question was sent: an earlier answer is not about them.
    // Each observes only an answer about its own hold (see ActiveRegistration.observe).
    const concerned = [...this.#active].filter(
      (active) =>
        active.key === key &&
        active.owner === owner &&
        (fencingToken === null || active.fencingToken === fencingToken) &&
        active.confirmed,
    );
    const outcome = await this.#track(
      callWatchdog(this.#namespace, objectName, route, body, this.#options.requestTimeoutMs),
    );
    if (outcome.kind === "refused") {
      throw new LockBackendError(
        `The Durable Object watchdog refused ${route}: ${outcome.message}`,
      );
    }
    const { status } = outcome;
    // forget() without a token stopped every hold of the owner, whichever one it answers for.
    const everyHold = route === "deregister" && fencingToken === null;
    for (const active of concerned) active.observe(status, everyHold);
    return status;
  }

  #resolve(lock: WatchedLock): { key: string; owner: string; fencingToken: number | null } {
    if (lock === null || typeof lock !== "object") {
      throw new LockInputError(
        "Pass the lock as a handle or as { name, owner, prefix?, kind?, fencingToken? }.",
      );
    }
    const name = checkLockName(lock.name);
    const owner = checkOwner(lock.owner);
    const kind =
      lock.kind === undefined && "permits" in lock ? "semaphore" : checkHoldKind(lock.kind);
    const fencingToken =
      lock.fencingToken === undefined ? null : checkFencingToken(lock.fencingToken);
    if (lock.prefix !== undefined) {
      return { key: holdKeyOf(kind, lock.prefix, name), owner, fencingToken };
    }
    const known = this.#keys.get(`${kind}\n${name}\n${owner}`);
    return { key: known ?? holdKeyOf(kind, this.#options.prefix, name), owner, fencingToken };
  }

  #remember(kind: HoldKind, name: string, owner: string, key: string): void {
    const id = `${kind}\n${name}\n${owner}`;
    this.#keys.delete(id);
    this.#keys.set(id, key);
    // Bounded: the oldest go first (a Map iterates in insertion order).
    if (this.#keys.size > REMEMBERED_KEYS) {
      const oldest = this.#keys.keys().next();
      if (!oldest.done) this.#keys.delete(oldest.value);
    }
  }

  #track<T>(promise: Promise<T>): Promise<T> {
    this.#pending.add(promise);
    const done = () => this.#pending.delete(promise);
    promise.then(done, done);
    return promise;
  }
}

/**
 * The hold the object can renew for `target`, with its kind's extend script: a well-formed key
 * of the target's kind (a lock's `<prefix>:{<name>}`, a semaphore's leases), else undefined
 * (renewed in process).
 */
function renewableHold(target: RenewalTarget): ParsedHoldKey | undefined {
  const { key, kind = "lock" } = target;
  if (key === undefined) return undefined;
  try {
    return parseHoldKey(key, [kind]);
  } catch {
    return undefined;
  }
}

/**
 * The Renewer of `new LockClient({ redis, watchdog: durableObjectWatchdog(env.LOCK_WATCHDOG) })`:
 * locks and permits acquired without `leaseMs` are renewed by the `LockWatchdog` object's alarms.
 * @param namespace the Durable Object binding of the `LockWatchdog` class
 * @example
 * const watchdog = durableObjectWatchdog(env.LOCK_WATCHDOG, { heartbeatTimeoutMs: 60_000 });
 * const client = new LockClient({ redis: Redis.fromEnv(env), watchdog });
 */
export function durableObjectWatchdog(
  namespace: WatchdogNamespace,
  options?: DurableObjectWatchdogOptions,
): DurableObjectWatchdog {
  return new DurableObjectWatchdog(namespace, options);
}

/**
 * RedLock (Redisson's RedissonRedLock; the Redis docs' algorithm): one lock over independent
 * databases, held while a majority hold it. Read docs/redlock.md first: its safety rests on
 * bounded clock drift and no pause past the validity, and it has no single fencing token.
 */
import type { LockClient } from "../../client.js";
import { checkLockName } from "../../validate.js";
import { databasesFor, type LockSource, runtimesOf } from "./databases.js";
import { type RedLockOptions, type RedLockSettings, resolveRedLockSettings } from "./options.js";
import { QuorumLock } from "./quorum-lock.js";

export type { RedLockOptions };

/**
 * The Redlock algorithm over independent databases (one LockClient each): `lock(name)` makes a
 * QuorumLock, held when a majority grants it within its validity. Read docs/redlock.md first.
 */
export class RedLock {
  readonly #clients: readonly LockSource[];
  readonly #settings: RedLockSettings;
  readonly #home: ReturnType<typeof runtimesOf>[number];

  /**
   * @param clients one LockClient per independent database (3 or 5 is usual; at most 16), each
   *   on its own Redis client. The first one's owner scope, polling policy, watchdog and events
   *   serve the RedLock's locks.
   * @param options drift model and timeouts; see RedLockOptions for the defaults
   * @example
   * const redLock = new RedLock([clientA, clientB, clientC]);
   * await using held = await redLock.lock("orders:42").acquire({ leaseMs: 10_000 });
   */
  constructor(clients: readonly LockClient[], options?: RedLockOptions) {
    const runtimes = runtimesOf(clients);
    this.#clients = [...clients];
    this.#settings = resolveRedLockSettings(options, runtimes.length);
    this.#home = runtimes[0]!;
  }

  get databases(): number {
    return this.#settings.databases;
  }

  /** floor(databases / 2) + 1. */
  get quorum(): number {
    return this.#settings.quorum;
  }

  /** The lock `name` on every database. Cheap: no request until you use it. */
  lock(name: string): QuorumLock {
    const checked = checkLockName(name);
    return new QuorumLock(
      checked,
      databasesFor(this.#clients, checked),
      this.#home,
      this.#settings,
    );
  }
}

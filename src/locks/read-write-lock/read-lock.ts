import type { LockHandle } from "../../hold/handle.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";
import { newOperationId } from "../../platform.js";
import type { AcquireOptions, AcquisitionSpec } from "../../wait/acquire.js";
import type { LockRuntime } from "../../wait/runtime.js";
import { SingleNameLock } from "../single-name-lock.js";
import { abandonReadAcquisition } from "./read-abandon.js";
import { attemptReadAcquire } from "./read-acquire.js";
import { extendReadHold } from "./read-extend.js";
import { forceReleaseReads } from "./read-force-release.js";
import { inspectReads } from "./read-inspect.js";
import { releaseReadHold } from "./read-release.js";
import type { ReadWriteSettings, ReadWriteSide } from "./settings.js";

/** The read side of a read-write lock (`readWriteLock.readLock()`): shared, reentrant, each read hold with its own lease. */
export class ReadLock extends SingleNameLock {
  readonly #settings: ReadWriteSettings;

  /** @internal Use `client.readWriteLock(name).readLock()`. */
  constructor({ runtime, keys, name, settings }: ReadWriteSide) {
    const { ctx } = runtime;
    super(runtime, name, {
      kind: "readLock",
      description: `The read lock "${name}"`,
      acquisition: () => this.#spec(runtime, keys),
      inspect: (owner) => inspectReads(ctx, keys, owner),
      forceRelease: () => forceReleaseReads(ctx, keys),
      release: (owner) => releaseReadHold(ctx, keys, owner, null),
    });
    this.#settings = settings;
  }

  /**
   * Takes a read hold once no other owner holds the write lock (and, with writer preference, no
   * writer waits, unless this owner already holds), waiting as long as `waitMs` allows. Throws
   * LockWaitTimeoutError, LockAbortedError or LockBudgetExceededError when the wait ends first.
   * @example
   * await using reading = await client.readWriteLock("catalog").readLock().acquire();
   */
  override acquire(options?: AcquireOptions): Promise<LockHandle> {
    return super.acquire(options);
  }

  /** The spec of one acquisition: a new read hold, named before the first attempt. */
  #spec(runtime: LockRuntime, keys: ReadWriteLockKeys): AcquisitionSpec {
    const { ctx } = runtime;
    const holdId = newOperationId();
    const { writerPreference } = this.#settings;
    return {
      runtime,
      name: this.name,
      // One renewal per read hold: each has its own expiry.
      watch: { localId: `${keys.reads}:${holdId}` },
      attempt: (owner, leaseMs, operationId) =>
        attemptReadAcquire(ctx, keys, owner, leaseMs, holdId, writerPreference, operationId),
      control: (owner) => ({
        extend: (ms) => extendReadHold(ctx, keys, owner, holdId, ms),
        release: (operationId) => releaseReadHold(ctx, keys, owner, holdId, operationId),
      }),
      renew: (owner, leaseMs) => extendReadHold(ctx, keys, owner, holdId, leaseMs),
      gaveUp: (owner, operationId) => abandonReadAcquisition(ctx, keys, owner, holdId, operationId),
    };
  }
}

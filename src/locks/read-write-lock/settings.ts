/** Options of a read-write lock, shared by its read and write sides. */

import { LockInputError } from "../../errors.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";
import { checkOptions } from "../../validate.js";
import { checkWaiterTimeout, type QueueOptions } from "../../wait/acquire.js";
import type { LockRuntime } from "../../wait/runtime.js";

/** Options of `client.readWriteLock(name, options)`. */
export interface ReadWriteLockOptions extends QueueOptions {
  /**
   * Writer preference: once a writer waits, owners that hold nothing yet wait behind it for a
   * read hold, so a steady stream of readers cannot starve writers. Readers that already hold
   * (re-entry, or the writer downgrading) still get read holds. With `false`, readers are
   * admitted whenever no writer holds the lock: more read throughput, but writers may wait
   * indefinitely. Default true.
   */
  writerPreference?: boolean;
}

export type ReadWriteSettings = Readonly<Required<ReadWriteLockOptions>>;

/** What each side (read lock, write lock) of one read-write lock is built from. */
export interface ReadWriteSide {
  readonly runtime: LockRuntime;
  readonly keys: ReadWriteLockKeys;
  /** The read-write lock's name. */
  readonly name: string;
  readonly settings: ReadWriteSettings;
}

export function resolveReadWriteSettings(options: unknown): ReadWriteSettings {
  const given = checkOptions<ReadWriteLockOptions>(options, "read-write lock options", [
    "writerPreference",
    "waiterTimeoutMs",
  ]);
  if (given.writerPreference !== undefined && typeof given.writerPreference !== "boolean") {
    throw new LockInputError(
      `writerPreference must be a boolean, got ${typeof given.writerPreference}.`,
    );
  }
  return {
    writerPreference: given.writerPreference ?? true,
    waiterTimeoutMs: checkWaiterTimeout(given.waiterTimeoutMs),
  };
}

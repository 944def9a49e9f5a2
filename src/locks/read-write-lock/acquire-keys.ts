import { newOperationId } from "../../ids.js";
import type { ReadWriteLockKeys } from "../keys.js";

/**
 * The operation id shared by every attempt of one acquisition (read or write). A request the
 * client gave up on (a timeout, a hung connection) may still reach Redis after the acquisition
 * went on; with one id per attempt, a late copy of a busy attempt took a hold after the owner had
 * acquired and released it (issue 13 case 5). Sharing the id, such a copy finds the record of the
 * attempt that acquired and replays it, taking nothing; a copy that arrives first takes the hold
 * that the next attempt then replays (re-armed: its lease counts from that attempt). Once a reply
 * says the hold of that id is gone ({-1}), the id is spent and the next attempt takes a new one.
 */
export class AcquisitionOperation {
  #id = newOperationId();

  get id(): string {
    return this.#id;
  }

  /** The hold this id took is gone: later attempts need a new id (the record stays as it is). */
  spend(): void {
    this.#id = newOperationId();
  }
}

/** The keys of both acquire scripts (read and write), in their declared names. */
export function acquireKeys(keys: ReadWriteLockKeys, operation: AcquisitionOperation) {
  return {
    lockKey: keys.lock,
    fenceKey: keys.fence,
    readsKey: keys.reads,
    readersKey: keys.readers,
    writersKey: keys.writers,
    operationKey: keys.operation(operation.id),
  } as const;
}

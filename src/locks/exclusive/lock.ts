import { lockKeys } from "../../hold/keys.js";
import { checkLockName } from "../../validate.js";
import type { AcquireOptions } from "../../wait/acquire.js";
import type { LockRuntime } from "../../wait/runtime.js";
import { registerLockInternals } from "../internals.js";
import { SingleNameLock } from "../single-name-lock.js";
import { exclusiveOperations } from "./operations.js";

export type { AcquireOptions };

/** The reentrant lock (Redisson's RLock). */
export class Lock extends SingleNameLock {
  /** @internal Use `client.lock(name)`. */
  constructor(runtime: LockRuntime, name: unknown) {
    const checked = checkLockName(name);
    const keys = lockKeys(runtime.prefix, checked);
    super(runtime, checked, exclusiveOperations(runtime, checked, keys));
    registerLockInternals(this, { runtime, keys, kind: "lock" });
  }
}

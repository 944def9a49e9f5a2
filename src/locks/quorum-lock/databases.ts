/** A RedLock's databases: one per LockClient, the lock's keys under its prefix. */
import { LockInputError } from "../../errors.js";
import type { OperationContext } from "../../hold/context.js";
import type { LockKeys } from "../../hold/script.js";
import type { RedisLike } from "../../transport/redis-like.js";
import type { LockRuntime } from "../../wait/runtime.js";
import { lockInternalsOf } from "../single-name-lock.js";
import { MAX_REDLOCK_DATABASES } from "./options.js";

export interface LockSource {
  lock(name: string): unknown;
}

export interface Database {
  /** In the clients given to `new RedLock()`; errors name databases by it. */
  readonly index: number;
  readonly ctx: OperationContext;
  readonly keys: LockKeys;
}

/** For looking at a client's runtime; creating a Lock sends nothing. */
const PROBE = "redlock";

/** LockClients on distinct Redis clients. */
export function runtimesOf(clients: unknown): LockRuntime[] {
  if (!Array.isArray(clients) || clients.length === 0 || clients.length > MAX_REDLOCK_DATABASES) {
    throw new LockInputError(
      `new RedLock(clients) needs an array of 1 to ${MAX_REDLOCK_DATABASES} LockClients, one per independent database (3 or 5 is usual).`,
    );
  }
  const seen = new Set<RedisLike>();
  return clients.map((client: unknown, index) => {
    const source = client as Partial<LockSource> | null;
    const internals =
      typeof source?.lock === "function" ? lockInternalsOf(source.lock(PROBE)) : undefined;
    if (internals === undefined) {
      throw new LockInputError(`new RedLock(clients): element ${index} is not a LockClient.`);
    }
    const { redis } = internals.runtime.ctx;
    // The same database counted twice would let one database make a majority.
    if (seen.has(redis)) {
      throw new LockInputError(
        `new RedLock(clients): element ${index} uses the same Redis client as an earlier one; each must reach an independent database.`,
      );
    }
    seen.add(redis);
    return internals.runtime;
  });
}

export function databasesFor(clients: readonly LockSource[], name: string): Database[] {
  return clients.map((client, index) => {
    const internals = lockInternalsOf(client.lock(name))!;
    return { index, ctx: internals.runtime.ctx, keys: internals.keys };
  });
}

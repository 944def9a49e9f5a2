/**
 * `CHAOS_TRACE=<file>`: every step of every wait (the public `waitStep` event), one JSON line
 * each with the time and the waiting owner, to take a violation apart afterwards (which waiter
 * slept how long, and why). Off unless the variable is set: a step per poll is a lot of lines.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { appendFileSync } from "node:fs";
import type { LockClient } from "../../src/index.js";

const waitingOwner = new AsyncLocalStorage<string>();
const traceFile = process.env.CHAOS_TRACE;

/** Runs one waiting acquire as `owner`'s, so that its steps name it. */
export function tracedAs<T>(owner: string, acquire: () => Promise<T>): Promise<T> {
  return traceFile === undefined ? acquire() : waitingOwner.run(owner, acquire);
}

/** Appends `client`'s wait steps to the trace file, when one is asked for. */
export function traceWaits(client: LockClient): LockClient {
  if (traceFile !== undefined) {
    client.on("waitStep", (step) => {
      const line = { at: Date.now(), owner: waitingOwner.getStore(), ...step };
      appendFileSync(traceFile, `${JSON.stringify(line)}\n`);
    });
  }
  return client;
}

/**
 * `CHAOS_TRACE=<file>`: every step of every wait (the public `waitStep` event), one JSON line
 * each with the time and the waiting owner, to take a violation apart afterwards (which waiter
 * slept how long, and why). Off unless the variable is set: a step per poll is a lot of lines.
 * The lines are kept in memory and written as the process exits: a synchronous write per step
 * would slow the run's event loop and change the timing a violation depends on.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { writeFileSync } from "node:fs";
import type { LockClient } from "../../src/index.js";

const waitingOwner = new AsyncLocalStorage<string>();
const traceFile = process.env.CHAOS_TRACE;
const lines: string[] = [];
if (traceFile !== undefined) {
  process.on("exit", () => writeFileSync(traceFile, lines.join("")));
}

/** Runs one waiting acquire as `owner`'s, so that its steps name it. */
export function tracedAs<T>(owner: string, acquire: () => Promise<T>): Promise<T> {
  return traceFile === undefined ? acquire() : waitingOwner.run(owner, acquire);
}

/** Appends `client`'s wait steps to the trace file, when one is asked for. */
export function traceWaits(client: LockClient): LockClient {
  if (traceFile !== undefined) {
    client.on("waitStep", (step) => {
      const line = { at: Date.now(), owner: waitingOwner.getStore(), ...step };
      lines.push(`${JSON.stringify(line)}\n`);
    });
  }
  return client;
}

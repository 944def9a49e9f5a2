/**
 * Replica mode on the embedded engine: a second engine whose keyspace is replaced, `lagMs` after
 * each primary command, by a copy of the primary's keyspace taken when that command answered.
 * Expiry stays absolute, so the replica reports an expired key gone on its own clock, as a Redis
 * replica does.
 */
import type { Backend } from "../backend.js";
import { createEmbeddedBackend } from "../engine/index.js";
import type { Entry, Keyspace } from "../engine/keyspace.js";
import type { ReplicationLink } from "./index.js";

class DelayedCopy implements ReplicationLink {
  #position = 0;
  #applied = 0;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  readonly #waiting = new Set<{ readonly position: number; readonly resolve: () => void }>();

  constructor(
    private readonly primary: Keyspace,
    private readonly replica: Keyspace,
    private readonly lagMs: number,
  ) {}

  async written(): Promise<number> {
    this.#position += 1;
    const position = this.#position;
    this.#schedule(position, this.primary.snapshot());
    return position;
  }

  async primaryPosition(): Promise<number> {
    return this.#position;
  }

  async applied(): Promise<number> {
    return this.#applied;
  }

  caughtUp(position: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.#applied >= position || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        position,
        resolve: () => {
          this.#waiting.delete(waiter);
          signal?.removeEventListener("abort", waiter.resolve);
          resolve();
        },
      };
      this.#waiting.add(waiter);
      signal?.addEventListener("abort", waiter.resolve, { once: true });
    });
  }

  async close(): Promise<void> {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const waiter of [...this.#waiting]) waiter.resolve();
  }

  #schedule(position: number, copy: Map<string, Entry>): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      // Timers of one delay fire in order; a copy older than the applied one is dropped anyway.
      if (position <= this.#applied) return;
      this.replica.restore(copy);
      this.#applied = position;
      for (const waiter of [...this.#waiting]) {
        if (waiter.position <= position) waiter.resolve();
      }
    }, this.lagMs);
    this.#timers.add(timer);
  }
}

/** Two embedded engines and the delayed copy between them. */
export async function startEmbeddedReplica(
  lagMs: number,
): Promise<{ primary: Backend; replica: Backend; link: ReplicationLink }> {
  let primaryKeyspace: Keyspace | undefined;
  let replicaKeyspace: Keyspace | undefined;
  const primary = await createEmbeddedBackend({ onKeyspace: (db) => (primaryKeyspace = db) });
  const replica = await createEmbeddedBackend({ onKeyspace: (db) => (replicaKeyspace = db) });
  if (primaryKeyspace === undefined || replicaKeyspace === undefined) {
    throw new Error("the embedded engine did not hand over its keyspace");
  }
  return { primary, replica, link: new DelayedCopy(primaryKeyspace, replicaKeyspace, lagMs) };
}

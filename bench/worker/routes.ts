/** The bench Worker's routes, one per library: shared by the Worker (app.ts) and the bench. */

/** `POST /<library>/:counter` increments the counter under that library's lock. */
export const WORKER_LIBRARIES = [
  "edgelock",
  "edgelock-poll",
  "edgelock-push",
  "edgelock-blind",
  "upstash-lock",
] as const;
export type WorkerLibrary = (typeof WORKER_LIBRARIES)[number];

/** Key of a counter's value in Redis. */
export const counterKey = (counter: string) => `bench-worker:value:${counter}`;

/** Response header: the Redis commands the lock sent during this invocation. */
export const LOCK_COMMANDS_HEADER = "x-lock-commands";

/**
 * `POST /burst/<library>/:counter`: the cold burst's route (scenario 6, first part): a section
 * of BURST_SECTION_MS (a sleep, no Redis command inside) under a lock waited for BURST_WAIT_MS.
 */
export const burstPath = (library: WorkerLibrary, counter: string) =>
  `/burst/${library}/${encodeURIComponent(counter)}`;
/** The cold burst's critical section, in ms (the Quickstart Worker). */
export const BURST_SECTION_MS = 50;
/** The cold burst's wait for the lock, in ms; then 409. */
export const BURST_WAIT_MS = 5_000;

/** Response header: when the Worker began the invocation (epoch ms, the Worker's clock). */
export const INVOCATION_STARTED_HEADER = "x-invocation-started";
/** Response header of a burst section: when it began, holding the lock (epoch ms). */
export const SECTION_STARTED_HEADER = "x-section-started";

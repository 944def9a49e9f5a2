/** The bench Worker's routes, one per library: shared by the Worker (app.ts) and the bench. */

/** `POST /<library>/:counter` increments the counter under that library's lock. */
export const WORKER_LIBRARIES = [
  "edgelock",
  "edgelock-push",
  "edgelock-blind",
  "upstash-lock",
] as const;
export type WorkerLibrary = (typeof WORKER_LIBRARIES)[number];

/** Key of a counter's value in Redis. */
export const counterKey = (counter: string) => `bench-worker:value:${counter}`;

/** Response header: the Redis commands the lock sent during this invocation. */
export const LOCK_COMMANDS_HEADER = "x-lock-commands";

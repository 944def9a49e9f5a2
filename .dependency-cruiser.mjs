// The import rules of src (npm run check:imports). Imports point down the layers of README's
// Architecture: a circle, or an arrow up, would tie a layer to what is built on it.
//
// Lock kinds: each folder under src/locks that makes one kind of lock (fair-lock, multi-lock,
// quorum-lock, read-write-lock, semaphore, count-down-latch) stands on the shared base and on
// no other kind. The shared base is what sits beside the kind folders: the files directly in
// src/locks (handles, keys, scripts…), exclusive/ (the exclusive hold hash: its operations and the plain
// Lock, which is them as they are; the fair lock, the write lock and RedLock build on them) and
// queue/ (the waiter queue's and the push hand-off's Lua). src/wait is the acquisition path every
// kind shares: kinds call it with their scripts, and it imports no kind.

const KINDS = "(fair-lock|multi-lock|quorum-lock|read-write-lock|semaphore|count-down-latch)";

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "A circle of imports has no bottom: move what both sides need to its own module.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "transport-below-wait-and-locks",
      severity: "error",
      comment: "transport speaks to Redis and knows nothing of waiting or of locks.",
      from: { path: "^src/transport/" },
      to: { path: "^src/(wait|locks)/" },
    },
    {
      name: "wait-below-kinds",
      severity: "error",
      comment:
        "Waiting is the same for every kind: a kind hands it its scripts, wait imports none.",
      from: { path: "^src/wait/" },
      to: { path: `^src/locks/(exclusive|${KINDS.slice(1, -1)})/` },
    },
    {
      name: "kinds-apart",
      severity: "error",
      comment: "A lock kind imports the shared base, never another kind's folder.",
      from: { path: `^src/locks/${KINDS}/` },
      to: { path: `^src/locks/${KINDS}/`, pathNot: "^src/locks/$1/" },
    },
    {
      name: "base-below-kinds",
      severity: "error",
      comment: "The shared base of the lock kinds imports none of them.",
      from: { path: "^src/locks/", pathNot: `^src/locks/${KINDS}/` },
      to: { path: `^src/locks/${KINDS}/` },
    },
    {
      name: "queue-below-exclusive",
      severity: "error",
      comment: "The queue's Lua and parking serve the exclusive hold's scripts, not the reverse.",
      from: { path: "^src/locks/queue/" },
      to: { path: "^src/locks/exclusive/" },
    },
  ],
  options: {
    includeOnly: "^src/",
    // Type-only imports count: a circle of types is a circle of meaning all the same.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};

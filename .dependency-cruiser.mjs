// The import rules of src (npm run check:imports): folders point down. The layers, top to bottom
// (docs/architecture.md draws them as the folder tree):
//
//   entries     index.ts, lock.ts, client.ts, plain-lock-client.ts, scripts.ts, and the side
//               entries hono/, inspector/, metrics/, durable-object/
//   kinds       locks/: one folder per kind of lock; exclusive/ is the exclusive hold that the
//               plain, fair and write locks and RedLock share; the files directly in locks/ are
//               the API written once on top of waiting (single-name-lock.ts…)
//   waiting     wait/: the one acquisition path, the client's runtime; wait/push/ its push mode
//   shared base hold/: keys, handles, typed scripts, replies, the Lua building blocks, queue/
//   bottom      transport/ (speaking to Redis) and watchdog/ (lease renewal), side by side
//   ground      errors, events, platform (ids, timers, scopes), validate, defaults (the files in src/ itself)
//
// One rule per boundary: a layer imports nothing above it. Circles are refused everywhere.

const KINDS = "(fair-lock|multi-lock|quorum-lock|read-write-lock|semaphore|count-down-latch)";
const GROUND = "^src/(errors|events|platform|validate|defaults)\\.ts$";
const ENTRY_FILES = "^src/(index|lock|client|plain-lock-client|scripts)\\.ts$";
const SIDE_ENTRIES = "^src/(durable-object|hono|inspector|metrics)/";

/** Everything at or above a layer, as `to` paths: what that layer's lower neighbours must not import. */
const ENTRIES = [ENTRY_FILES, SIDE_ENTRIES];
const KINDS_AND_UP = [...ENTRIES, "^src/locks/"];
const WAITING_AND_UP = [...KINDS_AND_UP, "^src/wait/"];
const BASE_AND_UP = [...WAITING_AND_UP, "^src/hold/"];

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
      name: "ground-below-all",
      severity: "error",
      comment:
        "errors, events, platform, validate and defaults are what every layer stands on: they import only each other.",
      from: { path: GROUND },
      to: { path: "^src/", pathNot: GROUND },
    },
    {
      name: "transport-and-watchdog-below-base",
      severity: "error",
      comment:
        "transport speaks to Redis and watchdog renews leases: neither knows of handles, waiting, lock kinds or entries.",
      from: { path: "^src/(transport|watchdog)/" },
      to: { path: BASE_AND_UP },
    },
    {
      name: "transport-and-watchdog-apart",
      severity: "error",
      comment: "The two bottom folders stand side by side: neither imports the other.",
      from: { path: "^src/(transport|watchdog)/" },
      to: { path: "^src/(transport|watchdog)/", pathNot: "^src/$1/" },
    },
    {
      name: "base-below-waiting",
      severity: "error",
      comment:
        "hold/ (keys, handles, scripts, the queue's Lua) is what waiting and the kinds share: it imports neither.",
      from: { path: "^src/hold/" },
      to: { path: WAITING_AND_UP },
    },
    {
      name: "waiting-below-kinds",
      severity: "error",
      comment:
        "Waiting is the same for every kind: a kind hands it its scripts, and wait imports no kind and no entry.",
      from: { path: "^src/wait/" },
      to: { path: KINDS_AND_UP },
    },
    {
      name: "push-below-the-wait-driver",
      severity: "error",
      comment:
        "The driver (acquire.ts) picks push or polling; push waiting builds on the wait contract (attempt, policy, poll.ts's turn pacing, retry, runtime), never on the driver.",
      from: { path: "^src/wait/push/" },
      to: { path: "^src/wait/acquire\\.ts$" },
    },
    {
      name: "kinds-below-entries",
      severity: "error",
      comment:
        "A lock kind is reached through a client, never the reverse. RedLock alone names LockClient (its constructor takes the clients of its databases; a type only).",
      from: { path: "^src/locks/", pathNot: "^src/locks/quorum-lock/red-lock\\.ts$" },
      to: { path: ENTRIES },
    },
    {
      name: "kinds-apart",
      severity: "error",
      comment:
        "A lock kind imports the layers below and exclusive/ (the exclusive hold), never another kind's folder.",
      from: { path: `^src/locks/${KINDS}/` },
      to: { path: `^src/locks/${KINDS}/`, pathNot: "^src/locks/$1/" },
    },
    {
      name: "exclusive-below-kinds",
      severity: "error",
      comment: "The exclusive hold serves the kinds built on it and imports none of them.",
      from: { path: "^src/locks/exclusive/" },
      to: { path: `^src/locks/${KINDS}/` },
    },
    {
      name: "kinds-api-below-kinds",
      severity: "error",
      comment:
        "The files directly in locks/ (the API written once, the members' registry) serve every kind and import none.",
      from: { path: "^src/locks/[^/]+$" },
      to: { path: "^src/locks/[^/]+/" },
    },
    {
      name: "clients-below-side-entries",
      severity: "error",
      comment:
        "The clients and their entries build no middleware, inspector, metrics or Durable Object; those build on them. scripts.ts alone lists their scripts (the catalogue of every script).",
      from: { path: ENTRY_FILES, pathNot: "^src/scripts\\.ts$" },
      to: { path: SIDE_ENTRIES },
    },
    {
      name: "side-entries-apart",
      severity: "error",
      comment: "hono, inspector, metrics and durable-object each stand on the core alone.",
      from: { path: SIDE_ENTRIES },
      to: { path: SIDE_ENTRIES, pathNot: "^src/$1/" },
    },
  ],
  options: {
    includeOnly: "^src/",
    // Type-only imports count: a circle of types is a circle of meaning all the same.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};

/**
 * The catalogue of every script edgelock sends (the locks', the Hono middleware's and the inspector's), for the
 * tests (each script's SHA-1 is pinned, so a changed script is a deliberate change) and for test
 * doubles that recognise scripts by their text. Building it holds every script to the declarations
 * of the Lua fragments in it (checkScriptNeeds), so a test that loads it fails on a local a
 * fragment needs and nothing before it declares. Multi-name scripts (multi-lock) take a variable
 * number of keys and stay plain Scripts. It stands above locks/ and hono/ so that listing them ties
 * neither to the other; no entry point imports it.
 */

import { LEAVE_QUEUE } from "./hold/queue/leave.js";
import { QUEUE_LENGTH } from "./hold/queue/length.js";
import { checkScriptNeeds, declaredFragments } from "./hold/script.js";
import { LOOKUP, PUT } from "./hono/response-store.js";
import { QUEUE_MEMBERS } from "./inspector/actions.js";
import { READ_LATCH } from "./inspector/inspect-latch.js";
import { READ_LOCK } from "./inspector/inspect-lock.js";
import { READ_SEMAPHORE } from "./inspector/inspect-semaphore.js";
import { LATCH_COUNT } from "./locks/count-down-latch/count.js";
import { LATCH_COUNT_DOWN, LATCH_SET_COUNT } from "./locks/count-down-latch/update.js";
import { EXTEND } from "./locks/exclusive/extend.js";
import { FORCE_RELEASE } from "./locks/exclusive/force-release.js";
import { INSPECT } from "./locks/exclusive/inspect.js";
import { ACQUIRE, FAIR_ACQUIRE } from "./locks/exclusive/lock.js";
import { RELEASE } from "./locks/exclusive/release.js";
import { MULTI_ACQUIRE } from "./locks/multi-lock/acquire.js";
import { MULTI_EXTEND } from "./locks/multi-lock/extend.js";
import { MULTI_RELEASE } from "./locks/multi-lock/release.js";
import { MULTI_ROLLBACK } from "./locks/multi-lock/rollback.js";
import { UNDO_ACQUIRE } from "./locks/quorum-lock/undo.js";
import { READ_ABANDON } from "./locks/read-write-lock/read-abandon.js";
import { READ_ACQUIRE } from "./locks/read-write-lock/read-acquire.js";
import { READ_EXTEND } from "./locks/read-write-lock/read-extend.js";
import { READ_FORCE_RELEASE } from "./locks/read-write-lock/read-force-release.js";
import { READ_INSPECT } from "./locks/read-write-lock/read-inspect.js";
import { READ_RELEASE } from "./locks/read-write-lock/read-release.js";
import { WRITE_ACQUIRE } from "./locks/read-write-lock/write-acquire.js";

/**
 * What the catalogue knows of a script: its name, its text, and its text as sent where Upstash's
 * per-key locking is on.
 */
export interface CataloguedScript {
  readonly name: string;
  readonly source: string;
  sha1(): Promise<string>;
  readonly keyLocking: { readonly source: string; sha1(): Promise<string> };
}

import { SEMAPHORE_ABANDON } from "./locks/semaphore/abandon.js";
import { SEMAPHORE_ACQUIRE } from "./locks/semaphore/acquire.js";
import { SEMAPHORE_CAPACITY, SEMAPHORE_STATE } from "./locks/semaphore/capacity.js";
import { SEMAPHORE_EXTEND } from "./locks/semaphore/extend.js";
import { SEMAPHORE_RELEASE } from "./locks/semaphore/release.js";

/** Every script edgelock may send, by name. */
export const SCRIPTS: ReadonlyMap<string, CataloguedScript> = new Map<string, CataloguedScript>(
  [
    ACQUIRE,
    EXTEND,
    FORCE_RELEASE,
    INSPECT,
    RELEASE,
    FAIR_ACQUIRE,
    LEAVE_QUEUE,
    QUEUE_LENGTH,
    READ_ABANDON,
    READ_ACQUIRE,
    READ_EXTEND,
    READ_FORCE_RELEASE,
    READ_INSPECT,
    READ_RELEASE,
    WRITE_ACQUIRE,
    MULTI_ACQUIRE,
    MULTI_EXTEND,
    MULTI_RELEASE,
    MULTI_ROLLBACK,
    UNDO_ACQUIRE,
    SEMAPHORE_ACQUIRE,
    SEMAPHORE_EXTEND,
    SEMAPHORE_RELEASE,
    SEMAPHORE_ABANDON,
    SEMAPHORE_CAPACITY,
    SEMAPHORE_STATE,
    LATCH_SET_COUNT,
    LATCH_COUNT_DOWN,
    LATCH_COUNT,
    LOOKUP,
    PUT,
    READ_LOCK,
    READ_SEMAPHORE,
    READ_LATCH,
    QUEUE_MEMBERS,
  ].map((script): [string, CataloguedScript] => [script.name, script]),
);

const fragments = declaredFragments();
for (const script of SCRIPTS.values()) checkScriptNeeds(script, fragments);

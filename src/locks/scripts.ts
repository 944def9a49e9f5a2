/**
 * The catalogue of every lock script, for the tests (each script's SHA-1 is pinned, so a changed
 * script is a deliberate change) and for test doubles that recognise scripts by their text.
 * Multi-name scripts (multi-lock) take a variable number of keys and stay plain Scripts.
 */
import type { Script } from "../transport/script.js";
import { ACQUIRE, FAIR_ACQUIRE } from "./exclusive/acquire.js";
import { EXTEND } from "./exclusive/extend.js";
import { FORCE_RELEASE } from "./exclusive/force-release.js";
import { INSPECT } from "./exclusive/inspect.js";
import { RELEASE } from "./exclusive/release.js";
import { MULTI_ACQUIRE } from "./multi-lock/acquire.js";
import { MULTI_EXTEND } from "./multi-lock/extend.js";
import { MULTI_RELEASE } from "./multi-lock/release.js";
import { MULTI_ROLLBACK } from "./multi-lock/rollback.js";
import { LEAVE_QUEUE } from "./queue/leave.js";
import { QUEUE_LENGTH } from "./queue/length.js";
import { UNDO_ACQUIRE } from "./quorum-lock/undo.js";
import { READ_ABANDON } from "./read-write-lock/read-abandon.js";
import { READ_ACQUIRE } from "./read-write-lock/read-acquire.js";
import { READ_EXTEND } from "./read-write-lock/read-extend.js";
import { READ_FORCE_RELEASE } from "./read-write-lock/read-force-release.js";
import { READ_INSPECT } from "./read-write-lock/read-inspect.js";
import { READ_RELEASE } from "./read-write-lock/read-release.js";
import { WRITE_ACQUIRE } from "./read-write-lock/write-acquire.js";

/** Every script a lock may send, by name. */
export const LOCK_SCRIPTS: ReadonlyMap<string, Script> = new Map(
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
  ].map((script) => [script.name, script]),
);

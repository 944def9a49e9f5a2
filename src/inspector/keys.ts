/**
 * How the inspector tells edgelock's keys apart: every key of a name sits under `<prefix>:{<name>}`
 * (one SCAN pattern finds them all), and the rest of the key says whose it is (a lock's, a
 * semaphore's or a latch's) and whether it exists only while that is in use. The suffixes come
 * from the kinds' own key builders, so a changed layout changes them here too.
 */

import { readWriteLockKeys } from "../hold/script.js";
import { latchKeys } from "../locks/count-down-latch/keys.js";
import { semaphoreKeys } from "../locks/semaphore/keys.js";

/** What the inspector reads, each with its own read script. */
export type InspectedKind = "lock" | "semaphore" | "latch";

/** A glob pattern matching `text` literally (SCAN's MATCH is a glob). */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (special) => `\\${special}`);
}

/** The SCAN pattern of every key edgelock keeps under `prefix`. */
export function keyPattern(prefix: string): string {
  return `${globEscape(prefix)}:{*`;
}

/** Lock name and suffix of an edgelock key, or undefined for another key. */
export function parseKey(
  prefix: string,
  key: string,
): { name: string; suffix: string } | undefined {
  const head = `${prefix}:{`;
  if (!key.startsWith(head)) return undefined;
  const close = key.indexOf("}", head.length);
  if (close < 0) return undefined;
  return { name: key.slice(head.length, close), suffix: key.slice(close + 1) };
}

// The kinds' key builders, asked for a probe name: what follows `{<name>}` is the same for all.
const PROBE = { prefix: "p", name: "n" };
const suffixOf = (key: string): string => key.slice(`${PROBE.prefix}:{${PROBE.name}}`.length);

/** A kind's own keys by suffix: all of them, those in use, and its operation records' head. */
function layout(
  kind: InspectedKind,
  keys: { operation(id: string): string },
  inUse: readonly string[],
) {
  const all: unknown[] = Object.values(keys);
  const fixed = all.filter((key): key is string => typeof key === "string");
  return {
    kind,
    all: new Set(fixed.map(suffixOf)),
    inUse: new Set(inUse.map(suffixOf)),
    operations: suffixOf(keys.operation("")),
  };
}

const semaphore = semaphoreKeys(PROBE.prefix, PROBE.name);
const latch = latchKeys(PROBE.prefix, PROBE.name);
const lock = readWriteLockKeys(PROBE.prefix, PROBE.name);
/** The kinds with a layout of their own; every other key under a name is a lock's. */
const OWN_LAYOUTS = [
  layout("semaphore", semaphore, [
    semaphore.leases,
    semaphore.queue,
    semaphore.timeouts,
    semaphore.parked,
  ]),
  layout("latch", latch, [latch.count]),
];
/** A lock's keys that exist only while it is held or waited for. */
const LOCK_IN_USE = new Set(
  [lock.lock, lock.queue, lock.timeouts, lock.parked, lock.reads, lock.writers].map(suffixOf),
);

/**
 * Whose edgelock key `key` is, and whether it is in use (`active`): a key that outlives use (a
 * fence, a capacity, statistics, an operation record) says nothing of who holds or waits.
 */
export function classifyKey(
  prefix: string,
  key: string,
): { name: string; kind: InspectedKind; active: boolean } | undefined {
  const parsed = parseKey(prefix, key);
  if (parsed === undefined) return undefined;
  const { name, suffix } = parsed;
  const own = OWN_LAYOUTS.find(
    (kind) => kind.all.has(suffix) || suffix.startsWith(kind.operations),
  );
  if (own !== undefined) return { name, kind: own.kind, active: own.inUse.has(suffix) };
  return { name, kind: "lock", active: LOCK_IN_USE.has(suffix) };
}

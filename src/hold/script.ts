/**
 * A hold's scripts: the key layouts they run on, their typed definitions and their replies.
 *
 * Typed script definitions. Each lock script is declared once: its name, its keys and arguments
 * by name (in KEYS/ARGV order), the reply shapes it may answer, and its Lua. The Lua starts with
 * a generated header (`local lockKey = KEYS[1]` …), so the body and every shared fragment refer
 * to names, never to positions; each shared fragment declares the names it reads (fragment.ts),
 * and checkScriptNeeds holds a script to them. `runScript` is the one way to call one: it takes keys and
 * arguments as records (the compiler checks that none is missing), plumbs the context's retry
 * and observer, and checks the reply against the declared shapes.
 */

import { LockBackendError } from "../errors.js";
import { callScript, Script } from "../transport/call.js";
import { shownSafely } from "../transport/failures.js";
import type { OperationContext } from "./context.js";
import { LUA_FRAGMENTS, type LuaFragment } from "./fragment.js";

/**
 * What a script answers: for each status (the first element) the lengths the reply may have;
 * "count" for one number of any value; "read by caller" for a reply that holds more than
 * integers (a stored record), which its caller reads itself and runScript does not take.
 */
export type Replies = ReplyShapes | "count" | "read by caller";

export interface ScriptSpec<K extends string, A extends string, R extends Replies = Replies> {
  /** A short name for errors and debugging, e.g. "lock.acquire". */
  readonly name: string;
  /** Key names in KEYS order. Names listed in `optionalKeys` may be left out (trailing only). */
  readonly keys: readonly K[];
  /** Keys a caller may omit; the script sees them as nil. */
  readonly optionalKeys?: readonly K[];
  /** Argument names in ARGV order. */
  readonly args: readonly A[];
  readonly replies: R;
  /** The body, after the generated header. */
  readonly lua: string;
}

/** A lock script: the transport's Script plus the names and shapes it was declared with. */
export class LockScript<
  K extends string = string,
  A extends string = string,
  R extends Replies = Replies,
> extends Script {
  readonly keyNames: readonly K[];
  readonly optionalKeys: readonly K[];
  readonly argNames: readonly A[];
  readonly replies: R;

  constructor(spec: ScriptSpec<K, A, R>) {
    super(spec.name, `${scriptHeader(spec.keys, spec.args)}\n${spec.lua}`);
    this.keyNames = spec.keys;
    this.optionalKeys = spec.optionalKeys ?? [];
    this.argNames = spec.args;
    this.replies = spec.replies;
  }
}

/** The `local <name> = KEYS[i]` / `ARGV[i]` lines that let a body use names. */
export function scriptHeader(keys: readonly string[], args: readonly string[]): string {
  return [
    ...keys.map((name, index) => `local ${name} = KEYS[${index + 1}]`),
    ...args.map((name, index) => `local ${name} = ARGV[${index + 1}]`),
  ].join("\n");
}

export function defineScript<K extends string, A extends string, R extends Replies>(
  spec: ScriptSpec<K, A, R>,
): LockScript<K, A, R> {
  return new LockScript(spec);
}

/**
 * `local a`, `local a, b = …`, `local function f(…)`, and a loop's `for i = …`, `for k, v in …`:
 * where a text declares which names.
 */
const LOCAL = /\b(?:local[ \t]+(?:function[ \t]+)?|for[ \t]+)(\w+(?:[ \t]*,[ \t]*\w+)*)/g;

function localsDeclared(text: string): { readonly at: number; readonly name: string }[] {
  return [...text.matchAll(LOCAL)].flatMap((match) =>
    (match[1] ?? "").split(",").map((name) => ({ at: match.index, name: name.trim() })),
  );
}

/**
 * Holds `script` to the declarations of the fragments in it (LUA_FRAGMENTS): wherever the text
 * of a declared fragment occurs in its source, every local the fragment needs must be declared
 * before it: by the generated header (the script's keys and arguments), by an earlier fragment,
 * or by the script's own text (blocks are not followed: a `local` anywhere before counts).
 * Throws an Error naming the script, the fragment and the local (the first fragment in the
 * source that lacks one); returns how many fragments it found. The script catalogue
 * (src/scripts.ts) runs it over every script as it is built, so a test that loads the catalogue
 * fails on a missing local. It runs there and not in defineScript: a Worker's bundle carries
 * neither the declarations (see fragment.ts) nor this check.
 */
export function checkScriptNeeds(
  script: Pick<Script, "name" | "source">,
  fragments = declaredFragments(),
): number {
  const { source } = script;
  const locals = localsDeclared(source);
  const found = fragments.flatMap((fragment) => {
    const at: number[] = [];
    for (let i = source.indexOf(fragment.text); i >= 0; i = source.indexOf(fragment.text, i + 1)) {
      at.push(i);
    }
    return at.map((index) => ({ fragment, index }));
  });
  found.sort((a, b) => a.index - b.index);
  for (const { fragment, index } of found) {
    const missing = fragment.needs?.find(
      (need) => need !== undefined && !locals.some((l) => l.at < index && l.name === need),
    );
    if (missing !== undefined) {
      throw new Error(
        `Script ${script.name}: fragment ${fragment.name} needs the local ${missing}, which ` +
          "nothing before it declares (a key or argument of the script, an earlier fragment, " +
          "or a local of the script's own text).",
      );
    }
  }
  return found.length;
}

/**
 * The declared fragments with their texts, each text once, and each declaration checked against
 * its own text: a local it says it provides must be declared there, and one it says it needs
 * must be read there (a declaration that no longer matches its text is an error too).
 */
export function declaredFragments(
  declared: readonly LuaFragment[] = LUA_FRAGMENTS,
): (LuaFragment & { readonly text: string })[] {
  const fragments = new Map<string, LuaFragment & { readonly text: string }>();
  const count = LUA_FRAGMENTS.length;
  for (const fragment of [...declared]) {
    const text = typeof fragment.lua === "string" ? fragment.lua : fragment.lua();
    const own = new Set(localsDeclared(text).map((local) => local.name));
    const notProvided = fragment.provides?.find((name) => !own.has(name));
    const notRead = fragment.needs?.find(
      (name) => name !== undefined && !new RegExp(`\\b${name}\\b`).test(text),
    );
    if (notProvided !== undefined || notRead !== undefined) {
      throw new Error(
        notProvided === undefined
          ? `Fragment ${fragment.name} says it needs ${notRead}, which its text does not read.`
          : `Fragment ${fragment.name} says it provides ${notProvided}, which its text does not declare.`,
      );
    }
    fragments.set(`${fragment.name}\n${text}`, { ...fragment, text });
  }
  // Building a text again declared its fragments again: they are listed already.
  LUA_FRAGMENTS.length = count;
  return [...fragments.values()];
}

type KeysOf<S> = S extends LockScript<infer K, string> ? K : never;
type ArgsOf<S> = S extends LockScript<string, infer A> ? A : never;

/** Keys by name; optional ones may be undefined (and are then not sent). */
export type ScriptKeys<S extends LockScript> = Record<KeysOf<S>, string | undefined>;
export type ScriptArgs<S extends LockScript> = Record<ArgsOf<S>, string | number>;

/**
 * Runs `script` with named keys and arguments; the reply is checked against its shapes, or
 * against `replies` where this call can get only some of them (e.g. without optional keys).
 */
export async function runScript<S extends LockScript<string, string, ReplyShapes | "count">>(
  ctx: OperationContext,
  script: S,
  keys: ScriptKeys<S>,
  args: ScriptArgs<S>,
  replies: ReplyShapes | "count" = script.replies,
): Promise<number[]> {
  const raw = await callScript(
    ctx.redis,
    script,
    keyList(script, keys as Record<string, string | undefined>),
    script.argNames.map((name) => String((args as Record<string, string | number>)[name])),
    ctx.retry,
    ctx.observer,
  );
  return replies === "count"
    ? integerReply(raw, script.name)
    : checkedReply(raw, script.name, replies);
}

/**
 * The keys in their declared order. KEYS are positional, so the optional ones end the list: the
 * first one left out leaves out all after it, and passing a later one anyway is a mistake (it
 * would silently not be sent).
 */
function keyList(script: LockScript, keys: Record<string, string | undefined>): string[] {
  const list: string[] = [];
  let leftOut: string | undefined;
  for (const name of script.keyNames) {
    const key = keys[name];
    if (key === undefined) {
      if (!script.optionalKeys.includes(name)) {
        throw new TypeError(`Script ${script.name} needs key ${name}.`);
      }
      leftOut ??= name;
    } else if (leftOut !== undefined) {
      throw new TypeError(`Script ${script.name}: key ${name} cannot be sent without ${leftOut}.`);
    } else {
      list.push(key);
    }
  }
  return list;
}

/*
 * Every key layout, in one place. A lock's keys share the hash tag `{<name>}`: one Cluster slot
 * per script, and Upstash's per-key script locking sees every key in KEYS.
 */

/** A reentrant lock's; the other exclusive kinds build on them. */
export interface LockKeys {
  /** Hash: owner token → hold count. Its TTL is the lease. */
  readonly lock: string;
  /** Counter of first acquisitions; never expires, so fencing tokens only grow. */
  readonly fence: string;
  /**
   * Hash: `at` (server ms of the current holder's first acquisition), `hold`, `dev`, `cycle`,
   * `rtt` (average ms: hold, its mean deviation, acquire → next acquire, waiters' round trip),
   * `for`, `for2`, `until` (a release's reservation: the two head waiters, till server ms).
   */
  readonly holdStats: string;
  /**
   * Sorted set: waiting acquisition (`<owner> <operation id>`, one place per acquisition, so two
   * tasks of one owner wait apart) → ticket (enqueue time in ms, strictly increasing).
   */
  readonly queue: string;
  /** Sorted set: waiting acquisition (as in `queue`) → deadline (server ms), refreshed by polls. */
  readonly timeouts: string;
  /**
   * Hash: parked acquisition (as in `queue`) → `<claim ms> <lease ms> <operation id> <server ms
   * of its latest registration> <server ms its park ends by>[ sub<n>.<k>]`: what a release needs
   * to hand it the lock (` sub<n>.<k>`: it listens on `handOffChannels[k]`, registered by its
   * attempt number n); after a hand-off announced there, `granted <fence> <server ms>` until its
   * next attempt takes it or its hold's release clears it (recordAnnouncedGrant in
   * queue/hand-off.ts).
   */
  readonly parked: string;
  /**
   * Pub/sub channels, HAND_OFF_SHARDS of them (not keys, but declared in KEYS like ones): a
   * release announces a hand-off on the channel its waiter registered with (`<operation id>
   * grant …`, `<operation id> behind …`; see queue/hand-off.ts), so a word reaches the streams of
   * one shard of the waiters, not all of them.
   */
  readonly handOffChannels: readonly string[];
  /** One mutating operation's result, kept briefly to answer re-sent requests. */
  operation(id: string): string;
  /**
   * List a parked waiter blocks on, one per acquisition, so that a park abandoned by an earlier
   * acquisition of the owner never takes its grant. The release script derives it and `op` from
   * the lock key as these lines do (handOffToParkedHead in queue/hand-off.ts), which is why the
   * hand-off is cut out of scripts sent with Upstash's key-locking flag.
   */
  wake(id: string): string;
}

/**
 * Hand-off channels per lock: a word reaches about 1/HAND_OFF_SHARDS of the subscribed waiters.
 * Every script that may hand off declares them all (HAND_OFF_CHANNEL_KEYS), as Upstash's
 * key-locking flag wants.
 */
export const HAND_OFF_SHARDS = 8;

/**
 * A pub/sub channel name that survives the subscribe URL: `@upstash/redis` puts the channel in
 * the path (`/subscribe/<channel>`) unescaped, and a `/`, `?`, `#`, `%` or `\` in a lock's name
 * would subscribe to another channel than the scripts publish on (every word lost). Escaped with
 * `~` and the character's hex code, so that two names never share a channel.
 */
export function subscribableChannel(channel: string): string {
  return channel.replace(
    /[~/?#%\\]/g,
    (char) => `~${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** `prefix` and `name` were validated (no braces). */
export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${name}}`;
  return {
    lock: base,
    fence: `${base}:fence`,
    holdStats: `${base}:holds`,
    queue: `${base}:queue`,
    timeouts: `${base}:timeouts`,
    parked: `${base}:parked`,
    handOffChannels: Array.from({ length: HAND_OFF_SHARDS }, (_, shard) =>
      subscribableChannel(`${base}:hand-offs:${shard}`),
    ),
    operation: (id) => `${base}:op:${id}`,
    wake: (id) => `${base}:wake:${id}`,
  };
}

/** The plain lock's: the same queue, only the acquire rule differs. */
export type FairLockKeys = LockKeys;

export const fairLockKeys = lockKeys;

/**
 * The write side is a reentrant lock's hash, so the write lock extends, releases and inspects
 * like one; read holds live apart, each with its own expiry.
 */
export interface ReadWriteLockKeys extends LockKeys {
  /**
   * Sorted set: read hold (`<owner> <hold id>`) → expiry (server ms); its TTL is the last hold's
   * end. An owner's read holds are counted from it (no second key to keep in step).
   */
  readonly reads: string;
  /** Sorted set: waiting writer (as in `queue`) → deadline (server ms), for writer preference. */
  readonly writers: string;
}

export function readWriteLockKeys(prefix: string, name: string): ReadWriteLockKeys {
  const keys = lockKeys(prefix, name);
  return {
    ...keys,
    reads: `${keys.lock}:reads`,
    writers: `${keys.lock}:writers`,
  };
}

/*
 * Scripts reply with flat integer arrays, which survive the REST encoding unchanged; anything
 * else means an unexpected backend, never to be read as "acquired" or "released".
 */

function unexpected(value: unknown, scriptName: string): LockBackendError {
  return new LockBackendError(
    `Unexpected reply from ${scriptName}: ${shownSafely(value)}. Is the redis option an HTTP Redis client with default decoding?`,
  );
}

/** Numeric strings accepted; else LockBackendError. */
export function integerReply(value: unknown, scriptName: string): number[] {
  if (Array.isArray(value) && value.length > 0) {
    const numbers = value.map((item) => (typeof item === "string" ? Number(item) : item));
    if (numbers.every((item) => typeof item === "number" && Number.isInteger(item))) {
      return numbers as number[];
    }
  }
  throw unexpected(value, scriptName);
}

/** Per status (the first element), the lengths it may have; "any": one element per member. */
export type ReplyShapes = Readonly<Record<number, readonly number[] | "any">>;

/** Like integerReply, with a status and length the script documents. */
export function checkedReply(value: unknown, scriptName: string, shapes: ReplyShapes): number[] {
  const numbers = integerReply(value, scriptName);
  const lengths = shapes[numbers[0] ?? Number.NaN];
  if (lengths === "any" || lengths?.includes(numbers.length)) return numbers;
  throw unexpected(value, scriptName);
}

export const YES_OR_NO: ReplyShapes = { 1: [1], 0: [1] };

/** Redis's -2 (no key) and -1 (no expiry) become null. */
export function ttlOrNull(pttl: number | undefined): number | null {
  return pttl === undefined || pttl < 0 ? null : pttl;
}

/**
 * The inspector's commands, SCAN and a read-only script per lock, through the client's `exec`
 * (RedisLike has no SCAN); failures are re-thrown without the command `@upstash/redis` echoes.
 */
import { LockBackendError, LockInputError } from "../errors.js";
import { sentWithKeyLocking } from "../transport/call.js";
import { classifyFailure, redisMessageOf, sanitizedFailure } from "../transport/failures.js";
import type { RedisLike } from "../transport/redis-like.js";
import { sha1Hex } from "../transport/sha1.js";

/** The shebang of a read-only script run under Upstash's per-key locking (EVAL_RO requires `no-writes`). */
export const READ_ONLY_KEY_LOCKING_SHEBANG = "#!lua flags=no-writes,allow-key-locking";

export type ExecRedis = RedisLike & Required<Pick<RedisLike, "exec">>;

export function checkExec(redis: RedisLike): ExecRedis {
  if (typeof redis.exec !== "function") {
    throw new LockInputError(
      "The inspector needs a Redis client that can send any command (SCAN, EVAL_RO): an " +
        "@upstash/redis client (redis.exec), or a RedisLike with exec(command).",
    );
  }
  return redis as ExecRedis;
}

/** Counts the commands one refresh sends, since Upstash bills each. */
export class CommandCounter {
  scan = 0;
  read = 0;
}

/** A Redis refusal a read-only token earns (Upstash's ACL answer, as the local server's). */
export function isPermissionRefusal(error: unknown): boolean {
  return /^NOPERM\b/i.test(redisMessageOf(error).trim());
}

function backendError(what: string, error: unknown, secrets: readonly string[]): LockBackendError {
  const safe = sanitizedFailure(error, secrets);
  return new LockBackendError(`The inspector's ${what} failed: ${safe.message}`, { cause: safe });
}

/** One SCAN call; resolves to the next cursor and the keys of this page. */
export async function scanPage(
  redis: ExecRedis,
  cursor: string,
  pattern: string,
  count: number,
  counter: CommandCounter,
): Promise<{ cursor: string; keys: string[] }> {
  counter.scan += 1;
  let reply: unknown;
  try {
    reply = await redis.exec(["SCAN", cursor, "MATCH", pattern, "COUNT", String(count)]);
  } catch (error) {
    if (isPermissionRefusal(error)) throw error;
    throw backendError("SCAN", error, []);
  }
  if (!Array.isArray(reply) || reply.length !== 2 || !Array.isArray(reply[1])) {
    throw new LockBackendError("The inspector's SCAN got a reply that is not [cursor, keys].");
  }
  return { cursor: String(reply[0]), keys: (reply[1] as unknown[]).map(String) };
}

/**
 * A read-only Lua script run with EVALSHA_RO (EVAL_RO when Redis lost it), which a read-only
 * token may run (EVAL is a write to Upstash's ACL). Where scripts carry the per-key locking
 * flag this one does too, beside `no-writes`, which EVAL_RO requires of a shebang script.
 */
export class ReadScript {
  readonly #plain: string;
  readonly #flagged: string;
  readonly #sha = new Map<string, Promise<string>>();
  readonly #cachedOn = new WeakSet<ExecRedis>();

  constructor(
    /** Its name in the script catalogue (src/scripts.ts), e.g. "inspector.readLock". */
    readonly name: string,
    lua: string,
  ) {
    this.#plain = lua;
    this.#flagged = `${READ_ONLY_KEY_LOCKING_SHEBANG}\n${lua}`;
  }

  /** The script's text, as sent where per-key locking is off. */
  get source(): string {
    return this.#plain;
  }

  sha1(): Promise<string> {
    return this.#shaOf(this.#plain);
  }

  /** The script as sent where per-key locking is on: the same text under the read-only shebang. */
  get keyLocking(): { readonly source: string; sha1(): Promise<string> } {
    return { source: this.#flagged, sha1: () => this.#shaOf(this.#flagged) };
  }

  #shaOf(source: string): Promise<string> {
    let sha = this.#sha.get(source);
    if (sha === undefined) {
      sha = sha1Hex(source);
      this.#sha.set(source, sha);
    }
    return sha;
  }

  async run(
    redis: ExecRedis,
    keys: readonly string[],
    args: readonly string[],
    counter: CommandCounter,
  ): Promise<unknown> {
    try {
      return await sentWithKeyLocking(redis, (flagged) =>
        this.#runAs(flagged ? this.#flagged : this.#plain, redis, keys, args, counter),
      );
    } catch (error) {
      throw backendError("read", error, [this.#flagged, this.#plain]);
    }
  }

  async #runAs(
    source: string,
    redis: ExecRedis,
    keys: readonly string[],
    args: readonly string[],
    counter: CommandCounter,
  ): Promise<unknown> {
    const sha = this.#shaOf(source);
    const tail = [String(keys.length), ...keys, ...args];
    // The first run on a client sends the text (which caches it), later runs only the SHA-1.
    if (this.#cachedOn.has(redis)) {
      counter.read += 1;
      try {
        return await redis.exec(["EVALSHA_RO", await sha, ...tail]);
      } catch (error) {
        if (classifyFailure(error) !== "noscript") throw error;
      }
    }
    counter.read += 1;
    const reply = await redis.exec(["EVAL_RO", source, ...tail]);
    this.#cachedOn.add(redis);
    return reply;
  }
}

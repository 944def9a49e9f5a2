/**
 * Server profiles: which server the local REST API behaves like.
 * - `upstash`: production Upstash as its docs describe it (docs/upstash.md): blocking commands
 *   answer at once (or fail), `#!lua flags=allow-key-locking` is honoured and enforced, Upstash's
 *   size limits and error texts apply.
 * - `redis`: a plain Redis behind a REST proxy: blocking pops block, the flag is refused as
 *   Redis 7 refuses it.
 */

export type ServerProfile = "upstash" | "redis";

/**
 * How the `upstash` profile answers a blocking command (BLPOP…, XREAD BLOCK, WAIT):
 * `"immediate"` runs it as if its timeout had passed at once (the element if there is one, else
 * nil), as Upstash's REST API was seen to do; `"error"` refuses it, as Upstash's docs say
 * ("not supported").
 */
export type BlockingMode = "immediate" | "error";

/**
 * The profile when none is chosen: production Upstash, so that what passes locally is what
 * production documents. `redis` serves what only a Redis behind a REST proxy has (blocking pops).
 */
export const DEFAULT_PROFILE: ServerProfile = "upstash";
export const DEFAULT_BLOCKING_MODE: BlockingMode = "immediate";

/** Environment variable that picks the profile of servers started without an explicit one. */
export const PROFILE_ENV = "EDGELOCK_DEV_PROFILE";

export function isServerProfile(value: unknown): value is ServerProfile {
  return value === "upstash" || value === "redis";
}

export function isBlockingMode(value: unknown): value is BlockingMode {
  return value === "immediate" || value === "error";
}

/**
 * The profile to use: the explicit choice, else `EDGELOCK_DEV_PROFILE`, else DEFAULT_PROFILE.
 * A bad environment value throws rather than silently testing against the wrong server.
 */
export function resolveProfile(
  explicit: ServerProfile | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ServerProfile {
  if (explicit !== undefined) return explicit;
  const fromEnv = env[PROFILE_ENV];
  if (fromEnv === undefined || fromEnv === "") return DEFAULT_PROFILE;
  if (!isServerProfile(fromEnv)) {
    throw new Error(`${PROFILE_ENV} must be "upstash" or "redis", not ${JSON.stringify(fromEnv)}`);
  }
  return fromEnv;
}

/** Upstash's documented limits (redis/troubleshooting/max_*_exceeded.mdx). */
export const UPSTASH_LIMITS = {
  /** "max key size … 32Kb", a hard-coded limit. */
  maxKeyBytes: 32 * 1024,
  /** The request size: 10 MB (research/upstash.md; the troubleshooting page still says 1 MB). */
  maxRequestBytes: 10 * 1024 * 1024,
  /** A single record (value): 100 MB. */
  maxRecordBytes: 100 * 1024 * 1024,
} as const;

export const upstashErrors = {
  keySize: (limit: number, actual: number) =>
    `ERR max key size exceeded. Limit: ${limit} bytes, Actual: ${actual} bytes`,
  requestSize: "ERR max request size exceeded",
  recordSize: "ERR max single record size exceeded",
  /** The text Upstash answers for commands it does not serve (seen in user reports). */
  notAvailable: (name: string) => `ERR Command is not available: '${name.toUpperCase()}'`,
  dynamicKey: (key: string) =>
    `ERR Dynamic keys are not allowed in Lua scripts when 'allow-key-locking' flag is set. Key was: ${key}`,
  /** Not Upstash's words (its text is undocumented): a command whose keys we cannot check. */
  uncheckedCommand: (name: string) =>
    `ERR Command '${name}' is not allowed in Lua scripts when 'allow-key-locking' flag is set (edgelock dev cannot tell its keys)`,
  /** Redis's ACL answer; Upstash's read-only token is the ACL user `default_ro`. */
  readOnly: (name: string) => `NOPERM this user has no permissions to run the '${name}' command`,
} as const;

export const DYNAMIC_KEY_PREFIX =
  "ERR Dynamic keys are not allowed in Lua scripts when 'allow-key-locking' flag is set. Key was: ";

/** What a failed request means; ambiguous ones are safe to re-send (idempotent by operation id). */
export type FailureKind =
  /** The script is not in the server's cache: send it with EVAL. */
  | "noscript"
  /** The server answered and refused (auth, a script or argument error): re-sending won't help. */
  | "refused"
  /** Network failure, timeout, 5xx, a body that is not JSON: the outcome is unknown. */
  | "ambiguous";

// Redis error codes that are final answers. BUSY, LOADING, TRYAGAIN, MASTERDOWN are transient.
const REFUSAL = /^(?:ERR|WRONGTYPE|WRONGPASS|NOAUTH|NOPERM|EXECABORT|OOM|READONLY|NOTBUSY)\b/;
const AUTH = /WRONGPASS|NOAUTH|unauthori[sz]ed|invalid token|missing auth/i;

/** The server's part of an error message, without the echoed command (which holds owner tokens). */
export function redisMessageOf(error: unknown): string {
  const raw = error instanceof Error ? error.message : String(error);
  const withoutCommand = raw.split(", command was:")[0] ?? raw;
  const withoutPrefix = withoutCommand
    .replace(/^Command failed: /, "")
    .replace(/^Command \d+ \[ \w+ \] failed: /, "");
  return withoutPrefix.length > 300 ? `${withoutPrefix.slice(0, 300)}…` : withoutPrefix;
}

/** Whether a server's message refuses the credentials (HTTP 401/403 of the REST API). */
export function isAuthRefusal(message: string): boolean {
  return AUTH.test(message);
}

export function classifyFailure(error: unknown): FailureKind {
  const message = redisMessageOf(error);
  if (/NOSCRIPT/i.test(message)) return "noscript";
  if (AUTH.test(message) || REFUSAL.test(message)) return "refused";
  return "ambiguous";
}

/**
 * Failures worth trying again after a pause, which a waiter with time left treats as busy: every
 * attempt of one acquisition carries the same operation id, so one that did run is replayed.
 */
const transientFailures = new WeakSet<object>();

export function markTransient<E extends object>(error: E): E {
  transientFailures.add(error);
  return error;
}

/** Whether `error` is a transient failure (false for a refusal or anything unmarked). */
export function isTransientFailure(error: unknown): boolean {
  return typeof error === "object" && error !== null && transientFailures.has(error);
}

/** Strings this long are elided from what errors show: owner tokens (32), operation ids (24). */
const LONG_STRING = 20;
/** A long token-like run (a REST token a proxy echoed, an id). */
const TOKEN_LIKE = /[\w+/=-]{32,}/g;

/**
 * A copy of `error` safe to log: its `name` and `code`, the server's message with `secrets` and
 * long token-like runs elided, its cause likewise. The original goes: `@upstash/redis` errors
 * and their stacks carry the whole command (Lua, keys, owner token).
 */
export function sanitizedFailure(error: unknown, secrets: readonly string[], depth = 0): Error {
  let message = redisMessageOf(error);
  for (const secret of secrets) if (secret.length > 9) message = message.split(secret).join("…");
  const safe: Error & { code?: string } = new Error(message.replace(TOKEN_LIKE, "…"));
  const source = error instanceof Error ? error : undefined;
  safe.name = source?.name ?? typeof error;
  safe.stack = `${safe.name}: ${safe.message}`;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") safe.code = code.slice(0, LONG_STRING);
  if (source?.cause !== undefined && depth < 4) {
    safe.cause = sanitizedFailure(source.cause, secrets, depth + 1);
  }
  return safe;
}

/** `value` as JSON for an error message, long strings elided (they may be secrets). */
export function shownSafely(value: unknown): string {
  const shown = JSON.stringify(value, (_key, item: unknown) =>
    typeof item === "string" && item.length > LONG_STRING ? `<${item.length} characters>` : item,
  );
  return (shown ?? String(value)).slice(0, 200);
}

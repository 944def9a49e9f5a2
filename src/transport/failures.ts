/**
 * What a failed request means for the caller. Ambiguous failures (the request may or may not have
 * run) are safe to re-send because every mutating script is idempotent by operation id.
 */
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

export function classifyFailure(error: unknown): FailureKind {
  const message = redisMessageOf(error);
  if (/NOSCRIPT/i.test(message)) return "noscript";
  if (AUTH.test(message) || REFUSAL.test(message)) return "refused";
  return "ambiguous";
}

/**
 * A failure worth trying again after a pause (network, timeout, 5xx, an unreadable body): a
 * waiter with time left treats it as a busy answer. `mayHaveApplied`: the request may have run,
 * so the next attempt must re-send the same operation id (its script then replays the first
 * result) — false when the operation resolved its own outcome (a confirmed rollback, an undo).
 */
export interface TransientFailure {
  readonly mayHaveApplied: boolean;
}

const transientFailures = new WeakMap<object, TransientFailure>();

/** Marks `error` as a transient failure (see TransientFailure) and returns it. */
export function markTransient<E extends object>(error: E, mayHaveApplied: boolean): E {
  transientFailures.set(error, { mayHaveApplied });
  return error;
}

/** The mark of a transient failure, or undefined for a refusal or anything unmarked. */
export function transientFailure(error: unknown): TransientFailure | undefined {
  return typeof error === "object" && error !== null ? transientFailures.get(error) : undefined;
}

/** Longest text kept from a failure underneath; server messages are short, echoes are not. */
const MAX_MESSAGE = 300;
/** Strings this long in a failure are elided: owner tokens (32), operation ids (24), Lua. */
const LONG_STRING = 20;
const TOKEN_LIKE = /[A-Za-z0-9+/=_-]{32,}/g;

/**
 * A copy of `error` that is safe to log: same `name` (and string `code`, e.g. ECONNREFUSED),
 * the server's message without the echoed command and with every one of `secrets` (the
 * request's arguments, the script) replaced by "…", and a cause sanitized the same way. The
 * original is dropped: `@upstash/redis` errors carry the whole command (Lua, keys, owner token).
 */
export function sanitizedFailure(error: unknown, secrets: readonly string[], depth = 0): Error {
  let message = redisMessageOf(error);
  for (const secret of secrets) {
    if (secret.length >= LONG_STRING / 2) message = message.split(secret).join("…");
  }
  // Any other long token-like run (a REST token a proxy echoed, an id) goes too.
  message = message.replace(TOKEN_LIKE, "…");
  const safe = new Error(message.slice(0, MAX_MESSAGE));
  const name = error instanceof Error ? error.name : typeof error;
  Object.defineProperty(safe, "name", { value: name, enumerable: false, configurable: true });
  safe.stack = `${name}: ${safe.message}\n    (the original stack is withheld: it may hold the request)`;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code.length < LONG_STRING) Object.assign(safe, { code });
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause !== undefined && depth < 4) safe.cause = sanitizedFailure(cause, secrets, depth + 1);
  return safe;
}

/** `value` as JSON for an error message, with long strings elided (they may be secrets). */
export function shownSafely(value: unknown): string {
  const shown =
    JSON.stringify(value, (_key, item: unknown) =>
      typeof item === "string" && item.length > LONG_STRING ? `<${item.length} characters>` : item,
    ) ?? String(value);
  return shown.slice(0, 200);
}

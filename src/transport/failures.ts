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

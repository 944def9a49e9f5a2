/**
 * Naming why the backend failed. `@upstash/redis` re-sends a request whose fetch threw (up to 5
 * times over ~4 s on its defaults), so a closed port, a DNS failure or a TLS error never reaches
 * edgelock within its `backendTimeoutMs`: the call just times out. When a call is still unanswered
 * at half its budget, one probe (a bare POST to the REST URL, without the token: no command runs,
 * nothing is billed) finds the reason, which the timeout's LockBackendError then names.
 */
import { LockInputError } from "../errors.js";
import type { RedisLike } from "./redis-like.js";

/** Where an `@upstash/redis` client sends requests (its HttpClient's fields, not in its types). */
interface UpstashHttpClient {
  readonly baseUrl?: unknown;
  readonly headers?: unknown;
}

function httpClientOf(redis: RedisLike): UpstashHttpClient | undefined {
  const client = (redis as { client?: unknown }).client;
  return typeof client === "object" && client !== null ? (client as UpstashHttpClient) : undefined;
}

/** The REST URL of an `@upstash/redis` client, when `redis` is one. */
export function restUrlOf(redis: RedisLike): string | undefined {
  const baseUrl = httpClientOf(redis)?.baseUrl;
  return typeof baseUrl === "string" && /^https?:\/\//i.test(baseUrl) ? baseUrl : undefined;
}

/** The host (and port) of a URL, which is no secret (the token is); "the REST URL" if unreadable. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "the REST URL";
  }
}

const MISSING = new Set(["", "undefined", "null"]);

/**
 * Throws LockInputError when `redis` is an `@upstash/redis` client built without a URL or a token
 * (an unset `UPSTASH_REDIS_REST_URL` / `_TOKEN`): every request would fail, and on its defaults
 * only after ~4 s of re-sends. Other RedisLike implementations are not inspected.
 */
export function checkCredentials(redis: RedisLike): void {
  const client = httpClientOf(redis);
  if (client === undefined || !("baseUrl" in client)) return;
  const headers = client.headers as Record<string, unknown> | undefined;
  const authorization = typeof headers?.authorization === "string" ? headers.authorization : "";
  const url = typeof client.baseUrl === "string" ? client.baseUrl : "";
  const missing = [
    ...(MISSING.has(url) ? ["a URL (UPSTASH_REDIS_REST_URL)"] : []),
    ...(MISSING.has(authorization.split(" ")[1] ?? "")
      ? ["a token (UPSTASH_REDIS_REST_TOKEN)"]
      : []),
  ];
  if (missing.length > 0) {
    throw new LockInputError(
      `The @upstash/redis client was created without ${missing.join(" and ")}: ` +
        "new Redis({ url, token }) got an empty or undefined value. On Workers put them in " +
        ".dev.vars (wrangler dev) or set them with wrangler secret put; in Node, in the environment.",
    );
  }
}

/** Error codes of a failure and its causes (Node's undici puts the socket's error in `cause`). */
function codesOf(error: unknown, depth = 0): string[] {
  if (typeof error !== "object" || error === null || depth > 4) return [];
  const { code, cause, message } = error as { code?: unknown; cause?: unknown; message?: unknown };
  return [
    ...(typeof code === "string" ? [code] : []),
    ...(typeof message === "string" ? [message] : []),
    ...codesOf(cause, depth + 1),
  ];
}

/**
 * What a thrown fetch error means, in words, or undefined when it is not recognised: connection
 * refused, DNS, TLS, reset, connect timeout. `host` names the server (no secret).
 */
export function describeFetchFailure(error: unknown, host: string): string | undefined {
  const codes = codesOf(error).join(" ");
  if (/ECONNREFUSED|connection refused/i.test(codes)) {
    return `connection refused by ${host} (nothing listens there: is the server running, the URL right?)`;
  }
  if (/ENOTFOUND|EAI_AGAIN|EAI_NONAME|getaddrinfo|DNS|name not resolved/i.test(codes)) {
    return `DNS lookup of ${host} failed (check the host in UPSTASH_REDIS_REST_URL)`;
  }
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|EPROTO|handshake|certificate/i.test(codes)) {
    return `TLS handshake with ${host} failed (http:// vs https://, or a certificate problem)`;
  }
  if (/ECONNRESET|socket hang up|other side closed|connection lost/i.test(codes)) {
    return `connection to ${host} reset`;
  }
  if (/ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|ENETUNREACH|EHOSTUNREACH/i.test(codes)) {
    return `no connection to ${host} (unreachable or connect timeout)`;
  }
  return undefined;
}

/** The innermost cause's message of a fetch error (the socket's words), token-like runs elided. */
function innermost(error: unknown): string {
  let at = error;
  for (let depth = 0; depth < 4 && at instanceof Error && at.cause instanceof Error; depth++) {
    at = at.cause;
  }
  const message = at instanceof Error ? at.message : String(at);
  return message.replace(/[\w+/=-]{32,}/g, "…").slice(0, 120);
}

/** What an HTTP answer of the REST server means when it refuses the token. */
export function describeAuthRefusal(message: string): string | undefined {
  if (
    !/WRONGPASS|NOAUTH|unauthori[sz]ed|invalid token|missing auth|forbidden|NOPERM/i.test(message)
  ) {
    return undefined;
  }
  return "the REST server refused the token (HTTP 401/403: check UPSTASH_REDIS_REST_TOKEN)";
}

/**
 * Probes `url` once, for at most `timeoutMs`: the cause when the fetch throws (refused, DNS,
 * TLS…), undefined when the server answers anything or the probe runs out of time (a server that
 * accepts and hangs). No token is sent: no command runs.
 */
export async function probeRestUrl(url: string, timeoutMs: number): Promise<string | undefined> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), Math.max(1, timeoutMs));
  try {
    const response = await fetch(url, { method: "POST", body: "[]", signal: abort.signal });
    await response.body?.cancel();
    return undefined;
  } catch (error) {
    if (abort.signal.aborted) return undefined;
    const host = hostOf(url);
    return describeFetchFailure(error, host) ?? `fetch to ${host} failed (${innermost(error)})`;
  } finally {
    clearTimeout(timer);
  }
}

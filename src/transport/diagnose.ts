/**
 * Naming why the backend failed: `@upstash/redis` re-sends a request whose fetch threw, so a
 * closed port, DNS or TLS failure shows only as a timeout; a probe (a bare POST without the
 * token: no command runs) finds it. Kept terse: every byte here is in every Worker bundle.
 */
import { LockInputError } from "../errors.js";
import type { RedisLike } from "./redis-like.js";

/** Where an `@upstash/redis` client sends requests (its HttpClient's fields, not in its types). */
interface UpstashHttpClient {
  readonly baseUrl?: unknown;
  readonly headers?: { readonly authorization?: unknown };
}

function httpClientOf(redis: RedisLike): UpstashHttpClient | undefined {
  const client = (redis as { client?: unknown }).client;
  return typeof client === "object" && client !== null ? (client as UpstashHttpClient) : undefined;
}

/** The REST URL of an `@upstash/redis` client, when `redis` is one. */
export function restUrlOf(redis: RedisLike): string | undefined {
  const url = httpClientOf(redis)?.baseUrl;
  return typeof url === "string" && /^https?:\/\//i.test(url) ? url : undefined;
}

/** The host (and port) of a URL: no secret (the token is). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "the REST URL";
  }
}

/** An empty or stringified-undefined value, as `new Redis({ url, token })` keeps one. */
const MISSING = /^(?:|undefined|null)$/;

/**
 * Throws LockInputError for an `@upstash/redis` client without a URL or token (an unset
 * variable), whose every request would fail only after seconds of re-sends.
 */
export function checkCredentials(redis: RedisLike): void {
  const client = httpClientOf(redis);
  if (client === undefined || !("baseUrl" in client)) return;
  const auth = client.headers?.authorization;
  const missing = [
    MISSING.test(String(client.baseUrl)) && "url (UPSTASH_REDIS_REST_URL)",
    MISSING.test(typeof auth === "string" ? (auth.split(" ")[1] ?? "") : "") &&
      "token (UPSTASH_REDIS_REST_TOKEN)",
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new LockInputError(`The Redis client has no ${missing.join(" and no ")}.`);
  }
}

/** Codes and messages of a failure and its causes (undici puts the socket's error in `cause`). */
function wordsOf(error: unknown, depth = 0): string {
  if (typeof error !== "object" || error === null || depth > 4) return "";
  const { code, message, cause } = error as Record<string, unknown>;
  return `${code} ${message} ${wordsOf(cause, depth + 1)}`;
}

const CAUSES: readonly (readonly [RegExp, string])[] = [
  [/ECONNREFUSED|refused/i, "connection refused by"],
  [/ENOTFOUND|EAI_|getaddrinfo|DNS/i, "DNS lookup failed for"],
  [/CERT|SSL|TLS|EPROTO|handshake/i, "TLS handshake failed with"],
  [/ECONNRESET|hang up|closed|lost/i, "connection reset by"],
  [/TIMEDOUT|UNREACH/i, "no route to"],
];

/** What a thrown fetch error means (refused, DNS, TLS, reset, unreachable), or undefined. */
export function describeFetchFailure(error: unknown, host: string): string | undefined {
  const words = wordsOf(error);
  const found = CAUSES.find(([pattern]) => pattern.test(words));
  return found && `${found[1]} ${host}`;
}

/**
 * Probes `url` once, for at most `timeoutMs`: the cause when the fetch throws, undefined when the
 * server answers anything or the probe runs out of time (a server that accepts and hangs).
 */
export async function probeRestUrl(url: string, timeoutMs: number): Promise<string | undefined> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  try {
    await (await fetch(url, { method: "POST", body: "[]", signal: abort.signal })).body?.cancel();
  } catch (error) {
    const host = hostOf(url);
    if (!abort.signal.aborted) return describeFetchFailure(error, host) ?? `fetch failed: ${host}`;
  } finally {
    clearTimeout(timer);
  }
  return undefined;
}

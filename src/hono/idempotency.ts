/**
 * `idempotency()`: each request key is processed once; later requests with the key get the
 * stored response again (draft-ietf-httpapi-idempotency-key-header, as far as it applies to a
 * middleware). The key's lock keeps concurrent duplicates out while the first one runs.
 */
import type { Context, Env, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { LockBudgetExceededError, LockInputError, LockWaitTimeoutError } from "../errors.js";
import type { LockHandle } from "../hold/handle.js";
import { PlainLockClient } from "../plain-lock-client.js";
import { sleep } from "../platform.js";
import { checkRedisLike, type RedisLike } from "../transport/redis-like.js";
import {
  checkDuration,
  checkLease,
  checkLockName,
  checkOptions,
  checkPrefix,
} from "../validate.js";
import { resolveWaitPolicy, type WaitOptions, type WaitPolicy } from "../wait/policy.js";
import { pollForLock } from "../wait/poll.js";
import { BACKGROUND_DELAYS_MS, inBackground, releaseOrRetry } from "./background.js";
import type { AnyEnv, WithVariables } from "./env.js";
import { logFailure, type MiddlewareFailure, report } from "./failures.js";
import { requestFingerprint } from "./fingerprint.js";
import { fromHeader, type KeyExtractor } from "./key-extractors.js";
import { type IdempotencyScope, scopedLockName } from "./key-scope.js";
import { type RecordedResponse, recordResponse, replayResponse } from "./recorded-response.js";
import { type KeyState, type PutOutcome, ResponseStore } from "./response-store.js";
import { busyRetryAfter, problem, RecentHolds } from "./responses.js";

/** Options of `idempotency()`: where keys and responses are kept, which key a request has, how long a response is replayed. */
export interface IdempotencyOptions<E extends Env = Env> {
  /**
   * The LockClient that holds the keys' locks and stored responses, or a function that returns
   * it for a request (e.g. built from `c.env` once per isolate). Give `client` or `redis`.
   * @default none
   * @example idempotency({ client: (c) => locksFor(c.env), key: stripeEventId() })
   */
  client?: PlainLockClient | ((c: Context<E>) => PlainLockClient);
  /**
   * HTTP Redis (`@upstash/redis` or any RedisLike), or a function that returns it for a request;
   * the middleware builds its own LockClient with `prefix`. Give `client` or `redis`.
   * @default none
   * @example idempotency({ redis: Redis.fromEnv() })
   */
  redis?: RedisLike | ((c: Context<E>) => RedisLike);
  /**
   * Which requests share a key. `"route"`: method and route pattern (`POST /webhooks/stripe`),
   * so one event id sent to two endpoints runs each handler once; under `app.use("/webhooks/*")`
   * that pattern is `/webhooks/*`, so register per route. `"shared"`: every route with the same
   * `namespace` (edgelock 0.1's layout).
   * @default "route"
   * @example idempotency({ client, scope: "shared", namespace: "payments" })
   */
  scope?: IdempotencyScope;
  /**
   * Adds a tenant to the scope: keys of different tenants never meet (e.g. one per account of a
   * multi-tenant API). Undefined for a request: no tenant part.
   * @default none
   * @example idempotency({ client, tenant: (c) => c.req.header("x-account-id") })
   */
  tenant?: (c: Context<E>) => string | undefined | Promise<string | undefined>;
  /**
   * The request's idempotency key, or undefined; `key-extractors` has the webhook senders'.
   * @default the `Idempotency-Key` header (`fromHeader()`)
   */
  key?: KeyExtractor<E>;
  /**
   * How long a stored response is replayed, in ms; cover the sender's retry window (Stripe
   * retries for three days).
   * @default 86_400_000 (24 h)
   */
  ttlMs?: number;
  /**
   * Lease of the key's lock while the handler runs, in ms. Never a watchdog, so that a key whose
   * response could not be stored stays locked this long. Long work: `lock.extend(ms)`.
   * @default 30_000
   */
  leaseMs?: number;
  /**
   * How long a duplicate waits for the first request's response (then replayed) before it gets
   * `409 Conflict`, in ms.
   * @default 0 (answer 409 at once)
   */
  waitMs?: number;
  /**
   * Polling policy of waiting duplicates.
   * @default edgelock's defaults (DEFAULT_WAIT_POLICY)
   */
  wait?: WaitOptions;
  /**
   * What a request without a key gets: `true` answers 400 (the draft's rule), `false` runs the
   * handler unguarded.
   * @default true
   */
  required?: boolean;
  /**
   * The request fingerprint: a key reused with another fingerprint answers 422. `false` turns
   * the check off.
   * @default SHA-256 of method, path and body (`requestFingerprint`)
   */
  fingerprint?: ((c: Context<E>) => string | Promise<string>) | false;
  /**
   * Which handler responses are final and stored. Thrown errors and 5xx are never stored.
   * @default every status below 500 except 408, 409, 425 and 429, which ask the sender to come
   * back (a stored one would be replayed forever)
   */
  storeStatus?: (status: number) => boolean;
  /**
   * Response headers stored and replayed.
   * @default ["content-type", "content-language", "location"]
   */
  storeHeaders?: readonly string[];
  /**
   * Largest body stored, in bytes; replays of a larger one get an empty body and
   * `edgelock-replay-body: omitted`.
   * @default 65_536
   */
  maxBodyBytes?: number;
  /**
   * Key prefix in Redis, with `redis` (with `client`, the client's prefix counts).
   * @default "edgelock"
   */
  prefix?: string;
  /**
   * Separates the keys of different uses (e.g. one per provider): the lock name starts with
   * `<namespace>:`, then the scope, then the key (see `scope`).
   * @default "idempotency"
   */
  namespace?: string;
  /**
   * Called when storing the response or releasing the key fails after the handler ran; the
   * response is sent all the same (see docs/webhooks.md for what happens next).
   * @default one `console.error` line (`logFailure`)
   */
  onFailure?: (failure: MiddlewareFailure, c: Context<E>) => void | Promise<void>;
}

/** What `c.get("idempotency")` gives the handler. */
export interface IdempotencyContext {
  readonly key: string;
  /** The hold on the key: `fencingToken` for writes, `extend(ms)` for long work, `signal`. */
  readonly lock: LockHandle;
}

/** The Hono context variable `idempotency()` sets for the handler (`c.get("idempotency")`). */
export interface IdempotencyVariables {
  idempotency: IdempotencyContext;
}

const OPTION_KEYS = [
  "client",
  "redis",
  "scope",
  "tenant",
  "key",
  "ttlMs",
  "leaseMs",
  "waitMs",
  "wait",
  "required",
  "fingerprint",
  "storeStatus",
  "storeHeaders",
  "maxBodyBytes",
  "prefix",
  "namespace",
  "onFailure",
] as const;

const RETRY_LATER = new Set([408, 409, 425, 429]);
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

const defaultStoreStatus = (status: number) => status < 500 && !RETRY_LATER.has(status);

/**
 * Processes each idempotency key once per scope (by default method and route pattern) and replays
 * the stored response to later requests with the key. A stored response is replayed at once, a
 * key in progress answers 409; otherwise it locks the key, runs the handler, stores the response
 * for `ttlMs`, releases. A throw or 5xx stores nothing and frees the key for the sender's retry.
 *
 * Answers of its own: 400 (no or invalid key), 409 + Retry-After (a duplicate is in progress),
 * 422 (the key was used for a different request); replays carry `idempotent-replayed: true`.
 *
 * @returns a middleware that sets `c.get("idempotency")` to `{ key, lock }`
 *
 * @example
 * ```ts
 * app.post(
 *   "/webhooks/stripe",
 *   verifyStripeSignature(),
 *   idempotency({ client, key: stripeEventId(), ttlMs: 3 * 24 * 3_600_000 }),
 *   async (c) => {
 *     const event = await c.req.json();
 *     await fulfil(event, { fencingToken: c.get("idempotency").lock.fencingToken });
 *     return c.json({ received: true });
 *   },
 * );
 * ```
 */
export function idempotency<E extends Env = AnyEnv>(
  options: IdempotencyOptions<E>,
): MiddlewareHandler<WithVariables<E, IdempotencyVariables>> {
  const given = checkOptions<IdempotencyOptions<E>>(options, "idempotency options", OPTION_KEYS);
  const settings = resolveSettings(given);
  // How long handlers under this middleware ran, for the Retry-After of a duplicate.
  const runs = new RecentHolds();

  return createMiddleware<WithVariables<E, IdempotencyVariables>>(
    async function idempotency(c, next) {
      const ctx = c as unknown as Context<E>;
      const key = await settings.key(ctx);
      if (key === undefined) {
        if (!settings.required) return next();
        return problem(400, "Idempotency key missing", "This request needs an idempotency key.");
      }
      if (!KEY_PATTERN.test(key)) {
        return problem(
          400,
          "Invalid idempotency key",
          "An idempotency key is 1 to 255 printable ASCII characters.",
        );
      }
      const locks = settings.client(ctx);
      const name = scopedLockName(ctx, key, {
        namespace: settings.namespace,
        scope: settings.scope,
        tenant: settings.tenant ? await settings.tenant(ctx) : undefined,
      });
      const store = new ResponseStore(locks.redis, locks.prefix, name);
      const fingerprint = settings.fingerprint ? await settings.fingerprint(ctx) : "";
      const answer = (record: RecordedResponse) =>
        record.fingerprint === fingerprint ? replayResponse(record) : reused();
      const failure = (kind: MiddlewareFailure["kind"], error: unknown, consequence: string) =>
        report(settings.onFailure, { kind, key, error, consequence }, ctx);

      // A stored response is replayed; a key in progress is waited for (up to waitMs) or 409.
      const started = Date.now();
      const seen = await awaitKey(store, name, settings);
      if (seen.record) return answer(seen.record);
      if (seen.locked) return busy(seen.holderTtlMs, runs);

      let held: LockHandle;
      try {
        held = await locks.lock(name).acquire({
          waitMs: Math.max(0, started + settings.waitMs - Date.now()),
          leaseMs: settings.leaseMs,
          wait: settings.wait,
        });
      } catch (error) {
        if (error instanceof LockWaitTimeoutError || error instanceof LockBudgetExceededError) {
          return busy(error.holderTtlMs, runs);
        }
        throw error;
      }
      // The next fencing token means nobody held the key since the lookup, so nobody stored a
      // response since: no second lookup. Otherwise another request may have finished in between.
      if (held.fencingToken !== seen.fence + 1) {
        const again = await store.lookup().catch(async (error: unknown) => {
          await held.release().catch(() => {});
          throw error;
        });
        if (again.record) {
          await held.release().catch(() => {});
          return answer(again.record);
        }
      }

      c.set("idempotency", { key, lock: held });
      let completed = false;
      const ranAt = Date.now();
      try {
        await next();
        runs.add(Date.now() - ranAt);
        completed =
          c.error === undefined && c.res.status < 500 && settings.storeStatus(c.res.status);
      } finally {
        if (!completed) {
          // Nothing stored: the key is free for the sender's retry.
          const error = await releaseOrRetry(c, held);
          if (error !== undefined) {
            await failure("release", error, "Nothing was stored; the release is retried.");
          }
        }
      }
      if (!completed) return;

      // Until it is stored, the key stays locked: duplicates get 409 rather than a second run.
      let record: RecordedResponse;
      try {
        record = await recordResponse(
          c.res,
          fingerprint,
          settings.storeHeaders,
          settings.maxBodyBytes,
        );
      } catch (error) {
        await failure(
          "store",
          error,
          "The response body could not be read to store it; the key stays locked until its lease ends.",
        );
        return;
      }
      let stored: PutOutcome;
      try {
        stored = await store.put(held.owner, record, settings.ttlMs);
      } catch (error) {
        await failure(
          "store",
          error,
          "The response was sent but not stored; the key stays locked until its lease ends " +
            "while the store is retried in the background.",
        );
        inBackground(c, () => storeLater(store, held, record, settings.ttlMs, failure));
        return;
      }
      const error = await releaseOrRetry(c, held);
      if (error !== undefined) {
        await failure(
          "release",
          error,
          stored === "stored"
            ? "The response is stored and replayed; the release is retried."
            : "The lease ran out before the handler finished: a duplicate may have run meanwhile.",
        );
      }
    },
  );
}

interface Settings<E extends Env> {
  client: (c: Context<E>) => PlainLockClient;
  scope: IdempotencyScope;
  tenant: ((c: Context<E>) => string | undefined | Promise<string | undefined>) | undefined;
  key: KeyExtractor<E>;
  ttlMs: number;
  leaseMs: number;
  waitMs: number;
  wait: WaitPolicy;
  required: boolean;
  fingerprint: ((c: Context<E>) => string | Promise<string>) | undefined;
  storeStatus: (status: number) => boolean;
  storeHeaders: readonly string[];
  maxBodyBytes: number;
  namespace: string;
  onFailure: (failure: MiddlewareFailure, c: Context<E>) => void | Promise<void>;
}

function resolveSettings<E extends Env>(given: Partial<IdempotencyOptions<E>>): Settings<E> {
  const { scope = "route", tenant } = given;
  if (scope !== "route" && scope !== "shared") {
    throw new LockInputError('idempotency() `scope` is "route" or "shared".');
  }
  if (tenant !== undefined && typeof tenant !== "function") {
    throw new LockInputError("idempotency() `tenant` is a function (c) => string | undefined.");
  }
  return {
    client: resolveClient(given),
    scope,
    tenant,
    key: given.key ?? fromHeader(),
    ttlMs:
      given.ttlMs === undefined ? 86_400_000 : checkDuration(given.ttlMs, "ttlMs", { min: 1_000 }),
    leaseMs: given.leaseMs === undefined ? 30_000 : checkLease(given.leaseMs),
    waitMs: given.waitMs === undefined ? 0 : checkDuration(given.waitMs, "waitMs", { min: 0 }),
    wait: resolveWaitPolicy(given.wait),
    required: given.required ?? true,
    fingerprint:
      given.fingerprint === false ? undefined : (given.fingerprint ?? requestFingerprint),
    storeStatus: given.storeStatus ?? defaultStoreStatus,
    storeHeaders: (given.storeHeaders ?? ["content-type", "content-language", "location"]).map(
      (name) => name.toLowerCase(),
    ),
    maxBodyBytes:
      given.maxBodyBytes === undefined
        ? 65_536
        : checkDuration(given.maxBodyBytes, "maxBodyBytes", { min: 0 }),
    namespace: given.namespace === undefined ? "idempotency" : checkLockName(given.namespace),
    onFailure: given.onFailure ?? logFailure,
  };
}

/**
 * The LockClient of a request: the one given, or one built per Redis client (once, not per
 * request) with `prefix`.
 */
function resolveClient<E extends Env>(
  given: Partial<IdempotencyOptions<E>>,
): (c: Context<E>) => PlainLockClient {
  const { client, redis, prefix } = given;
  if ((client === undefined) === (redis === undefined)) {
    throw new LockInputError(
      "idempotency() needs one of `client` (a LockClient or (c) => LockClient) or `redis` " +
        "(an @upstash/redis client or (c) => client).",
    );
  }
  if (client !== undefined) {
    if (prefix !== undefined) {
      throw new LockInputError("idempotency(): with `client`, the client's prefix is used.");
    }
    if (typeof client === "function") return client;
    if (!(client instanceof PlainLockClient)) {
      throw new LockInputError("idempotency() `client` is a LockClient or (c) => LockClient.");
    }
    return () => client;
  }
  const keyPrefix = prefix === undefined ? "edgelock" : checkPrefix(prefix);
  const clients = new WeakMap<RedisLike, PlainLockClient>();
  const clientOf = (redisClient: RedisLike) => {
    let built = clients.get(redisClient);
    if (!built) {
      built = new PlainLockClient({ redis: redisClient, prefix: keyPrefix });
      clients.set(redisClient, built);
    }
    return built;
  };
  if (typeof redis === "function") return (c) => clientOf(redis(c));
  const fixed = clientOf(checkRedisLike(redis));
  return () => fixed;
}

function busy(holderTtlMs: number | null, holds: RecentHolds): Response {
  const seconds = busyRetryAfter(holderTtlMs, true, holds.longest());
  return problem(
    409,
    "Request in progress",
    `A request with this idempotency key is being processed; retry after ${seconds} s.`,
    { "retry-after": String(seconds) },
  );
}

function reused(): Response {
  return problem(
    422,
    "Idempotency key reused",
    "This idempotency key was already used for a different request.",
  );
}

/**
 * Looks the key up; while it is in progress, polls (up to `waitMs`) until its response is stored
 * or the key is free again. A response is read without taking the lock.
 */
async function awaitKey<E extends Env>(
  store: ResponseStore,
  name: string,
  settings: Settings<E>,
): Promise<KeyState> {
  let last: KeyState | undefined;
  try {
    const outcome = await pollForLock<KeyState>({
      lockName: name,
      waitMs: settings.waitMs,
      signal: undefined,
      policy: settings.wait,
      attempt: async () => {
        last = await store.lookup();
        return last.record || !last.locked
          ? { done: true, value: last }
          : { done: false, holderTtlMs: last.holderTtlMs };
      },
    });
    if (outcome.acquired) return outcome.value;
  } catch (error) {
    // Out of poll budget while the key stays in progress: answered like a timeout.
    if (!(error instanceof LockBudgetExceededError)) throw error;
  }
  if (last === undefined) throw new Error("unreachable: pollForLock made no attempt");
  return last;
}

/** Retries storing after the inline attempts failed; releases the key once stored. */
async function storeLater(
  store: ResponseStore,
  held: LockHandle,
  record: RecordedResponse,
  ttlMs: number,
  failure: (kind: MiddlewareFailure["kind"], error: unknown, consequence: string) => Promise<void>,
): Promise<void> {
  let lastError: unknown;
  for (const delay of BACKGROUND_DELAYS_MS) {
    await sleep(delay);
    try {
      await store.put(held.owner, record, ttlMs);
    } catch (error) {
      lastError = error;
      continue;
    }
    await held.release().catch(() => {});
    return;
  }
  await failure(
    "store",
    lastError,
    "Retries failed too: once the lease ends, a retry of this request runs the handler again.",
  );
}

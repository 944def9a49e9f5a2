/**
 * `concurrencyLimit()`: at most `permits` requests at once per key (a tenant, an account, an
 * upstream API), across every isolate that shares the Redis. A request takes one permit of the
 * key's semaphore before the handler and returns it once the response body has been sent (or
 * the handler threw, or the body will never be sent); a request that finds the key full gets 429
 * with an honest Retry-After.
 */
import type { Context, Env, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { LockClient } from "../client.js";
import { LockInputError, LockNotHeldError, LockWaitTimeoutError } from "../errors.js";
import { acquireLiveHold } from "../hold/live-hold.js";
import type { PermitHandle } from "../locks/semaphore/permit-handle.js";
import { checkCount, checkDuration, checkLease, checkOptions } from "../validate.js";
import type { WaitOptions } from "../wait/policy.js";
import { inBackground, releaseOrRetry } from "./background.js";
import type { AnyEnv, WithVariables } from "./env.js";
import { logFailure, type MiddlewareFailure, report } from "./failures.js";
import { lockOfKey } from "./key-scope.js";
import { busyRetryAfter, problem, RecentHolds } from "./responses.js";

/** Why a request was turned away, as given to `onBusy`. */
export interface ConcurrencyBusy {
  /** The semaphore name the request asked for. */
  readonly name: string;
  /** Ms until the soonest running request's lease ends (null when unknown). */
  readonly holderTtlMs: number | null;
  /**
   * The Retry-After the default answer sends, in whole seconds (at least 1): with `leaseMs`, when
   * the soonest lease ends (a permit is surely free by then); in watchdog mode the longest of
   * this middleware's recent requests in this isolate (1 s before any ended), never past it.
   */
  readonly retryAfterSeconds: number;
}

/** The options of `concurrencyLimit()`. */
export interface ConcurrencyLimitOptions<E extends Env = Env> {
  /**
   * The LockClient (edgelock's root entry), or a function that returns it for a request.
   * @example (c) => locksFor(c.env)
   */
  client: LockClient | ((c: Context<E>) => LockClient);
  /**
   * The key a request counts against: one semaphore per key.
   * @default none: give `name` for one limit over every request
   * @example (c) => `openai:${c.req.header("x-tenant")}`
   */
  key?: (c: Context<E>) => string | Promise<string>;
  /**
   * One semaphore name for every request, instead of `key`.
   * @default none: give `key`
   */
  name?: string;
  /**
   * At most this many requests run at once per key: the semaphore's capacity, set in Redis by
   * the first request on a key. A capacity already set there stays (change it with
   * `client.semaphore(key).setPermits(n)`).
   */
  permits: number;
  /**
   * How long a request waits for a permit before it gets the busy answer, in ms. Each poll is
   * a Redis request (a Workers subrequest).
   * @default 0 (one attempt)
   */
  waitMs?: number;
  /**
   * Lease of a request's permit in ms: it returns after this even if the isolate dies.
   * @default none: watchdog mode (the client's `watchdogTimeoutMs`, renewed while the request runs)
   */
  leaseMs?: number;
  /**
   * Overrides the client's polling policy.
   * @default the client's
   */
  wait?: WaitOptions;
  /**
   * How long a response body may go without anyone asking for more of it before its permit is
   * returned anyway, in ms: a body the runtime or another middleware discarded is never read nor
   * cancelled. The body still streams if it is read later. On Workers keep it under 30 s (the
   * wait runs in `waitUntil`).
   * @default 10_000
   */
  unreadBodyMs?: number;
  /**
   * The answer when the key is full.
   * @default `429 Too Many Requests`, `application/problem+json`, `Retry-After`
   * @example concurrencyLimit({ client, key, permits: 10, onBusy: (c) => c.text("later", 503) })
   */
  onBusy?: (c: Context<E>, busy: ConcurrencyBusy) => Response | Promise<Response>;
  /**
   * Called when returning the permit fails (the lease ran out mid-request, or Redis failed: the
   * release is retried in the background). The response is sent all the same.
   * @default one `console.error` line (`logFailure`)
   */
  onFailure?: (failure: MiddlewareFailure, c: Context<E>) => void | Promise<void>;
}

/** The context variables `concurrencyLimit()` sets: `c.get("permit")` is the request's permit. */
export interface ConcurrencyLimitVariables {
  permit: PermitHandle;
}

const OPTION_KEYS = [
  "client",
  "key",
  "name",
  "permits",
  "waitMs",
  "leaseMs",
  "wait",
  "unreadBodyMs",
  "onBusy",
  "onFailure",
] as const;

function tooManyRequests(_c: unknown, busy: ConcurrencyBusy): Response {
  return problem(
    429,
    "Too Many Requests",
    `Too many requests are running for this resource; retry after ${busy.retryAfterSeconds} s.`,
    { "retry-after": String(busy.retryAfterSeconds) },
  );
}

/**
 * Limits how many requests run at once per key, across isolates: a counting semaphore per key
 * (`client.semaphore`), one permit per request, returned when the response body has been sent
 * (at once for HEAD and a response without a body; after `unreadBodyMs` for a body nobody reads).
 *
 * @param options.client - a LockClient or `(c) => LockClient`
 * @param options.key - `(c) => key`: the limit applies per key (or `name`: one for all)
 * @param options.permits - at most this many requests at once per key
 * @param options.waitMs - how long to wait for a permit, in ms (default 0)
 * @param options.leaseMs - lease of a permit in ms (default: watchdog mode)
 * @param options.unreadBodyMs - a body unread this long returns its permit (default 10 000)
 * @param options.onBusy - the answer when full (default 429 with Retry-After)
 * @param options.onFailure - reports a failed release (default console.error)
 * @returns a middleware that sets `c.get("permit")` to the request's permit
 *
 * @example
 * ```ts
 * // At most 10 concurrent calls to a paid upstream API per tenant.
 * app.post(
 *   "/summaries",
 *   concurrencyLimit({ client, key: (c) => `llm:${c.req.header("x-tenant")}`, permits: 10 }),
 *   async (c) => c.json(await summarize(await c.req.text())),
 * );
 * ```
 */
export function concurrencyLimit<E extends Env = AnyEnv>(
  options: ConcurrencyLimitOptions<E>,
): MiddlewareHandler<WithVariables<E, ConcurrencyLimitVariables>> {
  const given = checkOptions<ConcurrencyLimitOptions<E>>(
    options,
    "concurrencyLimit options",
    OPTION_KEYS,
  );
  const { wait, onFailure = logFailure, onBusy = tooManyRequests } = given;
  const clientFor = resolveClient(given.client);
  const keyFor = resolveKey(given);
  const permits = checkCount(given.permits, "permits", 1, 1_000_000_000);
  const waitMs = given.waitMs === undefined ? 0 : checkDuration(given.waitMs, "waitMs", { min: 0 });
  const leaseMs = given.leaseMs === undefined ? undefined : checkLease(given.leaseMs);
  const unreadBodyMs =
    given.unreadBodyMs === undefined
      ? UNREAD_BODY_MS
      : checkDuration(given.unreadBodyMs, "unreadBodyMs", { min: 1 });
  const holds = new RecentHolds();

  return createMiddleware<WithVariables<E, ConcurrencyLimitVariables>>(
    async function concurrencyLimit(c, next) {
      const ctx = c as unknown as Context<E>;
      const named = await lockOfKey(keyFor(ctx), (name) =>
        clientFor(ctx).semaphore(name, { initialPermits: permits }),
      );
      if ("refused" in named) return named.refused;
      const semaphore = named.lock;
      let permit: PermitHandle;
      try {
        permit = await acquireLiveHold(
          (left = waitMs) =>
            semaphore.acquire({
              waitMs: left,
              ...(leaseMs === undefined ? {} : { leaseMs }),
              ...(wait === undefined ? {} : { wait }),
            }),
          waitMs,
        );
      } catch (error) {
        // A LockBudgetExceededError is a kind of LockWaitTimeoutError: busy all the same.
        if (!(error instanceof LockWaitTimeoutError)) throw error;
        const { lockName, holderTtlMs } = error;
        return onBusy(ctx, {
          name: lockName,
          holderTtlMs,
          retryAfterSeconds: busyRetryAfter(holderTtlMs, leaseMs !== undefined, holds.longest()),
        });
      }
      c.set("permit", permit);
      const heldAt = Date.now();
      const release = async () => {
        holds.add(Date.now() - heldAt);
        const error = await releaseOrRetry(c, permit);
        if (error === undefined) return;
        const consequence =
          error instanceof LockNotHeldError
            ? "The permit's lease ran out before the request finished."
            : "The response was sent; the release is retried in the background.";
        await report(onFailure, { kind: "release", key: permit.name, error, consequence }, ctx);
      };
      try {
        await next();
      } catch (error) {
        await release();
        throw error;
      }
      const body = c.res.body;
      // HEAD: Hono runs the GET route and answers `new Response(null, res)`, so the body is
      // dropped, never read nor cancelled; no runtime sends a HEAD body either.
      if (c.error !== undefined || body === null || c.req.method === "HEAD") {
        await release();
        return;
      }
      // The request runs until its body is sent: a streamed answer keeps its permit till then.
      const { status, statusText, headers } = c.res;
      let bodyEnded!: () => void;
      const ended = new Promise<void>((resolve) => {
        bodyEnded = resolve;
      });
      c.res = new Response(releasedAtEnd(body, bodyEnded, unreadBodyMs), {
        status,
        statusText,
        headers,
      });
      // Waited for from now: on Workers a body nobody reads keeps no invocation alive, and the
      // unread deadline must still fire.
      inBackground(c, async () => {
        await ended;
        await release();
      });
    },
  );
}

/** How long a response body may go unread before its permit returns (`unreadBodyMs`). */
const UNREAD_BODY_MS = 10_000;

/**
 * `body`, calling `done` once when it has been read to its end, failed or been cancelled, or when
 * nobody asked for its next chunk for `unreadMs` (it was discarded, or its reader stalled). It
 * reads `body` only when asked (high-water mark 0), so that being asked means being read.
 */
function releasedAtEnd(
  body: ReadableStream<Uint8Array>,
  done: () => void,
  unreadMs: number,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let ended = false;
  let unread: ReturnType<typeof setTimeout> | undefined;
  const asked = () => {
    if (unread !== undefined) clearTimeout(unread);
  };
  const end = () => {
    asked();
    if (ended) return;
    ended = true;
    done();
  };
  const awaitReader = () => {
    if (!ended) unread = setTimeout(end, unreadMs);
  };
  awaitReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // Asked for more: a chunk the handler takes long to produce keeps the permit.
        asked();
        try {
          const { done: finished, value } = await reader.read();
          if (finished) {
            controller.close();
            end();
          } else {
            controller.enqueue(value);
            awaitReader();
          }
        } catch (error) {
          controller.error(error);
          end();
        }
      },
      async cancel(reason) {
        end();
        await reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

function resolveClient<E extends Env>(
  client: ConcurrencyLimitOptions<E>["client"] | undefined,
): (c: Context<E>) => LockClient {
  if (typeof client === "function") return client;
  if (typeof client?.semaphore !== "function") {
    throw new LockInputError(
      "concurrencyLimit() `client` is a LockClient (from `edgelock`) or (c) => LockClient.",
    );
  }
  return () => client;
}

function resolveKey<E extends Env>(
  given: Partial<ConcurrencyLimitOptions<E>>,
): (c: Context<E>) => string | Promise<string> {
  const { key, name } = given;
  if (typeof key === "function" && name === undefined) return key;
  if (typeof name === "string" && key === undefined) return () => name;
  throw new LockInputError(
    "concurrencyLimit() needs `key: (c) => key` (a limit per key) or `name` (one limit), not both.",
  );
}

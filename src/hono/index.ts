/**
 * `edgelock/hono`: Hono middleware over edgelock locks.
 *
 * - `withLock()`: one request at a time per key (an order, a customer, a tenant).
 * - `concurrencyLimit()`: at most N requests at once per key (429 with Retry-After beyond).
 * - `idempotency()`: each idempotency key processed once, its response replayed to retries
 *   (draft-ietf-httpapi-idempotency-key-header); made for webhooks.
 * - `middlewareFor(app)`: both, typed by the app (`c.env` in their callbacks).
 *
 * Hono is an optional peer dependency: only this entry point imports it.
 * @module
 */

export type { AcquirableLock, ReleasableHold } from "./acquirable-lock.js";
export {
  type ConcurrencyBusy,
  type ConcurrencyLimitOptions,
  type ConcurrencyLimitVariables,
  concurrencyLimit,
} from "./concurrency-limit.js";
export type { MiddlewareFailure } from "./failures.js";
export { logFailure } from "./failures.js";
export { requestFingerprint } from "./fingerprint.js";
export { type AppMiddleware, middlewareFor } from "./for-app.js";
export {
  type IdempotencyContext,
  type IdempotencyOptions,
  type IdempotencyVariables,
  idempotency,
} from "./idempotency.js";
export {
  fromHeader,
  fromJsonBody,
  githubDelivery,
  type KeyExtractor,
  standardWebhookId,
  stripeEventId,
} from "./key-extractors.js";
export type { IdempotencyScope } from "./key-scope.js";
export { BODY_OMITTED_HEADER, REPLAY_HEADER, type RecordedResponse } from "./recorded-response.js";
export {
  type LockBusy,
  type LockChoice,
  type LockClientSource,
  type WithLockOptions,
  type WithLockSettings,
  type WithLockVariables,
  withLock,
} from "./with-lock.js";

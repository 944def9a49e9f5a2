/**
 * The webhook receiver: a Hono app that verifies each delivery's signature, processes every event
 * exactly once (`idempotency()` keyed on the event id), and serialises the events of one customer
 * (`withLock()` keyed on the customer), holding the lock through long work with `extend()`.
 *
 *   POST /webhooks/payments   a signed event (see signature.ts); 200 once processed or replayed
 *   GET  /customers/:id       the customer's balance
 *
 * In your own app import from "edgelock" and "edgelock/hono"; this example imports the sources.
 */
import { Redis } from "@upstash/redis/cloudflare";
import { Hono } from "hono";
import { middlewareFor, stripeEventId } from "../../../src/hono/index.js";
import { LockClient } from "../../../src/index.js";
import { Ledger, type PaymentEvent, parseEvent, StaleWriteError } from "./ledger.js";
import { SIGNATURE_HEADER, verifySignature } from "./signature.js";

export interface WebhookBindings {
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
  /** The shared secret the provider signs with (a secret in production). */
  WEBHOOK_SECRET: string;
  /** Simulated processing time per event, in ms (default 25). */
  WORK_MS?: string;
}

export type WebhookEnv = {
  Bindings: WebhookBindings;
  Variables: { event: PaymentEvent; askedForLockAt: number };
};

/** Prefix of every Redis key the example writes. */
export const KEY_PREFIX = "webhooks";
/** Per-customer lock: long enough for one event's work, extended for long work. */
const CUSTOMER_LEASE_MS = 15_000;
/** Long enough for any one delivery; duplicates meanwhile get 409 and come back later. */
const EVENT_LEASE_MS = 30_000;
/** Stripe retries for three days: replay for as long. */
const REPLAY_FOR_MS = 3 * 24 * 3_600_000;

interface Connection {
  readonly url: string;
  readonly redis: Redis;
  readonly locks: LockClient;
  readonly ledger: Ledger;
}

// One Redis client per isolate: requests share its script cache and its auto-pipeline.
let connection: Connection | undefined;

function connect(env: WebhookBindings): Connection {
  if (connection?.url !== env.UPSTASH_REDIS_REST_URL) {
    const redis = new Redis({
      url: env.UPSTASH_REDIS_REST_URL,
      token: env.UPSTASH_REDIS_REST_TOKEN,
      enableTelemetry: false,
    });
    connection = {
      url: env.UPSTASH_REDIS_REST_URL,
      redis,
      locks: new LockClient({ redis, prefix: KEY_PREFIX }),
      ledger: new Ledger(redis, KEY_PREFIX),
    };
  }
  return connection;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function createApp(): Hono<WebhookEnv> {
  const app = new Hono<WebhookEnv>();
  // Both middlewares typed by the app: their callbacks see c.env and c.var without type arguments.
  const { idempotency, withLock } = middlewareFor(app);

  app.post(
    "/webhooks/payments",
    // 1. Only signed deliveries get further (before any Redis request).
    async (c, next) => {
      const body = await c.req.text();
      const check = await verifySignature(
        c.env.WEBHOOK_SECRET,
        c.req.header(SIGNATURE_HEADER),
        body,
      );
      if (!check.valid) return c.json({ error: `invalid signature: ${check.reason}` }, 401);
      const event = parseEvent(body);
      if (!event) return c.json({ error: "not a payment event" }, 400);
      c.set("event", event);
      await next();
    },
    // 2. Each event once on this route: later deliveries get the first response replayed.
    idempotency({
      client: (c) => connect(c.env).locks,
      key: stripeEventId(),
      ttlMs: REPLAY_FOR_MS,
      leaseMs: EVENT_LEASE_MS,
    }),
    // 3. One event per customer at a time: balance updates never interleave.
    async (c, next) => {
      c.set("askedForLockAt", Date.now());
      await next();
    },
    withLock({
      client: (c) => connect(c.env).locks,
      key: (c) => `customer:${c.get("event").data.customer}`,
      waitMs: 10_000,
      leaseMs: CUSTOMER_LEASE_MS,
    }),
    async (c) => {
      const event = c.get("event");
      const customerLock = c.get("lock");
      const waitedMs = Date.now() - c.get("askedForLockAt");
      const workMs = Number(c.env.WORK_MS ?? 25);
      const work =
        event.type === "report.requested"
          ? async () => {
              // Long work: extend both leases between steps instead of one huge lease.
              for (let step = 0; step < 3; step++) {
                await sleep(workMs);
                await customerLock.extend(CUSTOMER_LEASE_MS);
                await c.get("idempotency").lock.extend(EVENT_LEASE_MS);
              }
            }
          : () => sleep(workMs);
      try {
        const balance = await connect(c.env).ledger.apply(event, customerLock.fencingToken, work);
        c.header("x-customer-lock-waited-ms", String(waitedMs));
        return c.json({ received: event.id, customer: event.data.customer, balance });
      } catch (error) {
        // Not stored by idempotency(): the provider retries and the event runs again.
        if (error instanceof StaleWriteError) return c.json({ error: error.message }, 503);
        throw error;
      }
    },
  );

  app.get("/customers/:id", async (c) => {
    const id = c.req.param("id");
    return c.json({ customer: id, balance: await connect(c.env).ledger.balance(id) });
  });

  return app;
}

/**
 * The example's business side: customer balances in Redis, changed by payment events with a
 * deliberately racy read-modify-write (read, work, write). Only the per-customer lock keeps two
 * events of one customer from losing an update, and the write carries the lock's fencing token so
 * that a holder whose lease ran out cannot overwrite a newer holder's result.
 */
import type { Redis } from "@upstash/redis/cloudflare";

export type EventType = "payment.succeeded" | "refund.created" | "report.requested";

/** The event a provider sends (Stripe-like: an id that stays the same across retries). */
export interface PaymentEvent {
  readonly id: string;
  readonly type: EventType;
  readonly data: { readonly customer: string; readonly amount: number };
}

const TYPES: readonly string[] = ["payment.succeeded", "refund.created", "report.requested"];

/** The event in a verified body, or null when the body is not one. */
export function parseEvent(body: string): PaymentEvent | null {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const { id, type, data } = value as Record<string, unknown>;
  if (typeof id !== "string" || typeof type !== "string" || !TYPES.includes(type)) return null;
  if (typeof data !== "object" || data === null) return null;
  const { customer, amount } = data as Record<string, unknown>;
  if (typeof customer !== "string" || !/^[\w-]{1,64}$/.test(customer)) return null;
  if (typeof amount !== "number" || !Number.isInteger(amount)) return null;
  return { id, type: type as EventType, data: { customer, amount } };
}

// KEYS[1] the customer's ledger hash. ARGV: 1 fencing token, 2 new balance.
// Refuses a token older than the last writer's: a late writer cannot undo a newer one's work.
// The first line lets Upstash lock only KEYS[1] instead of the whole database (docs/upstash.md);
// a plain Redis refuses it: drop that line there.
const FENCED_WRITE = `#!lua flags=allow-key-locking
local last = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
if tonumber(ARGV[1]) < last then return 0 end
redis.call('HSET', KEYS[1], 'balance', ARGV[2], 'token', ARGV[1])
return 1`;

export class StaleWriteError extends Error {
  override name = "StaleWriteError";
}

export class Ledger {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  #account(customer: string): string {
    return `${this.prefix}:ledger:${customer}`;
  }

  /** Hash of event id → times its effect was applied (the demo checks that each is 1). */
  get processedKey(): string {
    return `${this.prefix}:processed`;
  }

  async balance(customer: string): Promise<number> {
    return Number((await this.redis.hget<number>(this.#account(customer), "balance")) ?? 0);
  }

  /**
   * Applies a balance change: read, `work()`, write with the fencing token, then count the
   * event as processed. Throws StaleWriteError when a newer lock holder wrote meanwhile.
   */
  async apply(
    event: PaymentEvent,
    fencingToken: number,
    work: () => Promise<void>,
  ): Promise<number> {
    const account = this.#account(event.data.customer);
    const before = await this.balance(event.data.customer);
    await work();
    const delta =
      event.type === "payment.succeeded"
        ? event.data.amount
        : event.type === "refund.created"
          ? -event.data.amount
          : 0;
    const after = before + delta;
    const written = await this.redis.eval(FENCED_WRITE, [account], [fencingToken, after]);
    if (written !== 1) throw new StaleWriteError(`stale fencing token ${fencingToken}`);
    await this.redis.hincrby(this.processedKey, event.id, 1);
    return after;
  }
}

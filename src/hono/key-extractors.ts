/**
 * Where a request's idempotency key comes from; webhook ids stay the same across retries:
 *
 * | Sender                              | Extractor                          | Key                    |
 * | ----------------------------------- | ---------------------------------- | ---------------------- |
 * | any client (IETF Idempotency-Key)   | `fromHeader()`                     | `Idempotency-Key`      |
 * | GitHub                              | `fromHeader("X-GitHub-Delivery")`  | delivery GUID          |
 * | Standard Webhooks (Svix, …)         | `fromHeader("webhook-id")`         | message id             |
 * | Stripe                              | `stripeEventId()`                  | `event.id` in the body |
 * | any JSON body                       | `fromJsonBody("data.id")`          | a (nested) field       |
 */
import type { Context, Env } from "hono";

/** Gives the request's idempotency key, or undefined when it has none. */
export type KeyExtractor<E extends Env = Env> = (
  c: Context<E>,
) => string | undefined | Promise<string | undefined>;

/**
 * The value of header `name` (case-insensitive); a Structured Field string (`"abc"`, as the
 * Idempotency-Key draft writes it) is unquoted.
 * @example idempotency({ redis, key: fromHeader("X-GitHub-Delivery") })
 */
export function fromHeader(
  name = "Idempotency-Key",
): <E extends Env>(c: Context<E>) => string | undefined {
  return (c) => {
    const value = c.req.header(name)?.trim();
    if (value === undefined || value === "") return undefined;
    const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(value);
    return quoted ? quoted[1]!.replace(/\\(.)/g, "$1") : value;
  };
}

/**
 * A string or finite-number field of the JSON body, by dotted path (`"data.object.id"`), else
 * undefined. Read through Hono's cache, so the handler can read the body again.
 * @example idempotency({ redis, key: fromJsonBody("event.id") })
 */
export function fromJsonBody(
  path: string,
): <E extends Env>(c: Context<E>) => Promise<string | undefined> {
  const steps = path.split(".");
  return async (c) => {
    let value: unknown;
    try {
      value = await c.req.json();
    } catch {
      return undefined;
    }
    for (const step of steps) {
      if (typeof value !== "object" || value === null) return undefined;
      value = (value as Record<string, unknown>)[step];
    }
    if (typeof value === "string" && value !== "") return value;
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
    return undefined;
  };
}

/**
 * Stripe's event id (`evt_…`, the body's `id`): the same for every retry of an event.
 * @example idempotency({ redis, key: stripeEventId() })
 */
export function stripeEventId(): <E extends Env>(c: Context<E>) => Promise<string | undefined> {
  return fromJsonBody("id");
}

/**
 * GitHub's delivery GUID (`X-GitHub-Delivery`), kept by redeliveries.
 * @example idempotency({ redis, key: githubDelivery() })
 */
export function githubDelivery(): <E extends Env>(c: Context<E>) => string | undefined {
  return fromHeader("X-GitHub-Delivery");
}

/**
 * The `webhook-id` header of Standard Webhooks (Svix and others), the same for every retry.
 * @example idempotency({ redis, key: standardWebhookId() })
 */
export function standardWebhookId(): <E extends Env>(c: Context<E>) => string | undefined {
  return fromHeader("webhook-id");
}

/**
 * A simulated webhook provider: signs each delivery, sends it, and re-sends it after a 409 (a
 * duplicate still in progress). Real providers retry after minutes; this one after ~100 ms, so
 * that the demo stays short (Retry-After says up to the event lease, 30 s).
 */
import type { PaymentEvent } from "../src/ledger.js";
import { SIGNATURE_HEADER, signPayload } from "../src/signature.js";

export type DeliveryKind = "first" | "duplicate" | "redelivery" | "forged" | "conflicting";

export interface DeliveryResult {
  readonly kind: DeliveryKind;
  readonly eventId: string;
  /** The final answer, after any re-sends. */
  readonly status: number;
  readonly body: string;
  readonly replayed: boolean;
  /** 409 answers received before the final one. */
  readonly conflicts: number;
  /** How long the delivery waited for the customer lock, in ms (when processed). */
  readonly lockWaitedMs: number | null;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function deliver(
  url: URL,
  secret: string,
  event: PaymentEvent,
  kind: DeliveryKind,
): Promise<DeliveryResult> {
  const body = JSON.stringify(event);
  let conflicts = 0;
  for (;;) {
    const signature = await signPayload(kind === "forged" ? `${secret}-wrong` : secret, body);
    const res = await fetch(new URL("/webhooks/payments", url), {
      method: "POST",
      headers: { "content-type": "application/json", [SIGNATURE_HEADER]: signature },
      body,
    });
    const text = await res.text();
    if (res.status === 409 && conflicts < 200) {
      conflicts += 1;
      await pause(50 + Math.random() * 100);
      continue;
    }
    const waited = res.headers.get("x-customer-lock-waited-ms");
    return {
      kind,
      eventId: event.id,
      status: res.status,
      body: text,
      replayed: res.headers.get("idempotent-replayed") === "true",
      conflicts,
      lockWaitedMs: waited === null ? null : Number(waited),
    };
  }
}

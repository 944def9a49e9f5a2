/**
 * The burst: every event is delivered twice at once (providers do that), and once more after
 * everything settled (a provider retry); a few deliveries are forged (bad signature) and a few
 * reuse an event id with another payload.
 */
import type { EventType, PaymentEvent } from "../src/ledger.js";
import { type DeliveryKind, type DeliveryResult, deliver } from "./provider.js";

export interface BurstOptions {
  events: number;
  customers: number;
  /** Deliveries of each event in the concurrent wave (2 = one duplicate each). */
  copies: number;
  concurrency: number;
  runId: string;
}

export interface Burst {
  readonly events: readonly PaymentEvent[];
  readonly results: readonly DeliveryResult[];
}

/** Deterministic event mix: mostly payments, some refunds, every tenth a long report. */
export function planEvents(options: BurstOptions): PaymentEvent[] {
  return Array.from({ length: options.events }, (_, i) => {
    const type: EventType =
      i % 10 === 9 ? "report.requested" : i % 4 === 3 ? "refund.created" : "payment.succeeded";
    return {
      id: `evt_${options.runId}_${i}`,
      type,
      data: { customer: `cus_${options.runId}_${i % options.customers}`, amount: 100 + i },
    };
  });
}

function shuffled<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

async function pool<T>(
  tasks: readonly (() => Promise<T>)[],
  concurrency: number,
  onDone: () => void,
): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]!();
      onDone();
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, worker));
  return results;
}

/** Number of deliveries `runBurst` makes with these options. */
export function deliveryCount(options: BurstOptions): number {
  const odd = Math.max(1, Math.floor(options.events / 10));
  return options.events * (options.copies + 1) + 2 * odd;
}

export async function runBurst(
  url: URL,
  secret: string,
  options: BurstOptions,
  onDelivered: () => void,
): Promise<Burst> {
  const events = planEvents(options);
  const send = (event: PaymentEvent, kind: DeliveryKind) => () => deliver(url, secret, event, kind);
  const odd = Math.max(1, Math.floor(options.events / 10));

  // Wave 1: every event `copies` times, shuffled, all in flight together as far as allowed.
  const wave: (() => Promise<DeliveryResult>)[] = [];
  for (const event of events) {
    for (let copy = 0; copy < options.copies; copy++) {
      wave.push(send(event, copy === 0 ? "first" : "duplicate"));
    }
  }
  for (const event of events.slice(0, odd)) wave.push(send(event, "forged"));
  const first = await pool(shuffled(wave), options.concurrency, onDelivered);

  // Wave 2: the provider retries every event later; a few ids come back with another payload.
  const later: (() => Promise<DeliveryResult>)[] = events.map((event) => send(event, "redelivery"));
  for (const event of events.slice(0, odd)) {
    const changed = { ...event, data: { ...event.data, amount: event.data.amount + 1 } };
    later.push(send(changed, "conflicting"));
  }
  const second = await pool(shuffled(later), options.concurrency, onDelivered);
  return { events, results: [...first, ...second] };
}

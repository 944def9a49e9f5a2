/** What the burst proves: each event processed exactly once, every duplicate answered the same. */
import type { Redis } from "@upstash/redis";
import { KEY_PREFIX } from "../src/app.js";
import type { PaymentEvent } from "../src/ledger.js";
import type { Burst } from "./burst.js";

export interface Verdict {
  readonly processedOnce: number;
  readonly processedTwice: number;
  readonly neverProcessed: number;
  /** Events whose deliveries did not all end in the same 200 answer. */
  readonly inconsistentAnswers: number;
  readonly wrongBalances: number;
  readonly forgedAccepted: number;
  readonly conflictsAccepted: number;
  readonly ok: boolean;
}

function delta(event: PaymentEvent): number {
  if (event.type === "payment.succeeded") return event.data.amount;
  return event.type === "refund.created" ? -event.data.amount : 0;
}

export async function judge(burst: Burst, redis: Redis): Promise<Verdict> {
  let processedOnce = 0;
  let processedTwice = 0;
  let neverProcessed = 0;
  let inconsistentAnswers = 0;
  for (const event of burst.events) {
    const times = Number((await redis.hget(`${KEY_PREFIX}:processed`, event.id)) ?? 0);
    if (times === 1) processedOnce += 1;
    else if (times === 0) neverProcessed += 1;
    else processedTwice += 1;
    const answers = burst.results.filter(
      (r) => r.eventId === event.id && r.kind !== "forged" && r.kind !== "conflicting",
    );
    const fresh = answers.filter((r) => !r.replayed);
    const same = answers.every((r) => r.status === 200 && r.body === answers[0]?.body);
    if (!same || fresh.length !== 1) inconsistentAnswers += 1;
  }

  const expected = new Map<string, number>();
  for (const event of burst.events) {
    expected.set(event.data.customer, (expected.get(event.data.customer) ?? 0) + delta(event));
  }
  let wrongBalances = 0;
  for (const [customer, balance] of expected) {
    const actual = Number((await redis.hget(`${KEY_PREFIX}:ledger:${customer}`, "balance")) ?? 0);
    if (actual !== balance) wrongBalances += 1;
  }

  const forgedAccepted = burst.results.filter(
    (r) => r.kind === "forged" && r.status !== 401,
  ).length;
  const conflictsAccepted = burst.results.filter(
    (r) => r.kind === "conflicting" && r.status !== 422,
  ).length;
  return {
    processedOnce,
    processedTwice,
    neverProcessed,
    inconsistentAnswers,
    wrongBalances,
    forgedAccepted,
    conflictsAccepted,
    ok:
      processedOnce === burst.events.length &&
      inconsistentAnswers === 0 &&
      wrongBalances === 0 &&
      forgedAccepted === 0 &&
      conflictsAccepted === 0,
  };
}

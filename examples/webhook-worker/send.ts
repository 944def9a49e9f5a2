/**
 * Sends one signed payment event to the example Worker, the way a provider would, and prints
 * the answers. `--times N` sends N copies at once (concurrent duplicates); `--id` re-sends an
 * event id (a redelivery).
 *
 *   npx tsx examples/webhook-worker/send.ts --customer cus_1 --amount 500 --times 3
 *   npx tsx examples/webhook-worker/send.ts --id evt_123 --customer cus_1 --amount 500
 *
 * Environment: WEBHOOK_URL (default http://localhost:8787), WEBHOOK_SECRET (default: the one
 * `npm run dev` passes to the Worker).
 */
import { parseArgs } from "node:util";
import { DEV_SECRET } from "./dev-secret.js";
import { SIGNATURE_HEADER, signPayload } from "./src/signature.js";

const { values } = parseArgs({
  options: {
    id: { type: "string" },
    type: { type: "string", default: "payment.succeeded" },
    customer: { type: "string", default: "cus_1" },
    amount: { type: "string", default: "100" },
    times: { type: "string", default: "1" },
  },
});
const event = {
  id: values.id ?? `evt_${Date.now().toString(36)}`,
  type: values.type,
  data: { customer: values.customer, amount: Number(values.amount) },
};
const body = JSON.stringify(event);
const url = new URL("/webhooks/payments", process.env.WEBHOOK_URL ?? "http://localhost:8787");
const secret = process.env.WEBHOOK_SECRET ?? DEV_SECRET;
console.log(`POST ${url} ×${values.times}\n${body}`);
const answers = await Promise.all(
  Array.from({ length: Number(values.times) }, async () => {
    const res = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        [SIGNATURE_HEADER]: await signPayload(secret, body),
      },
      body,
    });
    const replayed = res.headers.get("idempotent-replayed") ? " (replayed)" : "";
    const retry = res.headers.get("retry-after");
    return `${res.status}${replayed}${retry ? ` retry-after: ${retry}` : ""} ${await res.text()}`;
  }),
);
for (const answer of answers) console.log(answer);

/** The webhook example in Node: signature checks, and exactly-once processing with the ledger. */
import { describe, expect, it } from "vitest";
import { createApp } from "../../../examples/webhook-worker/src/app.js";
import {
  SIGNATURE_HEADER,
  signPayload,
  verifySignature,
} from "../../../examples/webhook-worker/src/signature.js";
import { REPLAY_HEADER } from "../../../src/hono/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";
import { executionContext } from "./harness.js";

describe("webhook signatures (HMAC-SHA256, t=…,v1=…)", () => {
  const body = '{"id":"evt_1"}';
  const now = 1_800_000_000;

  it("accept the sender's signature and nothing else", async () => {
    const header = await signPayload("secret", body, now);
    expect(header).toMatch(/^t=1800000000,v1=[0-9a-f]{64}$/);
    expect(await verifySignature("secret", header, body, { nowSeconds: now })).toEqual({
      valid: true,
    });
    const checks = await Promise.all([
      verifySignature("other", header, body, { nowSeconds: now }),
      verifySignature("secret", header, `${body} `, { nowSeconds: now }),
      verifySignature("secret", header.replace("t=1800000000", "t=1800000001"), body, {
        nowSeconds: now,
      }),
      verifySignature("secret", undefined, body, { nowSeconds: now }),
      verifySignature("secret", "v1=zz", body, { nowSeconds: now }),
    ]);
    expect(checks.map((check) => check.valid)).toEqual([false, false, false, false, false]);
  });

  it("refuse timestamps outside the tolerance, and accept any valid v1 (rotation)", async () => {
    const header = await signPayload("secret", body, now);
    expect((await verifySignature("secret", header, body, { nowSeconds: now + 301 })).valid).toBe(
      false,
    );
    expect((await verifySignature("secret", header, body, { nowSeconds: now - 299 })).valid).toBe(
      true,
    );
    const old = (await signPayload("old-secret", body, now)).split(",")[1];
    const rotated = `${header.split(",")[0]},${old},${header.split(",")[1]}`;
    expect((await verifySignature("secret", rotated, body, { nowSeconds: now })).valid).toBe(true);
  });
});

describe.each(backendKindsUnderTest())("the webhook example app on %s", (kind) => {
  const bed = useTestBed(kind);

  it("processes each event once across concurrent and later deliveries", async () => {
    const app = createApp();
    const env = {
      UPSTASH_REDIS_REST_URL: bed.server.url,
      UPSTASH_REDIS_REST_TOKEN: bed.server.token,
      WEBHOOK_SECRET: "whsec_test",
      WORK_MS: "5",
    };
    const customer = `cus_${freshPrefix()}`;
    const events = Array.from({ length: 6 }, (_, i) => ({
      id: `evt_${freshPrefix()}_${i}`,
      type: i === 5 ? "refund.created" : i === 4 ? "report.requested" : "payment.succeeded",
      data: { customer, amount: 100 },
    }));
    const deliver = async (event: (typeof events)[number]) => {
      const body = JSON.stringify(event);
      for (;;) {
        const res = await app.request(
          "/webhooks/payments",
          {
            method: "POST",
            headers: { [SIGNATURE_HEADER]: await signPayload("whsec_test", body) },
            body,
          },
          env,
          executionContext(),
        );
        if (res.status !== 409) return res;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const answers = await Promise.all([...events, ...events, ...events].map(deliver));
    expect(answers.map((res) => res.status)).toEqual(Array(18).fill(200));
    expect(answers.filter((res) => res.headers.get(REPLAY_HEADER) === null)).toHaveLength(6);
    const processed = await bed.redis().hgetall<Record<string, number>>("webhooks:processed");
    for (const event of events) expect(Number(processed?.[event.id])).toBe(1);
    const balance = await app.request(`/customers/${customer}`, {}, env, executionContext());
    // Four payments of 100, a report (no change), a refund of 100.
    expect(await balance.json()).toEqual({ customer, balance: 300 });
  });
});

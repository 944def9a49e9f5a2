/**
 * Issue 28 case 8: idempotency scopes never collide. A client chooses the key, so no key may spell
 * the record name of another scope — another route, the shared scope, another tenant.
 */
import fc from "fast-check";
import { type Context, Hono } from "hono";
import { describe, expect, it } from "vitest";
import { idempotency } from "../../../src/hono/index.js";
import { scopedLockName } from "../../../src/hono/key-scope.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";

/** Keys a hostile client might send: separators, tenant marks, escapes, braces, unicode. */
const HOSTILE = fc.string({
  unit: fc.constantFrom(":", "@", "%", "3", "A", "{", "}", " ", "/", "é", "键", "a", "P"),
  minLength: 1,
  maxLength: 12,
});

const requestOn = (method: string, routePath: string) =>
  ({ req: { method, routePath } }) as unknown as Context;

describe("scoped idempotency record names", () => {
  it("differ whenever scope, tenant, route or key differ, for every scope mode", () => {
    const scope = fc.record({
      mode: fc.constantFrom("route" as const, "shared" as const),
      tenant: fc.option(HOSTILE, { nil: undefined }),
      method: fc.constantFrom("POST", "PUT"),
      route: HOSTILE,
      key: HOSTILE,
    });
    fc.assert(
      fc.property(scope, scope, (a, b) => {
        const name = (s: typeof a) =>
          scopedLockName(requestOn(s.method, s.route), s.key, {
            namespace: "idempotency",
            scope: s.mode,
            tenant: s.tenant,
          });
        const same =
          a.mode === b.mode &&
          a.tenant === b.tenant &&
          a.key === b.key &&
          (a.mode === "shared" || (a.method === b.method && a.route === b.route));
        expect(name(a) === name(b)).toBe(same);
      }),
      { numRuns: 2_000 },
    );
  });

  it("differ when a shared-scope key spells another scope's parts", () => {
    fc.assert(
      fc.property(
        fc.option(HOSTILE, { nil: undefined }),
        HOSTILE,
        HOSTILE,
        (tenant, route, key) => {
          const options = { namespace: "idempotency", tenant };
          const routeName = scopedLockName(requestOn("POST", route), key, {
            ...options,
            scope: "route",
          });
          // The key a client would send to a shared-scope route to land on that record.
          const spelled = `${tenant === undefined ? "" : `@${tenant}:`}POST ${route}:${key}`;
          for (const sharedTenant of [undefined, tenant]) {
            const sharedName = scopedLockName(requestOn("PUT", "/inbox"), spelled, {
              ...options,
              tenant: sharedTenant,
              scope: "shared",
            });
            expect(sharedName).not.toBe(routeName);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("keep braces out of the hash tag", () => {
    const name = scopedLockName(requestOn("POST", "/x/{id}"), "}{evil}", {
      namespace: "idempotency",
      scope: "route",
      tenant: "{t}",
    });
    expect(name).not.toMatch(/[{}]/);
  });
});

describe.each(backendKindsUnderTest())("idempotency scopes on %s", (kind) => {
  const bed = useTestBed(kind);

  /** One app, one prefix: a route-scoped and a shared-scoped guard, with and without a tenant. */
  function app() {
    const prefix = freshPrefix();
    const runs: string[] = [];
    const guard = (scope: "route" | "shared", tenant?: string) =>
      idempotency({
        redis: bed.redis(),
        prefix,
        scope,
        ...(tenant === undefined ? {} : { tenant: () => tenant }),
      });
    const hono = new Hono();
    const handler = (label: string) => async (c: Context) => {
      runs.push(`${label} ${c.req.header("idempotency-key")}`);
      return c.json({ label, body: await c.req.text() }, 201);
    };
    hono.post("/webhooks/billing", guard("route"), handler("billing"));
    hono.post("/payments", guard("route", "acct_9"), handler("payments"));
    hono.post("/inbox", guard("shared"), handler("inbox"));
    const send = (path: string, key: string, body: string) =>
      hono.request(path, { method: "POST", headers: { "idempotency-key": key }, body });
    return { send, runs };
  }

  it("a shared-scope key that spells a route scope's name does not take its record", async () => {
    const { send, runs } = app();
    expect((await send("/inbox", "POST /webhooks/billing:evt_1", "a")).status).toBe(201);
    // The route's own delivery of evt_1, with another body: its first, so it runs.
    expect((await send("/webhooks/billing", "evt_1", "b")).status).toBe(201);
    expect(runs).toEqual(["inbox POST /webhooks/billing:evt_1", "billing evt_1"]);
  });

  it("a shared-scope key that spells a tenant's name does not take its record", async () => {
    const { send, runs } = app();
    expect((await send("/inbox", "@acct_9:POST /payments:key-1", "a")).status).toBe(201);
    expect((await send("/payments", "key-1", "b")).status).toBe(201);
    expect(runs).toEqual(["inbox @acct_9:POST /payments:key-1", "payments key-1"]);
  });

  it("still replays a hostile key to its own scope", async () => {
    const { send, runs } = app();
    const key = "%3A:@{x} y";
    expect((await send("/inbox", key, "a")).status).toBe(201);
    const replay = await send("/inbox", key, "a");
    expect(replay.status).toBe(201);
    expect(runs).toEqual([`inbox ${key}`]);
  });
});

/**
 * Issue 29 item 3: a Worker without `nodejs_compat` has no AsyncLocalStorage. `client.scope()` and
 * withLock() with `client` then throw LockScopeUnavailableError naming the flag, before any
 * request: the middleware used to run unscoped without a word, and a nested acquisition of the
 * request's own lock then waited out its waitMs against its own request and answered 500.
 */
import { Hono } from "hono";
import { afterEach, describe, expect, it, vi } from "vitest";

/** The package's modules, loaded afresh while `process.getBuiltinModule` finds nothing. */
async function withoutAsyncLocalStorage() {
  vi.resetModules();
  vi.spyOn(process, "getBuiltinModule").mockReturnValue(undefined);
  const root = await import("../../../src/index.js");
  const hono = await import("../../../src/hono/index.js");
  return { ...root, ...hono };
}

/** A RedisLike that counts requests and never answers one (none may be sent). */
function silentRedis() {
  const sent = vi.fn(() => new Promise<never>(() => {}));
  return { redis: { eval: sent, evalsha: sent }, sent };
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.resetModules();
});

describe("without AsyncLocalStorage (a Worker without nodejs_compat)", () => {
  it("client.scope() throws LockScopeUnavailableError naming nodejs_compat", async () => {
    const { LockClient, LockScopeUnavailableError, isEdgelockError } =
      await withoutAsyncLocalStorage();
    const { redis, sent } = silentRedis();
    const client = new LockClient({ redis });
    let caught: unknown;
    try {
      client.scope(() => "never");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(LockScopeUnavailableError);
    expect(isEdgelockError(caught) && caught.name).toBe("LockScopeUnavailableError");
    expect((caught as Error).message).toMatch(/nodejs_compat/);
    expect(client.currentOwner).toBeUndefined();
    expect(sent).not.toHaveBeenCalled();
  });

  it("withLock() with a client answers with that error before any request, instead of running unscoped", async () => {
    const { LockClient, LockScopeUnavailableError, withLock } = await withoutAsyncLocalStorage();
    const { redis, sent } = silentRedis();
    const client = new LockClient({ redis });
    const errors: unknown[] = [];
    const app = new Hono();
    app.onError((error, c) => {
      errors.push(error);
      return c.text(error.message, 500);
    });
    let ran = false;
    app.post(
      "/orders/:id",
      withLock({ client, key: (c) => `orders:${c.req.param("id")}` }),
      (c) => {
        ran = true;
        return c.text("ok");
      },
    );
    const res = await app.request("/orders/1", { method: "POST" });
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/nodejs_compat/);
    expect(errors[0]).toBeInstanceOf(LockScopeUnavailableError);
    expect(ran).toBe(false);
    expect(sent).not.toHaveBeenCalled();
  });
});

/**
 * Issue 29 item 3: a Worker without `nodejs_compat` has no AsyncLocalStorage. `client.scope()` and
 * withLock() with `client` then throw LockScopeUnavailableError naming the flag, before any
 * request: the middleware used to run unscoped without a word, and a nested acquisition of the
 * request's own lock then waited out its waitMs against its own request and answered 500.
 */
import { AsyncLocalStorage } from "node:async_hooks";
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
  vi.unstubAllGlobals();
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

// Issue 44 item 2 and issue 46: the error names what the user called and speaks the runtime's
// language: a Worker's flag on Workers only; elsewhere (Vercel's Edge runtime) the explicit owner.
describe("LockScopeUnavailableError's words", () => {
  it("on Workers: the wrangler.toml flag; withLock() names itself, not scope()", async () => {
    vi.stubGlobal("navigator", { userAgent: "Cloudflare-Workers" });
    const { LockClient, withLock } = await withoutAsyncLocalStorage();
    const client = new LockClient({ redis: silentRedis().redis });
    expect(() => client.scope(() => "never")).toThrow(
      'client.scope() needs AsyncLocalStorage: add compatibility_flags = ["nodejs_compat"] to wrangler.toml, or pass owner.',
    );
    const app = new Hono();
    app.onError((error, c) => c.text(error.message, 500));
    app.post("/o/:id", withLock({ client, key: (c) => `o:${c.req.param("id")}` }), (c) =>
      c.text("ok"),
    );
    const said = await (await app.request("/o/1", { method: "POST" })).text();
    expect(said).toMatch(/^withLock\(\{ client \}\)/);
    expect(said).toContain('compatibility_flags = ["nodejs_compat"]');
    expect(said).toContain("withLock({ lock: (c) => … }) without client");
    expect(said).not.toContain("scope()");
  });

  it("elsewhere (an edge runtime without it): no Cloudflare flag, the owner option instead", async () => {
    vi.stubGlobal("navigator", { userAgent: "edge-runtime" });
    const { LockClient } = await withoutAsyncLocalStorage();
    const client = new LockClient({ redis: silentRedis().redis });
    let said = "";
    try {
      client.scope(() => "never");
    } catch (error) {
      said = (error as Error).message;
    }
    expect(said).toContain("client.scope() needs AsyncLocalStorage: this runtime has none");
    expect(said).toContain("pass owner");
    expect(said).not.toContain("compatibility_flags");
  });
});

// Issue 46: Vercel's Edge runtime has AsyncLocalStorage in node:async_hooks (its docs' "Compatible
// Node.js modules") but no `process`, so edgelock cannot reach it itself; Next.js sets it global.
describe("Vercel's Edge runtime", () => {
  it("the error says how to hand edgelock its node:async_hooks, not a Cloudflare flag", async () => {
    vi.stubGlobal("EdgeRuntime", "edge-runtime");
    const { LockClient } = await withoutAsyncLocalStorage();
    const client = new LockClient({ redis: silentRedis().redis });
    expect(() => client.scope(() => "never")).toThrow(
      'client.scope() needs AsyncLocalStorage: Vercel\'s Edge runtime has it in "node:async_hooks" but edgelock cannot import it there: set globalThis.AsyncLocalStorage = AsyncLocalStorage (imported from node:async_hooks) before the first request, or pass owner.',
    );
  });

  it("a global AsyncLocalStorage gives scopes, also when set after the first attempt", async () => {
    vi.stubGlobal("EdgeRuntime", "edge-runtime");
    const { LockClient, LockScopeUnavailableError } = await withoutAsyncLocalStorage();
    const { redis, sent } = silentRedis();
    const client = new LockClient({ redis });
    expect(() => client.scope(() => "never")).toThrow(LockScopeUnavailableError);
    vi.stubGlobal("AsyncLocalStorage", AsyncLocalStorage);
    const owners = await client.scope(async () => {
      const outer = client.currentOwner;
      await Promise.resolve();
      return [outer, client.currentOwner];
    });
    expect(owners[0]).toEqual(expect.any(String));
    expect(owners[1]).toBe(owners[0]);
    expect(client.currentOwner).toBeUndefined();
    expect(sent).not.toHaveBeenCalled();
  });
});

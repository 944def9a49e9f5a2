/** The reentrant lock inside workerd, through @upstash/redis/cloudflare, against the local server. */

import { env } from "cloudflare:workers";
import { Redis } from "@upstash/redis/cloudflare";
import { describe, expect, it } from "vitest";
import { LockClient, LockNotHeldError } from "../../src/index.js";
import { handleLockApi } from "../../worker/index.js";

const servers: { kind: string; url: string; token: string }[] = JSON.parse(
  env.EDGELOCK_TEST_SERVERS,
);
let prefixes = 0;

function clientOn(server: { url: string; token: string }, watchdogTimeoutMs?: number) {
  prefixes += 1;
  const redis = new Redis({ url: server.url, token: server.token });
  return new LockClient({
    redis,
    prefix: `w${Date.now().toString(36)}${prefixes}`,
    ...(watchdogTimeoutMs ? { watchdogTimeoutMs } : {}),
  });
}

describe.each(servers)("reentrant lock in workerd on $kind", (server) => {
  it("acquires, re-enters, fences and releases", async () => {
    const lock = clientOn(server).lock("orders:1");
    const held = await lock.acquire({ leaseMs: 5_000 });
    const again = await lock.acquire({ leaseMs: 5_000, owner: held.owner });
    expect(again.fencingToken).toBe(held.fencingToken);
    expect(await lock.holdCount(held.owner)).toBe(2);
    expect(await lock.tryAcquire({ leaseMs: 5_000 })).toBeNull();
    await again.release();
    await held.release();
    const next = await lock.acquire({ leaseMs: 5_000 });
    expect(next.fencingToken).toBe(held.fencingToken + 1);
    await next.release();
    await expect(next.release()).rejects.toBeInstanceOf(LockNotHeldError);
  });

  it("keeps concurrent requests apart and nested calls together through scopes", async () => {
    const client = clientOn(server);
    const lock = client.lock("scoped");
    const results = await Promise.all(
      [0, 1].map((i) =>
        client.scope(async () => {
          const outer = await lock.tryAcquire({ leaseMs: 5_000, waitMs: 0 });
          if (!outer) return `request ${i}: busy`;
          const inner = await lock.acquire({ leaseMs: 5_000 });
          const sameOwner = inner.owner === outer.owner;
          await new Promise((resolve) => setTimeout(resolve, 50));
          await inner.release();
          await outer.release();
          return `request ${i}: held, re-entered=${sameOwner}`;
        }),
      ),
    );
    expect(results.filter((r) => r.endsWith("busy"))).toHaveLength(1);
    expect(results.filter((r) => r.endsWith("re-entered=true"))).toHaveLength(1);
  });

  it("waits for a release and releases with await using", async () => {
    const lock = clientOn(server).lock("waited");
    const held = await lock.acquire({ leaseMs: 5_000 });
    setTimeout(() => void held.release(), 100);
    {
      await using next = await lock.acquire({ leaseMs: 5_000, waitMs: 5_000 });
      expect(next.fencingToken).toBe(held.fencingToken + 1);
    }
    expect(await lock.isLocked()).toBe(false);
  });

  it("renews with the in-process watchdog while the handle is held", async () => {
    // 2 s, not shorter: a loaded machine may stall a timer or an answer for a second (an acquire
    // answered after its first lease is lost on arrival).
    const lock = clientOn(server, 2_000).lock("watched");
    const held = await lock.acquire();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await lock.isHeldBy(held.owner)).toBe(true);
    expect(held.signal.aborted, String(held.signal.reason)).toBe(false);
    await held.release();
    expect(await lock.isLocked()).toBe(false);
  });

  it("serves the host Worker's lock API", async () => {
    const client = clientOn(server);
    const acquire = await handleLockApi(
      new Request("http://w/locks/api/acquire?leaseMs=5000", { method: "POST" }),
      client,
    );
    expect(acquire.status).toBe(200);
    const { owner, fencingToken } = (await acquire.json()) as {
      owner: string;
      fencingToken: number;
    };
    expect(fencingToken).toBe(1);
    const busy = await handleLockApi(
      new Request("http://w/locks/api/acquire", { method: "POST" }),
      client,
    );
    expect(busy.status).toBe(409);
    expect(Number(busy.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const state = await handleLockApi(new Request("http://w/locks/api"), client);
    expect(await state.json()).toMatchObject({ locked: true });
    const release = await handleLockApi(
      new Request(`http://w/locks/api/release?owner=${owner}`, { method: "POST" }),
      client,
    );
    expect(release.status).toBe(204);
  });
});

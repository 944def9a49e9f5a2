/**
 * The inspector against the local REST server (a real Redis where redis-server is installed,
 * and the embedded engine): what a snapshot shows, what it costs, what it never shows (owner
 * and REST tokens), its actions, and the read-only token's view.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../../dev/cli.js";
import { type DevServer, startDevServer } from "../../../dev/index.js";
import { LockClient, LockInputError } from "../../../src/index.js";
import { inspectorHandler } from "../../../src/inspector/index.js";
import type { InspectorSnapshot } from "../../../src/inspector/types.js";
import { semaphoreKeys } from "../../../src/locks/semaphore/keys.js";
import { backendKindsUnderTest, withDevServer } from "../../support/backends.js";

// Like every backend file: redis-server wherever it is found, and required under CI=true.
const kinds = backendKindsUnderTest();

/** How the inspector shows an owner: the first 12 hex digits of SHA-256 of its token. */
const shown = (owner: string) => createHash("sha256").update(owner).digest("hex").slice(0, 12);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let counter = 0;
function fresh(): string {
  counter += 1;
  return `i${Date.now().toString(36)}${counter}`;
}

describe.each(kinds)("inspector (%s)", (kind) => {
  // Its servers report to the script census: the read scripts run under per-key locking too.
  const serverOf = withDevServer(kind);
  let server: DevServer;
  beforeAll(() => {
    server = serverOf();
  });

  // Its waiters poll (the queue shows them "polling"), not the default's push.
  function clientOf(token = server.token, prefix = fresh()) {
    return new LockClient({
      redis: new Redis({ url: server.url, token }),
      prefix,
      wait: { mode: "poll" },
    });
  }
  function handlerOf(client: LockClient, access: "read" | "write" = "write", names?: string[]) {
    return inspectorHandler({ client, access: () => access, ...(names ? { names } : {}) });
  }
  async function snapshot(handle: (r: Request) => Promise<Response>, query = "") {
    const response = await handle(new Request(`http://127.0.0.1/x/_edgelock/api/snapshot${query}`));
    const text = await response.text();
    return { status: response.status, text, body: JSON.parse(text) as InspectorSnapshot };
  }
  function post(
    handle: (r: Request) => Promise<Response>,
    action: string,
    body: unknown,
    headers = true,
  ) {
    return handle(
      new Request(`http://127.0.0.1/x/_edgelock/api/${action}`, {
        method: "POST",
        headers: headers
          ? { "content-type": "application/json", "x-edgelock-inspector": "1" }
          : { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
  }

  it("shows holders, lease, fencing token, read holds and the queue; never an owner token; its cost is what the server counted", async () => {
    const client = clientOf();
    const held = await client.lock("orders:42").acquire({ leaseMs: 20_000 });
    const waiting = client
      .lock("orders:42")
      .acquire({ waitMs: 4_000 })
      .catch((error: Error) => error);
    const read = await client.readWriteLock("doc").readLock().acquire({ leaseMs: 15_000 });
    const idleHold = await client.lock("idle").acquire({ leaseMs: 5_000 });
    await idleHold.release();
    await new Promise((resolve) => setTimeout(resolve, 300));

    const handle = handlerOf(client);
    // The inspector's own commands: the polling waiter's attempts (EVALSHA) go on meanwhile.
    const inspectorCommands = () => {
      const byName = server.stats.snapshot().commandsByName;
      return (byName.scan ?? 0) + (byName.eval_ro ?? 0) + (byName.evalsha_ro ?? 0);
    };
    const before = inspectorCommands();
    const { body, text } = await snapshot(handle);
    const spent = inspectorCommands() - before;
    expect(body.cost.total).toBe(spent);
    expect(body.cost.scan).toBeGreaterThanOrEqual(1);
    expect(body.cost.read).toBe(2); // one read-only script per active lock, first run EVAL_RO

    const lock = body.locks.find((l) => l.name === "orders:42");
    expect(lock).toMatchObject({ kind: "lock", state: "held", fencingToken: held.fencingToken });
    expect(lock?.holders).toEqual([{ owner: expect.stringMatching(/^[0-9a-f]{12}$/), holds: 1 }]);
    expect(lock?.leaseLeftMs).toBeGreaterThan(10_000);
    expect(lock?.leaseLeftMs).toBeLessThanOrEqual(20_000);
    expect(lock?.waiterCount).toBe(1);
    expect(lock?.waiters[0]).toMatchObject({ position: 1, mode: "polling" });
    const rw = body.locks.find((l) => l.name === "doc");
    expect(rw).toMatchObject({ kind: "read-write", state: "held", readHoldCount: 1 });
    expect(body.idle).toContain("idle");
    expect(body.scan.complete).toBe(true);
    // Owner tokens (and the REST token) never leave the server.
    expect(text).not.toContain(held.owner);
    expect(text).not.toContain(read.owner);
    expect(text).not.toContain(server.token);

    // The second refresh runs the cached script by its SHA-1: the same count.
    const again = await snapshot(handle);
    expect(again.body.cost.read).toBe(2);
    await held.release();
    await read.release();
    await waiting;
  });

  it("shows when a hold began only when that hold was timed: an uncontended hold (the fast path) shows none, not an older hold's", async () => {
    const client = clientOf();
    const lock = client.lock("since");
    // A timed hold first (taken from the queue), which records its start…
    const first = await lock.acquire({ leaseMs: 20_000 });
    const queued = clientOf(server.token, client.prefix).lock("since").acquire({ leaseMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await first.release();
    await (await queued).release();
    await new Promise((resolve) => setTimeout(resolve, 300));
    // …then an uncontended one, which times nothing.
    const takenAt = Date.now();
    const held = await lock.acquire({ leaseMs: 20_000 });
    const { body } = await snapshot(handlerOf(client));
    const shown = body.locks.find((each) => each.name === "since");
    expect(shown?.state).toBe("held");
    expect(shown?.heldSince ?? takenAt).toBeGreaterThanOrEqual(takenAt - 50);
    await held.release();
  });

  it("shows a semaphore's capacity, available permits, live holds and FIFO waiters with their demand, and a latch's count and TTL", async () => {
    const client = clientOf();
    const upstream = client.semaphore("upstream");
    await upstream.setPermits(5);
    const longer = await upstream.acquire({ permits: 2, leaseMs: 20_000 });
    const shorter = await upstream.acquire({ leaseMs: 10_000 });
    // 2 free: the first waiter asks 4, the second only 1, yet waits behind it (FIFO).
    const first = upstream.acquire({ permits: 4, waitMs: 5_000 }).catch((e: Error) => e);
    await sleep(300);
    const second = upstream.acquire({ waitMs: 5_000 }).catch((e: Error) => e);
    const latch = client.countDownLatch("import", { ttlMs: 60_000 });
    await latch.trySetCount(3);
    await latch.countDown();
    await sleep(300);

    const { body, text } = await snapshot(handlerOf(client));
    expect(body.cost.read).toBe(2); // one read-only script each, the semaphore and the latch
    expect(body.locks).toEqual([]);
    const semaphore = body.semaphores.find((entry) => entry.name === "upstream");
    const state = await upstream.state();
    expect(semaphore).toMatchObject({
      state: "held",
      capacity: 5,
      available: 2,
      heldPermits: 3,
      holdCount: 2,
      waiterCount: 2,
      fencingToken: shorter.fencingToken,
    });
    expect(semaphore?.available).toBe(state.available);
    expect(semaphore?.waiterCount).toBe(state.waiters);
    // Holds: the soonest lease end first, owners shown as lock holders are.
    expect(semaphore?.holds).toMatchObject([
      { owner: shown(shorter.owner), permits: 1, fencingToken: shorter.fencingToken },
      { owner: shown(longer.owner), permits: 2, fencingToken: longer.fencingToken },
    ]);
    expect(semaphore?.holds[0]?.leaseLeftMs).toBeGreaterThan(8_000);
    expect(semaphore?.holds[0]?.leaseLeftMs).toBeLessThanOrEqual(10_000);
    expect(semaphore?.holds[1]?.leaseLeftMs).toBeGreaterThan(18_000);
    // Taken beside another hold, by a script that reads the clock: its grant is known. The first
    // hold, taken alone, read none (its lease is its key's TTL): its grant is not.
    expect(semaphore?.holds[0]?.heldSince).toBeLessThanOrEqual(body.takenAt);
    expect(semaphore?.holds[0]?.heldSince).toBeGreaterThan(body.takenAt - 5_000);
    expect(semaphore?.holds[1]?.heldSince).toBeNull();
    expect(semaphore?.waiters.map(({ position, permits }) => ({ position, permits }))).toEqual([
      { position: 1, permits: 4 },
      { position: 2, permits: 1 },
    ]);
    expect(semaphore?.waiters[0]?.owner).toMatch(/^[0-9a-f]{12}$/);
    expect(semaphore?.waiters[0]?.deadlineInMs).toBeGreaterThan(0);
    expect(body.latches).toEqual([
      { name: "import", count: 2, ttlLeftMs: expect.any(Number) as number },
    ]);
    expect(body.latches[0]?.ttlLeftMs).toBeGreaterThan(50_000);
    expect(body.latches[0]?.ttlLeftMs).toBeLessThanOrEqual(60_000);
    expect(body.idle).toEqual([]);
    expect(text).not.toContain(longer.owner);
    expect(text).not.toContain(shorter.owner);

    await longer.release();
    await shorter.release();
    for (const waiter of await Promise.all([first, second])) {
      if (!(waiter instanceof Error)) await waiter.release();
    }
  });

  it("shows no semaphore hold whose lease has passed, nor a waiter past its deadline", async () => {
    const prefix = fresh();
    const client = clientOf(server.token, prefix);
    const pool = client.semaphore("pool");
    await pool.setPermits(4);
    const lasting = await pool.acquire({ permits: 1, leaseMs: 20_000 });
    await pool.acquire({ permits: 2, leaseMs: 200 });
    // A crashed waiter: queued, its deadline passed, not pruned yet (no attempt ran since).
    const keys = semaphoreKeys(prefix, "pool");
    const redis = new Redis({ url: server.url, token: server.token });
    const gone = `${"d".repeat(32)} ${"0".repeat(24)} 3`;
    await redis.zadd(keys.queue, { score: Date.now() - 5_000, member: gone });
    await redis.zadd(keys.timeouts, { score: Date.now() - 1_000, member: gone });
    await sleep(400);
    expect(await redis.hlen(keys.leases)).toBe(2); // the expired hold is still in Redis

    const semaphore = (await snapshot(handlerOf(client))).body.semaphores[0];
    expect(semaphore).toMatchObject({
      name: "pool",
      state: "held",
      heldPermits: 1,
      holdCount: 1,
      available: 3,
      waiters: [],
      waiterCount: 0,
    });
    expect(semaphore?.holds.map((hold) => hold.fencingToken)).toEqual([lasting.fencingToken]);
    expect(await pool.state()).toMatchObject({ available: 3, holds: 1, waiters: 0 });
    await lasting.release();
  });

  it("finds semaphores and latches as it finds locks: in use, read; a capacity only, idle and read when named", async () => {
    const client = clientOf();
    await client.semaphore("configured").setPermits(3);
    const handle = handlerOf(client);
    const walked = (await snapshot(handle)).body;
    expect(walked.semaphores).toEqual([]);
    expect(walked.idle).toEqual(["configured"]);
    expect(walked.cost.read).toBe(0);

    const named = (await snapshot(handle, "?name=configured")).body;
    expect(named.semaphores).toMatchObject([
      { name: "configured", state: "free", capacity: 3, available: 3, holds: [], waiters: [] },
    ]);
    // A name is read as a lock, and as a semaphore or latch only where the whole walk saw one.
    expect(named.locks).toMatchObject([{ name: "configured", state: "free" }]);
    expect(named.cost.read).toBe(2);
    expect((await snapshot(handle, "?name=nothing-here")).body.cost.read).toBe(1);

    // maxLocks counts every kind's reads.
    const held = await client.semaphore("configured").acquire({ leaseMs: 10_000 });
    await client.countDownLatch("batch").trySetCount(2);
    const budgeted = inspectorHandler({ client, access: () => "read", maxLocks: 1 });
    const capped = (await snapshot(budgeted)).body;
    expect(capped.latches.map((latch) => latch.name)).toEqual(["batch"]);
    expect(capped.semaphores).toEqual([]);
    expect(capped.notShown).toBe(1);
    await held.release();
  });

  it("offers no semaphore or latch action: such a force-release is a typed 400 and the lock of that name stays held", async () => {
    const client = clientOf();
    const held = await client.lock("shared").acquire({ leaseMs: 10_000 });
    const permit = await client
      .semaphore("shared", { initialPermits: 1 })
      .acquire({ leaseMs: 10_000 });
    const handle = handlerOf(client);
    for (const kind of ["semaphore", "latch", "anything"]) {
      const response = await post(handle, "force-release", { name: "shared", kind });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toMatch(
        /kind must be "lock" or "read-write"/,
      );
    }
    expect(await client.lock("shared").isLocked()).toBe(true);
    expect(await client.semaphore("shared").availablePermits()).toBe(0);
    await held.release();
    await permit.release();
  });

  it("force-releases a lock and removes a dead waiter, only with the action header and write access", async () => {
    const client = clientOf();
    const held = await client.lock("stuck").acquire({ leaseMs: 30_000 });
    const stopWaiting = new AbortController();
    const waiter = client
      .lock("stuck")
      .acquire({ waitMs: 3_000, signal: stopWaiting.signal })
      .catch((error: Error) => error);
    const handle = handlerOf(client);
    // Until the waiter's first attempt has queued it (a fixed pause was too short on a busy machine).
    let member: string | undefined;
    for (const deadline = Date.now() + 5_000; member === undefined && Date.now() < deadline; ) {
      await sleep(50);
      const queued = (await snapshot(handle)).body.locks.find((l) => l.name === "stuck");
      member = queued?.waiters[0]?.waiter;
    }
    expect(member).toMatch(/^[0-9a-f]{12}$/);

    expect(
      (await post(handle, "remove-waiter", { name: "stuck", waiter: member }, false)).status,
    ).toBe(403);
    expect((await post(handlerOf(client, "read"), "force-release", { name: "stuck" })).status).toBe(
      403,
    );

    const removed = await post(handle, "remove-waiter", { name: "stuck", waiter: member });
    expect(await removed.json()).toMatchObject({ done: true });
    const afterRemove = (await snapshot(handle)).body.locks.find((l) => l.name === "stuck");
    // The waiter may have polled its way back in; what was removed was its place at that moment.
    expect(afterRemove?.state).toBe("held");

    // The waiter, polling on, would take the lock the force-release frees: it gives up first.
    stopWaiting.abort();
    expect(await waiter).toBeInstanceOf(Error);
    const released = await post(handle, "force-release", { name: "stuck", kind: "lock" });
    expect(await released.json()).toMatchObject({ done: true });
    expect(await client.lock("stuck").isLocked()).toBe(false);
    await held.release().catch(() => undefined);
  });

  it("with the read-only token: SCAN is refused, named locks are read, no action is offered", async () => {
    const prefix = fresh();
    const writer = clientOf(server.token, prefix);
    const held = await writer.lock("seen").acquire({ leaseMs: 10_000 });
    const readOnly = clientOf(server.readOnlyToken, prefix);
    const { body, status } = await snapshot(handlerOf(readOnly, "write", ["seen"]));
    expect(status).toBe(200);
    expect(body.canWrite).toBe(false);
    expect(body.scan.refused).toMatch(/read-only/);
    expect(body.locks.map((l) => l.name)).toEqual(["seen"]);
    expect(body.locks[0]?.state).toBe("held");
    await held.release();
  });

  it("with the read-only token: a name is read as a lock, a semaphore and a latch", async () => {
    const prefix = fresh();
    const writer = clientOf(server.token, prefix);
    const permit = await writer
      .semaphore("jobs", { initialPermits: 2 })
      .acquire({ permits: 2, leaseMs: 10_000 });
    await writer.countDownLatch("jobs").trySetCount(4);
    const readOnly = clientOf(server.readOnlyToken, prefix);
    const { body } = await snapshot(handlerOf(readOnly, "read", ["jobs"]));
    expect(body.scan.refused).toMatch(/read-only/);
    expect(body.cost.read).toBe(3);
    expect(body.locks).toMatchObject([{ name: "jobs", state: "free" }]);
    expect(body.semaphores).toMatchObject([{ name: "jobs", capacity: 2, available: 0 }]);
    expect(body.latches).toMatchObject([{ name: "jobs", count: 4 }]);
    await permit.release();
  });

  it("caps the names a request gives with the rest of its budget: 1 200 names are a 400 that costs no command", async () => {
    const prefix = fresh();
    const writer = clientOf(server.token, prefix);
    const held = await writer.lock("n7").acquire({ leaseMs: 10_000 });
    // The inspector's own commands, as the server counted them.
    const inspectorCommands = () => {
      const byName = server.stats.snapshot().commandsByName;
      return (byName.scan ?? 0) + (byName.eval_ro ?? 0) + (byName.evalsha_ro ?? 0);
    };
    const many = `?${Array.from({ length: 1_200 }, (_, i) => `name=n${i}`).join("&")}`;
    let before = inspectorCommands();
    const refused = await snapshot(handlerOf(writer), many);
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text)).toEqual({
      error:
        "This request gives 1200 names, more than the 50 a refresh may read (maxLocks): give " +
        "fewer, or raise maxLocks.",
    });
    expect(inspectorCommands() - before).toBe(0);

    // Within it, a name's reads count against maxLocks too: with the read-only token (no SCAN,
    // so a name is read as all three kinds) 3 names are 9 reads, of which maxLocks = 5 are sent.
    const readOnly = clientOf(server.readOnlyToken, prefix);
    const budgeted = inspectorHandler({ client: readOnly, access: () => "read", maxLocks: 5 });
    before = inspectorCommands();
    const capped = await snapshot(budgeted, "?name=n7&name=n8&name=n9");
    expect(capped.status).toBe(200);
    expect(capped.body.cost.read).toBe(5);
    // The server saw the 5 reads (the token's refused SCAN never reached Redis).
    expect(inspectorCommands() - before).toBe(5);
    expect(capped.body.notShown).toBe(4);
    expect(capped.body.locks.find((lock) => lock.name === "n7")?.state).toBe("held");
    // Six names are refused, and so is an inspector configured with more than it may read.
    const six = "?name=a&name=b&name=c&name=d&name=e&name=f";
    expect((await snapshot(budgeted, six)).status).toBe(400);
    expect(() =>
      inspectorHandler({
        client: readOnly,
        access: () => "read",
        maxLocks: 2,
        names: ["a", "b", "c"],
      }),
    ).toThrow(LockInputError);
    await held.release();
  });

  it("serves the page without any token at /_edgelock/ of the dev server", async () => {
    const page = await fetch(`${server.url}/_edgelock/`);
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(html).toContain('<th scope="col">Lease left</th>');
    expect(html).not.toContain(server.token);
    const script = await (await fetch(`${server.url}/_edgelock/app.js`)).text();
    expect(script).not.toContain(server.token);
    expect(script).toContain("visibilityState");
    // Another host name (DNS rebinding) is not answered.
    // fetch() may not set Host: node:http may.
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const request = http.request(`${server.url}/_edgelock/api/snapshot`, {
        headers: { host: "evil.example" },
      });
      request.on("response", (response) => {
        response.resume();
        resolve(response.statusCode);
      });
      request.on("error", reject);
      request.end();
    });
    expect(status).toBe(421);
  });

  it("`edgelock inspect --json` and `--table` print a held lock", async () => {
    const prefix = fresh();
    const held = await clientOf(server.token, prefix).lock("cli").acquire({ leaseMs: 10_000 });
    const lines: string[] = [];
    const io = {
      out: (line: string) => lines.push(line),
      err: (line: string) => lines.push(line),
      env: {},
    };
    const common = ["--url", server.url, "--token", server.token, "--prefix", prefix];
    expect(await main(["inspect", ...common, "--json"], io)).toBe(0);
    const json = JSON.parse(lines.join("\n")) as InspectorSnapshot;
    expect(json.locks[0]).toMatchObject({
      name: "cli",
      state: "held",
      fencingToken: held.fencingToken,
    });
    lines.length = 0;
    expect(await main(["inspect", ...common, "--table"], io)).toBe(0);
    expect(lines.join("\n")).toMatch(/^cli\s+lock\s+held\s+[0-9a-f]{12}×1/m);
    expect(lines.join("\n")).not.toContain(held.owner);
    // Issue 44: the reads' cost is commands, not a count of locks (a fresh server's first refresh
    // sends each read script twice: it said "2 lock read(s)" for one lock).
    expect(lines.join("\n")).toMatch(/SCAN, \d+ to read the locks, semaphores and latches/);
    expect(lines.join("\n")).not.toContain("lock read(s)");
    await held.release();
  });
});

// guard: SCAN's page sizes are a real Redis's; kinds has redis-server wherever it is found (CI=true requires it).
describe.runIf(kinds.includes("redis-server"))("SCAN budget (redis-server)", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer({ backend: "redis-server" });
  });
  afterAll(() => server.close());

  it("stops after maxScanCalls and hands back the cursor to go on from", async () => {
    const prefix = fresh();
    const redis = new Redis({ url: server.url, token: server.token });
    await redis.mset(
      Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`${prefix}:{n${i}}:fence`, "1"])),
    );
    const client = new LockClient({ redis, prefix });
    const handle = inspectorHandler({
      client,
      access: () => "read",
      scanCount: 10,
      maxScanCalls: 2,
    });
    const first = (await (
      await handle(new Request("http://127.0.0.1/_edgelock/api/snapshot"))
    ).json()) as InspectorSnapshot;
    expect(first.cost.scan).toBe(2);
    expect(first.scan.complete).toBe(false);
    expect(first.scan.cursor).not.toBe("0");
    expect(first.idleCount).toBeGreaterThan(0);
    expect(first.idleCount).toBeLessThan(500);
  });
});

describe("inspector on a plain Redis behind a REST proxy", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer({ backend: "embedded", profile: "redis" });
  });
  afterAll(() => server.close());

  it("reads the locks: its read script's flag is refused once and then left off", async () => {
    const prefix = fresh();
    // The holder never sends the flag: the inspector's read is the first flagged script here.
    const client = new LockClient({
      redis: new Redis({ url: server.url, token: server.token }),
      prefix,
      scriptKeyLocking: false,
    });
    const held = await client.lock("orders:1").acquire({ leaseMs: 20_000 });
    const viewer = new LockClient({
      redis: new Redis({ url: server.url, token: server.token }),
      prefix,
    });
    const handle = inspectorHandler({ client: viewer, access: () => "read" });
    const response = await handle(new Request("http://127.0.0.1/x/_edgelock/api/snapshot"));
    expect(response.status).toBe(200);
    const body = (await response.json()) as InspectorSnapshot;
    const lock = body.locks.find((entry) => entry.name === "orders:1");
    expect(lock?.holders).toHaveLength(1);
    await held.release();
  });
});

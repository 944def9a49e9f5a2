/**
 * Issue 30 item 2: the allow-key-locking flag is sent until a server refuses it. Upstash (and the
 * local `upstash` profile) runs flagged scripts under per-key locking; a plain Redis behind a
 * REST proxy (the `redis` profile) refuses the flag: the refused script, which never ran, is sent
 * again without it, and that server hears no more of the flag from any client in the process.
 */
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { LockBackendError, LockClient, type LockClientOptions } from "../../../src/index.js";
import { SCRIPTS } from "../../../src/scripts.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("the key-locking flag's detection on %s", (backend) => {
  const upstash = useTestBed(backend, { profile: "upstash" });
  const redis = useTestBed(backend, { profile: "redis" });
  // A server no client of this process has sent a script to yet.
  const unknown = useTestBed(backend, { profile: "redis" });
  // Another such server, for the first scripts of two clients at once.
  const shared = useTestBed(backend, { profile: "redis" });

  /** A LockClient on `bed` with the option left at its default. */
  const defaultClient = (bed: typeof redis) =>
    new LockClient({
      redis: new Redis({ url: bed.server.url, token: bed.server.token }),
      prefix: freshPrefix(),
    });

  it("a plain Redis refuses the flag once; the script is sent again without it, and no more", async () => {
    const first = defaultClient(redis);
    let before = redis.lockCommands();
    const held = await first.lock("job").acquire({ leaseMs: 5_000 });
    // The refused flagged script, then the same script without the flag.
    expect(redis.lockCommands() - before).toBe(2);
    expect(held.fencingToken).toBe(1);
    before = redis.lockCommands();
    await held.release();
    expect(redis.lockCommands() - before).toBe(1);
    // Another client of the same server: the process already knows it refuses the flag.
    before = redis.lockCommands();
    await (await defaultClient(redis).lock("other").acquire({ leaseMs: 5_000 })).release();
    expect(redis.lockCommands() - before).toBe(2);
    expect(await first.lock("job").isLocked()).toBe(false);
  });

  it("two clients of one server share its answer: 8 first acquisitions at once cost one refused request", async () => {
    const clients = [defaultClient(shared), defaultClient(shared)];
    // The script cached, as on a server that ran it before: a client's calls made while its
    // first EVAL is unanswered go as EVALSHA (a NOSCRIPT would count one command more).
    await shared.redis().scriptLoad(SCRIPTS.get("lock.acquire")!.source);
    const before = shared.server.stats.snapshot();
    const holds = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        (clients[i % 2] as LockClient).lock(`job:${i}`).acquire({ leaseMs: 5_000 }),
      ),
    );
    const after = shared.server.stats.snapshot();
    const commands = (snapshot: typeof before) =>
      (snapshot.commandsByName.eval ?? 0) + (snapshot.commandsByName.evalsha ?? 0);
    // Each acquisition's script ran once, without the flag; the one command more is the refusal.
    expect(after.scripts.globalLock - before.scripts.globalLock).toBe(8);
    expect(commands(after) - commands(before)).toBe(9);
    expect(holds.map((held) => held.fencingToken)).toEqual(Array(8).fill(1));
    await Promise.all(holds.map((held) => held.release()));
  });

  it("push mode parks from a default client's first acquisition, before the flag is settled", async () => {
    // Until a server answered a flagged script, the flag is a guess: parking is not ruled out by
    // it (a plain Redis refuses the flag before the park; Upstash's pops answer at once).
    const prefix = freshPrefix();
    const client = (options: Partial<LockClientOptions>) =>
      new LockClient({
        redis: new Redis({ url: unknown.server.url, token: unknown.server.token }),
        prefix,
        ...options,
      });
    // The holder never sends the flag, so the server has refused none when the waiter starts.
    const holder = client({ scriptKeyLocking: false });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const waiting = client({ wait: { mode: "push" } })
      .lock("job")
      .acquire({ leaseMs: 10_000 });
    await until(async () => (await unknown.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    await sleepMs(50); // its blocking pop follows the registration's reply
    const before = unknown.requests();
    await held.release();
    const handle = await waiting;
    // Handed over by the release: the waiter sent nothing more.
    expect(unknown.requests() - before).toBe(1);
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    await handle.release();
  });

  it("asked for by name, the flag's refusal is an error, and nothing is held", async () => {
    const client = redis.client({ scriptKeyLocking: true });
    const error = await client
      .lock("job")
      .acquire({ leaseMs: 5_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBackendError);
    expect(String((error as Error).message)).toMatch(/shebang/);
    expect(await redis.client().lock("job").isLocked()).toBe(false);
  });

  it("Upstash takes the flag: a default client's scripts run under per-key locking", async () => {
    const before = upstash.server.stats.snapshot().scripts;
    const held = await defaultClient(upstash).lock("job").acquire({ leaseMs: 5_000 });
    await held.release();
    const after = upstash.server.stats.snapshot().scripts;
    expect(after.keyLocking - before.keyLocking).toBe(2);
    expect(after.globalLock - before.globalLock).toBe(0);
  });
});

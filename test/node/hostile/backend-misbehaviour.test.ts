/**
 * HTTP Redis that misbehaves: a wrong token, an unreachable URL, answers mangled after the command
 * ran (not JSON, HTTP 500, truncated JSON, an empty body, a reset connection, a result no script
 * returns), and script results of the wrong shape. Every call must end in LockBackendError with the
 * cause attached — never a silent "acquired" — and no hold may outlive its lease.
 */
import { Redis } from "@upstash/redis";
import { afterEach, describe, expect, it } from "vitest";
import {
  LockBackendError,
  LockClient,
  type LockEvent,
  type LockHandle,
  LockLostError,
  LockNotHeldError,
  type RedisLike,
} from "../../../src/index.js";
import { textOf } from "../../chaos/operations.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, until, useTestBed } from "../exclusive/testbed.js";
import { fakeRedis, HEALTHY, type ScriptName } from "./fake-redis.js";
import {
  type Answer,
  closedPort,
  type HttpDouble,
  startGarbageServer,
  startManglingProxy,
} from "./http-doubles.js";

/** @upstash/redis with a short retry schedule, so that failing tests stay fast. */
function quickRedis(url: string, token: string): Redis {
  return new Redis({ url, token, enableTelemetry: false, retry: { retries: 1, backoff: () => 5 } });
}

/**
 * Asserts `error` is the LockBackendError the caller must get, with its cause (the failure
 * underneath; for a reply of the wrong shape, the reply itself, shown in the message).
 */
function expectBackendError(
  error: unknown,
  secrets: readonly string[],
  reply?: unknown,
): LockBackendError {
  expect(error).toBeInstanceOf(LockBackendError);
  const failure = error as LockBackendError;
  expect(failure.name).toBe("LockBackendError");
  if (reply === undefined) expect(failure.cause).toBeDefined();
  else expect(failure.message).toContain(JSON.stringify(reply));
  for (const secret of secrets) expect(textOf(failure)).not.toContain(secret);
  return failure;
}

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => error,
  );

/** Ways an answer can go wrong after the command ran. */
const MANGLED: Record<string, (real: { status: number; body: string }) => Answer> = {
  "a body that is not JSON": () => ({ status: 200, body: "<html>502 Bad Gateway</html>" }),
  "HTTP 500 with a JSON error": () => ({ status: 500, body: '{"error":"ERR internal error"}' }),
  "HTTP 500 with an HTML page": () => ({ status: 500, body: "<h1>Internal Server Error</h1>" }),
  "truncated JSON": (real) => ({
    status: real.status,
    body: real.body.slice(0, Math.max(1, Math.floor(real.body.length / 2))),
  }),
  "an empty body": () => ({ status: 200, body: "" }),
  "a reset connection": () => "reset",
  "a result no lock script returns": () => ({
    status: 200,
    body: JSON.stringify({ result: Buffer.from("OK").toString("base64") }),
  }),
};

const doubles: HttpDouble[] = [];
afterEach(async () => {
  await Promise.all(doubles.splice(0).map((double) => double.close()));
});

describe.each(backendKindsUnderTest())("a misbehaving HTTP Redis on %s", (kind) => {
  const bed = useTestBed(kind);

  it("a wrong token: LockBackendError after one request, no token in it, nothing stored", async () => {
    const prefix = freshPrefix();
    const wrongToken = `wrong${bed.server.token.slice(5)}x`;
    const client = new LockClient({ redis: quickRedis(bed.server.url, wrongToken), prefix });
    const before = bed.requests();
    const error = await rejection(client.lock("guarded").tryAcquire({ leaseMs: 1_000 }));
    const failure = expectBackendError(error, [bed.server.token, wrongToken]);
    expect(failure.message).toMatch(/unauthori[sz]ed|auth/i);
    // An authentication failure is a refusal: nothing is re-sent.
    expect(bed.requests() - before).toBe(1);
    expect(await bed.redis().keys(`${prefix}*`)).toEqual([]);
  });

  it("an unreachable URL (a closed port): LockBackendError with the network error as cause", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const client = new LockClient({ redis: quickRedis(url, bed.server.token), prefix: "p" });
    const error = await rejection(client.lock("guarded").acquire({ leaseMs: 1_000 }));
    expectBackendError(error, [bed.server.token]);
    const release = await rejection(
      client.lock("guarded").release({ owner: LockClient.newOwner() }),
    );
    expectBackendError(release, [bed.server.token]);
  });

  it("a server that answers garbage without running anything: never a handle", async () => {
    const garbage = await startGarbageServer({ status: 200, body: '{"result":' });
    doubles.push(garbage);
    const client = new LockClient({ redis: quickRedis(garbage.url, bed.server.token) });
    expectBackendError(await rejection(client.lock("g").tryAcquire()), [bed.server.token]);
    expectBackendError(await rejection(client.lock("g").isLocked()), [bed.server.token]);
  });
});

// The mangling happens in HTTP, above the store: one backend is enough.
describe("answers mangled after the command ran", () => {
  const bed = useTestBed(backendKindsUnderTest()[0]!);

  describe.each(Object.keys(MANGLED))("%s", (mangling) => {
    async function setup(breakAnswers: () => boolean) {
      const mangle = MANGLED[mangling]!;
      const proxy = await startManglingProxy(bed.server.url, (real) =>
        breakAnswers() ? mangle(real) : null,
      );
      doubles.push(proxy);
      const prefix = freshPrefix();
      const client = new LockClient({
        redis: quickRedis(proxy.url, bed.server.token),
        prefix,
        watchdogTimeoutMs: 200,
      });
      return { client, direct: bed.client({ prefix }) };
    }

    it("acquire: LockBackendError, never a handle; a hold it made expires with its lease", async () => {
      const { client, direct } = await setup(() => true);
      for (const options of [{ leaseMs: 200 }, {}]) {
        const error = await rejection(client.lock("mangled").tryAcquire(options));
        expectBackendError(error, [bed.server.token]);
        // The script may have run; nobody renews what nobody knows of: it frees itself.
        await until(async () => !(await direct.lock("mangled").isLocked()), 3_000);
      }
    });

    it("extend and release of a held lock: LockBackendError, and the hold never leaks", async () => {
      let broken = false;
      const { client, direct } = await setup(() => broken);
      const held = await client.lock("held").acquire({ leaseMs: 5_000 });
      broken = true;
      expectBackendError(await rejection(held.extend(5_000)), [bed.server.token]);
      expect(held.signal.aborted).toBe(false);
      expectBackendError(await rejection(held.release()), [bed.server.token]);
      expect(held.released).toBe(false);
      broken = false;
      // The lost release may have run: a second one finds nothing, or releases; never a leak.
      const retried = await rejection(held.release());
      // guard: both outcomes are right (the lost release ran or not); the lock being free after
      // either is asserted below.
      if (retried instanceof Error) expect(retried).toBeInstanceOf(LockNotHeldError);
      expect(await direct.lock("held").isLocked()).toBe(false);
    });

    it("watchdog renewals: renewalFailed, then lockLost and an aborted signal; then it frees", async () => {
      let broken = false;
      const { client, direct } = await setup(() => broken);
      const events: LockEvent[] = [];
      client.on("renewalFailed", (event) => events.push(event));
      client.on("lockLost", (event) => events.push(event));
      const held = await client.lock("watched").acquire();
      broken = true;
      await until(() => held.signal.aborted, 5_000);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(events.map((event) => event.type)).toContain("renewalFailed");
      expect(events.at(-1)?.type).toBe("lockLost");
      for (const event of events) expect(textOf(event)).not.toContain(bed.server.token);
      await until(async () => !(await direct.lock("watched").isLocked()), 3_000);
    });
  });
});

describe("script results of the wrong shape", () => {
  /** A client over a fake Redis answering `reply` to `script` (healthy otherwise). */
  function clientAnswering(script: ScriptName, reply: () => unknown) {
    let wrong = false;
    const redis: RedisLike = fakeRedis((name) =>
      wrong && name === script ? reply() : HEALTHY[name],
    );
    return {
      client: new LockClient({ redis }),
      goWrong: () => {
        wrong = true;
      },
    };
  }

  const WRONG: readonly unknown[] = ["OK", null, [], ["x"], [1.5], {}, true, [1, "abc"], "1"];

  it.each(WRONG.map((reply) => [JSON.stringify(reply), reply]))(
    "%s → LockBackendError from every operation, and no handle",
    async (_shown, reply) => {
      for (const script of ["acquire", "release", "extend", "inspect", "forceRelease"] as const) {
        const { client, goWrong } = clientAnswering(script, () => reply);
        const lock = client.lock("shaped");
        const held: LockHandle = await lock.acquire({ leaseMs: 5_000 });
        goWrong();
        const outcomes = {
          acquire: () => lock.tryAcquire({ leaseMs: 1_000 }),
          release: () => held.release(),
          extend: () => held.extend(1_000),
          inspect: () => lock.holdCount(),
          forceRelease: () => lock.forceRelease(),
        };
        const error = await rejection(outcomes[script]());
        expect(expectBackendError(error, [], reply).message).toMatch(/Unexpected reply/);
        // guard: only a release changes the handle's released flag.
        if (script === "release") expect(held.released).toBe(false);
      }
    },
  );

  // Replies are checked against each script's documented shapes: a truncated "acquired" reply is
  // not a hold, and an unknown status is neither "busy" nor "not held".
  it.each([
    ["acquire", [1]],
    ["acquire", [1, 5]],
    ["acquire", [7]],
    ["release", [2]],
  ] as const)("%s answering %j → LockBackendError", async (script, reply) => {
    const { client, goWrong } = clientAnswering(script, () => reply);
    const lock = client.lock("shaped");
    const held = await lock.acquire({ leaseMs: 5_000 });
    goWrong();
    const error = await rejection(script === "acquire" ? lock.tryAcquire() : held.release());
    expectBackendError(error, [], reply);
  });
});

describe.each(backendKindsUnderTest())("retrying after a lost answer on %s", (kind) => {
  const bed = useTestBed(kind);

  // handle.release() keeps the hold after an ambiguous LockBackendError, and the retry re-sends the
  // same operation id: when the lost release had run, the retry replays it instead of releasing
  // the outer hold, whose handle still believes it holds.
  it("a release retried after its answer was lost releases one hold, not two", async () => {
    const redis = bed.redis();
    let loseAnswers = 0;
    const lossy: RedisLike = {
      async eval(script, keys, args) {
        const reply = await redis.eval(script, keys, args);
        if (loseAnswers > 0 && loseAnswers--) throw new TypeError("fetch failed");
        return reply;
      },
      async evalsha(sha, keys, args) {
        const reply = await redis.evalsha(sha, keys, args);
        if (loseAnswers > 0 && loseAnswers--) throw new TypeError("fetch failed");
        return reply;
      },
    };
    const client = new LockClient({ redis: lossy, prefix: freshPrefix(), retries: 2 });
    const lock = client.lock("reentered");
    const outer = await lock.acquire({ leaseMs: 10_000 });
    const inner = await lock.acquire({ leaseMs: 10_000, owner: outer.owner });
    loseAnswers = 3; // the first send and both re-sends run, and every answer is lost
    await expect(inner.release()).rejects.toBeInstanceOf(LockBackendError);
    await inner.release();
    expect(await lock.holdCount(outer.owner)).toBe(1);
  });
});

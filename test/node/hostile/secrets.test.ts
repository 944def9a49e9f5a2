/**
 * Issue 14 item 6: no secret leaves in an error. For every failure class — a network error, HTTP
 * 503, a refusal (WRONGTYPE, also after a NOSCRIPT fallback), a wrong REST token, a reply of an
 * unexpected shape, and a client error that echoes the command with the token in its cause
 * chain — the error of a plain lock, a fair lock and a multi-lock holds no REST token, owner
 * token or Lua text in its message, cause chain, stack, JSON form or `util.inspect` output, and
 * still says what failed. (security.test.ts checks the REST token across every operation and
 * the watchdog's events; this file checks every failure class for all three secrets.)
 */
import { inspect } from "node:util";
import { Redis } from "@upstash/redis";
import { afterEach, describe, expect, it } from "vitest";
import { fairLockKeys, lockKeys } from "../../../src/hold/script.js";
import {
  LockBackendError,
  LockClient,
  type LockEvent,
  type RedisLike,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, until, useTestBed } from "../exclusive/testbed.js";
import { closedPort } from "./http-doubles.js";

const OWNER = LockClient.newOwner();
/** Fragments of every lock script's text (its generated header and its calls). */
const LUA = ["redis.call", "KEYS[1]", "ARGV[1]", "local "];

/** Every text a log line could show of `error`: message, stack, JSON, inspect, each cause. */
function exposures(error: unknown, depth = 0): string[] {
  if (!(error instanceof Error) || depth > 8) return [String(error)];
  return [
    error.message,
    error.stack ?? "",
    JSON.stringify(error) ?? "",
    inspect(error, { depth: 10 }),
    ...exposures(error.cause, depth + 1),
  ];
}

function expectNoSecrets(error: unknown, secrets: readonly string[]): void {
  for (const text of exposures(error)) {
    for (const secret of [...secrets, OWNER, ...LUA]) expect(text).not.toContain(secret);
  }
}

const quick = (url: string, token: string) =>
  new Redis({ url, token, enableTelemetry: false, retry: { retries: 0 } });

type Kind = "lock" | "fairLock" | "multiLock";
const KINDS: Kind[] = ["lock", "fairLock", "multiLock"];

function acquireOnce(client: LockClient, kind: Kind): Promise<unknown> {
  const options = { waitMs: 0, leaseMs: 1_000, owner: OWNER };
  const outcome =
    kind === "lock"
      ? client.lock("guarded").acquire(options)
      : kind === "fairLock"
        ? client.fairLock("guarded").acquire(options)
        : client.multiLock([client.lock("guarded"), client.lock("other")]).acquire(options);
  return outcome.then(
    () => new Error("acquired"),
    (error: unknown) => error,
  );
}

/** The key the kind's acquire script reads as a hash first. */
function lockKeyOf(prefix: string, kind: Kind): string {
  return kind === "fairLock"
    ? fairLockKeys(prefix, "guarded").lock
    : lockKeys(prefix, "guarded").lock;
}

describe.each(backendKindsUnderTest())("no secret in any error on %s", (backend) => {
  const bed = useTestBed(backend);
  afterEach(() => bed.server.faults.disable());

  /** A failure class: builds a client that fails that way, and what its message must still say. */
  const CLASSES: Record<string, { make(kind: Kind): Promise<LockClient>; says: RegExp }> = {
    "a network error (closed port)": {
      make: async () =>
        new LockClient({
          redis: quick(`http://127.0.0.1:${await closedPort()}`, bed.server.token),
          prefix: freshPrefix(),
        }),
      says: /fetch failed|ECONNREFUSED|connect/i,
    },
    "HTTP 503": {
      make: async () => {
        bed.server.faults.configure({ failBeforeExecute: 1, commands: ["eval", "evalsha"] });
        return new LockClient({
          redis: quick(bed.server.url, bed.server.token),
          prefix: freshPrefix(),
        });
      },
      says: /injected fault/,
    },
    "a refusal (WRONGTYPE)": {
      make: async (kind) => {
        const prefix = freshPrefix();
        await bed.redis().set(lockKeyOf(prefix, kind), "not a hash");
        return new LockClient({ redis: quick(bed.server.url, bed.server.token), prefix });
      },
      says: /WRONGTYPE/,
    },
    "a refusal after a NOSCRIPT fallback": {
      make: async (kind) => {
        const prefix = freshPrefix();
        const redis = quick(bed.server.url, bed.server.token);
        const client = new LockClient({ redis, prefix });
        // Cache the scripts on this client, forget them on the server, then break the key.
        await (await client.lock("warm").acquire({ leaseMs: 1_000 })).release();
        await (await client.fairLock("warm").acquire({ leaseMs: 1_000 })).release();
        await (
          await client
            .multiLock([client.lock("warm"), client.lock("warm2")])
            .acquire({ leaseMs: 1_000 })
        ).release();
        await bed.redis().scriptFlush();
        await bed.redis().set(lockKeyOf(prefix, kind), "not a hash");
        return client;
      },
      says: /WRONGTYPE/,
    },
    "a wrong REST token": {
      make: async () =>
        new LockClient({
          redis: quick(bed.server.url, `wrong${"0".repeat(40)}`),
          prefix: freshPrefix(),
        }),
      says: /unauthori[sz]ed|auth/i,
    },
    "a reply of an unexpected shape (the request echoed)": {
      make: async () => {
        const echo: RedisLike = {
          eval: async (script, keys, args) => [script, ...keys, ...args],
          evalsha: async (sha, keys, args) => [sha, ...keys, ...args],
        };
        return new LockClient({ redis: echo, prefix: freshPrefix() });
      },
      says: /Unexpected reply/,
    },
    "a client error echoing the command, the token in its cause": {
      make: async () => {
        const fail = async (body: string, keys: string[], args: string[]) => {
          const underneath = new Error(`connect failed: Bearer ${bed.server.token}`);
          throw new Error(
            `ERR boom ${args.join(" ")}, command was: ${JSON.stringify([body, keys, args])}`,
            { cause: underneath },
          );
        };
        return new LockClient({
          redis: { eval: fail, evalsha: fail },
          prefix: freshPrefix(),
          retries: 0,
        });
      },
      says: /ERR boom/,
    },
  };

  for (const [name, failure] of Object.entries(CLASSES)) {
    it.each(KINDS)(`${name}: %s`, async (kind) => {
      const client = await failure.make(kind);
      const error = await acquireOnce(client, kind);
      bed.server.faults.disable();
      expect(error).toBeInstanceOf(LockBackendError);
      expect((error as Error).message).toMatch(failure.says);
      expectNoSecrets(error, [bed.server.token, `wrong${"0".repeat(40)}`]);
    });
  }

  it("renewalFailed and lockLost carry sanitized errors", async () => {
    const client = new LockClient({
      redis: quick(bed.server.url, bed.server.token),
      prefix: freshPrefix(),
      watchdogTimeoutMs: 300,
    });
    const events: LockEvent[] = [];
    client.on("renewalFailed", (event) => events.push(event));
    client.on("lockLost", (event) => events.push(event));
    const held = await client.lock("watched").acquire({ owner: OWNER });
    bed.server.faults.configure({ failBeforeExecute: 1, commands: ["eval", "evalsha"] });
    await until(() => held.signal.aborted, 5_000);
    expect(events.map((event) => event.type)).toContain("renewalFailed");
    for (const event of events) {
      const carried =
        event.type === "renewalFailed"
          ? event.error
          : event.type === "lockLost"
            ? event.cause
            : undefined;
      expectNoSecrets(carried, [bed.server.token]);
    }
    expectNoSecrets(held.signal.reason, [bed.server.token]);
  });
});

/**
 * One local REST server per test file and backend kind, the real @upstash/redis client on its
 * defaults, and LockClients with a fresh key prefix per test so that tests never share keys.
 */
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll } from "vitest";
import { type DevServer, type DevServerOptions, startDevServer } from "../../../dev/index.js";
import { LockClient, type LockClientOptions, type RedisLike } from "../../../src/index.js";
import { recordScriptCensus } from "../../support/script-census.js";

export type BackendKind = "redis-server" | "embedded";

export interface TestBed {
  readonly server: DevServer;
  /** A new @upstash/redis client on its defaults (auto-pipelining, base64). */
  redis(): Redis;
  /** A LockClient with a fresh prefix (unless given) on a new Redis client. */
  client(options?: Partial<LockClientOptions>): LockClient;
  /** HTTP requests the server received so far. */
  requests(): number;
  /**
   * Scripts and blocking pops the server ran so far: every request a lock makes (a blocking pop
   * counts once it returns).
   */
  lockCommands(): number;
}

let prefixCounter = 0;
export function freshPrefix(): string {
  prefixCounter += 1;
  return `t${Date.now().toString(36)}${prefixCounter}`;
}

export function useTestBed(kind: BackendKind, options: DevServerOptions = {}): TestBed {
  let server: DevServer | undefined;
  let source = "a node test";
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads fixtures from the first argument
  beforeAll(async ({}, suite) => {
    source = suite.file.filepath;
    server = await startDevServer({ ...options, backend: kind });
  });
  afterAll(async () => {
    if (server) recordScriptCensus(source, server, server.stats.snapshot().scripts);
    await server?.close();
  });
  const bed: TestBed = {
    get server() {
      if (!server) throw new Error("the test server is not started yet");
      return server;
    },
    redis: () => new Redis({ url: bed.server.url, token: bed.server.token }),
    // On the redis profile the flag is refused: say so up front, so that no test's request count
    // includes the one refused script (the refusal itself is tested in the key-locking tests).
    client: (overrides = {}) =>
      new LockClient({
        redis: bed.redis(),
        prefix: freshPrefix(),
        ...(bed.server.profile === "redis" ? { scriptKeyLocking: false } : {}),
        ...overrides,
      }),
    requests: () => bed.server.stats.snapshot().requests,
    lockCommands: () => {
      const { commandsByName } = bed.server.stats.snapshot();
      return (
        (commandsByName.eval ?? 0) + (commandsByName.evalsha ?? 0) + (commandsByName.blpop ?? 0)
      );
    },
  };
  return bed;
}

export async function until(
  predicate: () => Promise<boolean> | boolean,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A Redis client whose scripts' answers come back `delayMs` late (as set when each was sent). */
export function slowScriptAnswers(redis: RedisLike & { exec: NonNullable<RedisLike["exec"]> }) {
  const state = { delayMs: 0 };
  const late = async <T>(sent: Promise<T>): Promise<T> => {
    const delayMs = state.delayMs;
    const answer = await sent;
    if (delayMs > 0) await sleepMs(delayMs);
    return answer;
  };
  const slow: RedisLike = {
    eval: (script, keys, args) => late(redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) => late(redis.evalsha(sha, keys, args)),
    exec: (command) => redis.exec(command),
  };
  return { redis: slow, state };
}

/**
 * The wake lists of the lock `base` (`<prefix>:{<name>}`) that still hold a `none`: a park sent
 * beside an attempt that then took the lock leaves none once its pop returned.
 */
export async function wakeListsWithNone(bed: TestBed, base: string): Promise<string[]> {
  const redis = bed.redis();
  const lists = await redis.keys(`${base}:wake:*`);
  const withNone: string[] = [];
  for (const list of lists) {
    if ((await redis.lrange(list, 0, -1)).includes("none")) withNone.push(list);
  }
  return withNone;
}

/** A Redis client whose process "dies" once it has parked: every later request hangs. */
export function dyingAfterPark(
  redis: RedisLike & { exec: NonNullable<RedisLike["exec"]> },
): RedisLike {
  let dead = false;
  const hang = () => new Promise<never>(() => {});
  return {
    eval: (script, keys, args) => (dead ? hang() : redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) => (dead ? hang() : redis.evalsha(sha, keys, args)),
    exec: () => {
      dead = true;
      return hang();
    },
  };
}

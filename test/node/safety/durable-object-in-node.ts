/**
 * A LockWatchdog Durable Object in this process, for the safety tests: SQLite storage
 * (node:sqlite), its alarm a timer as the runtime would deliver it (or none: the test calls
 * `alarm()` itself), and a namespace whose stubs reach it.
 */
import { DatabaseSync } from "node:sqlite";
import { afterEach } from "vitest";
import { LockWatchdog } from "../../../src/durable-object/lock-watchdog.js";
import type { WatchdogNamespace } from "../../../src/durable-object/platform.js";
import type { WatchdogEnv } from "../../../src/durable-object/redis.js";
import type { RedisLike } from "../../../src/transport/redis-like.js";
import { SqliteSql } from "../../chaos/durable-object.js";

/** What a test started and must stop: alarms, servers. */
const cleanups: (() => void | Promise<void>)[] = [];

/** Runs `cleanup` after the current test. */
export function afterThisTest(cleanup: () => void | Promise<void>): void {
  cleanups.push(cleanup);
}

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/**
 * One LockWatchdog on `env` (its default Redis client, built from the env as in a Worker, seen
 * through `observeRedis` when given). `alarms: false`: the alarm is never delivered; the test
 * calls `object.alarm()` by hand. `deletionAnswered`: each `deleteAlarm()` takes effect at once,
 * in call order as the runtime applies storage operations, and answers once this settles (a slow
 * storage, for the object's other events to run in between).
 */
export function objectInNode(
  env: WatchdogEnv,
  {
    alarms = true,
    observeRedis,
    deletionAnswered,
  }: {
    alarms?: boolean;
    observeRedis?: (redis: RedisLike) => RedisLike;
    deletionAnswered?: () => Promise<void>;
  } = {},
) {
  let alarm: { at: number; timer: ReturnType<typeof setTimeout> } | null = null;
  const disarm = () => {
    if (alarm) clearTimeout(alarm.timer);
    alarm = null;
  };
  afterThisTest(disarm);
  const sql = new SqliteSql();
  class ObservedWatchdog extends LockWatchdog {
    protected override createRedis(env: WatchdogEnv): RedisLike | undefined {
      const redis = super.createRedis(env);
      return redis && observeRedis ? observeRedis(redis) : redis;
    }
  }
  const object: LockWatchdog = new ObservedWatchdog(
    {
      storage: {
        sql,
        getAlarm: async () => alarm?.at ?? null,
        async setAlarm(at) {
          disarm();
          if (!alarms) return;
          const timer = setTimeout(
            () => {
              alarm = null;
              // The object re-arms itself in `finally`; a throw is its business, not the test's.
              void object.alarm({ retryCount: 0, isRetry: false }).catch(() => {});
            },
            Math.max(0, at - Date.now()),
          );
          alarm = { at, timer };
        },
        deleteAlarm: async () => {
          disarm();
          await deletionAnswered?.();
        },
        async deleteAll() {
          sql.database.close();
          sql.database = new DatabaseSync(":memory:");
        },
      },
    },
    env,
  );
  const namespace: WatchdogNamespace = {
    idFromName: (name) => name,
    get: () => ({ fetch: (input, init) => object.fetch(new Request(input, init)) }),
  };
  return { object, namespace };
}

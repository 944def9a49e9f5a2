/**
 * A RedisLike that records every call and answers with a reply chosen by the test: for fuzzing
 * the client side without a server, and for feeding it replies no real script would give.
 */
import type { RedisLike } from "../../../src/index.js";
import { SCRIPTS } from "../../../src/scripts.js";
import { sha1Hex } from "../../../src/transport/sha1.js";

export type ScriptName = "acquire" | "release" | "extend" | "inspect" | "forceRelease";

/** The plain lock's scripts, found by name in the catalogue. */
const BY_SOURCE = new Map<string, ScriptName>(
  (["acquire", "release", "extend", "inspect", "forceRelease"] as const).flatMap((name) => {
    const script = SCRIPTS.get(`lock.${name}`);
    // As sent with or without Upstash's key-locking flag (this client has no URL: with it).
    return script
      ? [[script.source, name] as const, [script.keyLocking.source, name] as const]
      : [];
  }),
);

/** Replies a healthy server gives when nobody else holds the lock. */
export const HEALTHY: Readonly<Record<ScriptName, unknown>> = {
  acquire: [1, 1, 1, 30_000],
  release: [1, 0],
  extend: [1],
  inspect: [0, -2, 0],
  forceRelease: [0],
};

export interface FakeRedis extends RedisLike {
  /** Calls received (eval and evalsha). */
  readonly calls: number;
  /** Calls per script. */
  readonly byScript: ReadonlyMap<ScriptName, number>;
}

/**
 * @param answer the reply to a call of `script` (default: HEALTHY). Throwing rejects the call.
 */
export function fakeRedis(
  answer: (script: ScriptName) => unknown = (script) => HEALTHY[script],
): FakeRedis {
  let calls = 0;
  const byScript = new Map<ScriptName, number>();
  const shaToName = new Map<string, ScriptName>();
  const reply = (name: ScriptName) => {
    calls += 1;
    byScript.set(name, (byScript.get(name) ?? 0) + 1);
    return Promise.resolve().then(() => answer(name));
  };
  return {
    get calls() {
      return calls;
    },
    byScript,
    async eval(script) {
      const name = BY_SOURCE.get(script);
      if (name === undefined) throw new Error("ERR fake redis: unknown script");
      shaToName.set(await sha1Hex(script), name);
      return reply(name);
    },
    async evalsha(sha) {
      const name = shaToName.get(sha);
      if (name === undefined) throw new Error("NOSCRIPT No matching script");
      return reply(name);
    },
  };
}

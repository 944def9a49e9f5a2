/** Shared pieces of the middleware tests: an ExecutionContext that can be drained, and a gate. */
import type { ExecutionContext } from "hono";
import type { RedisLike } from "../../../src/index.js";

/** An ExecutionContext like Workers' whose waitUntil work the test can await. */
export function executionContext(): ExecutionContext & { drain(): Promise<void> } {
  const pending: Promise<unknown>[] = [];
  return {
    waitUntil: (promise) => {
      pending.push(promise);
    },
    passThroughOnException: () => {},
    props: {},
    drain: async () => {
      while (pending.length > 0) await Promise.allSettled(pending.splice(0));
    },
  };
}

/** A promise the test resolves by hand: holds a handler inside its critical section. */
export function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Counts how many run at once and the most that ever did. */
export function overlapMeter(): { enter(): void; leave(): void; readonly max: number } {
  let inside = 0;
  let max = 0;
  return {
    enter: () => {
      inside += 1;
      max = Math.max(max, inside);
    },
    leave: () => {
      inside -= 1;
    },
    get max() {
      return max;
    },
  };
}

/**
 * Wraps a RedisLike so that calls of the matching scripts fail (before reaching the server) while
 * `failing(args)` says so: a Redis that answers everything but, say, the response store.
 */
export function failingScripts(
  redis: RedisLike,
  matches: (source: string | undefined, sha: string | undefined) => boolean,
  failing: (args: string[]) => boolean,
): RedisLike & { failures: number } {
  const wrapper = {
    failures: 0,
    eval(script: string, keys: string[], args: string[]) {
      if (matches(script, undefined) && failing(args)) return fail();
      return redis.eval(script, keys, args);
    },
    evalsha(sha: string, keys: string[], args: string[]) {
      if (matches(undefined, sha) && failing(args)) return fail();
      return redis.evalsha(sha, keys, args);
    },
  };
  function fail(): Promise<never> {
    wrapper.failures += 1;
    return Promise.reject(new Error("fetch failed: injected by the test"));
  }
  return wrapper;
}

/** edgelock's reentrant lock over @upstash/redis (REST), in lease mode. */
import { Redis } from "@upstash/redis";
import { LockClient, type LockHandle } from "../../src/index.js";
import { DEFAULT_WAIT_POLICY, type WaitOptions } from "../../src/wait/policy.js";
import { blindRedis } from "./blind-redis.js";
import type { Contender, HoldMode, Peer, PeerEnv } from "./peer.js";

/** The push hand-off at its defaults, as `edgelock push` (and `edgelock fair push`) runs it. */
export const PUSH_WAIT: WaitOptions = { mode: "push" };

/** Push over a subscription, the wake channel of the `upstash` profile (named: "auto" polls there). */
export const PUSH_SUBSCRIPTION_WAIT: WaitOptions = { mode: "push", wakeBy: "subscription" };

/**
 * `wait` overrides the polling policy (for tuning runs); the default peer runs the library's
 * defaults. `blind` hides the pace hints of busy replies from the client (see blind-redis.ts), so
 * that it polls with the full-jitter backoff alone, as before pacing: an A/B in the same run.
 * `wait: PUSH_WAIT` is the push hand-off (the release hands the lock over and wakes the waiter: a
 * blocking pop where the profile's pops block, else a subscription).
 */
export function edgelockPeer(env: PeerEnv, wait?: WaitOptions, blind = false): Peer {
  const policy = { ...DEFAULT_WAIT_POLICY, ...wait };
  const push = policy.mode === "push";
  const tag = push
    ? " push"
    : (wait === undefined
        ? ""
        : `[${policy.initialDelayMs}/${policy.maxDelayMs}/${policy.maxPolls}]`) +
      (blind ? " blind" : "");
  return {
    id: `edgelock${tag.replace(" ", "-")}`,
    label: `edgelock${tag}`,
    transport: "REST",
    config: `lease ${env.leaseMs} ms, ${describeWait(wait, blind)}`,
    contender: async () => {
      const redis = new Redis({ url: env.restUrl, token: env.token });
      const client = new LockClient({
        redis: blind ? blindRedis(redis) : redis,
        prefix: "bench",
        ...(wait === undefined ? {} : { wait }),
      });
      return handleContender((key) => client.lock(key).acquire({ leaseMs: env.leaseMs }));
    },
  };
}

/**
 * A contender of one edgelock client: `take` acquires a key's lock in a hold mode and the handle
 * is kept until that key's release. Every edgelock peer (plain, fair, read-write) runs on it.
 */
export function handleContender(
  take: (key: string, mode: HoldMode) => Promise<LockHandle>,
): Contender {
  const held = new Map<string, LockHandle>();
  return {
    acquire: async (key, mode = "write") => {
      held.set(key, await take(key, mode));
      return true;
    },
    release: async (key) => {
      const handle = held.get(key);
      held.delete(key);
      await handle?.release();
    },
    close: async () => {},
  };
}

/** The waiting policy of an edgelock peer, as stated in the bench's output. */
export function describeWait(wait: WaitOptions | undefined, blind = false): string {
  const policy = { ...DEFAULT_WAIT_POLICY, ...wait };
  if (policy.mode === "push") {
    return (
      `wait { mode: "push", parkMs: ${policy.parkMs}, claimMs: ${policy.claimMs}, ` +
      `maxPolls: ${policy.maxPolls} }: woken holding the lock (a blocking pop where pops block, ` +
      "else a subscription to the lock's hand-off channel)"
    );
  }
  return (
    `wait { initialDelayMs: ${policy.initialDelayMs}, ` +
    `maxDelayMs: ${policy.maxDelayMs}, maxPolls: ${policy.maxPolls} }` +
    (wait === undefined ? " (defaults)" : "") +
    (blind ? ", busy-reply hints hidden: full-jitter backoff only" : ", queue-directed polling")
  );
}

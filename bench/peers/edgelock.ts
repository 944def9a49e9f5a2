/** edgelock's reentrant lock over @upstash/redis (REST), in lease mode. */
import { Redis } from "@upstash/redis";
import { LockClient, type LockHandle } from "../../src/index.js";
import { DEFAULT_WAIT_POLICY, type WaitOptions } from "../../src/wait/policy.js";
import { blindRedis } from "./blind-redis.js";
import type { Contender, HoldMode, Peer, PeerEnv } from "./peer.js";

/** The push hand-off at its defaults, as `edgelock push` (and `edgelock fair push`) runs it. */
export const PUSH_WAIT: WaitOptions = { mode: "push" };

/** Push over a subscription, the wake channel of the `upstash` profile, named explicitly. */
export const PUSH_SUBSCRIPTION_WAIT: WaitOptions = { mode: "push", wakeBy: "subscription" };

/** Queue-directed polling, as `edgelock poll` (and `edgelock blind`, `edgelock fair poll`) runs it. */
export const POLL_WAIT: WaitOptions = { mode: "poll" };

/**
 * The label suffix and id suffix of an edgelock peer: "" with no `wait` option at all (the
 * library's defaults: `wait.mode` "auto"), " poll", " push", " blind" or "[initial/max/polls]".
 */
function waitTag(wait: WaitOptions | undefined, blind: boolean): string {
  if (blind) return " blind";
  if (wait === undefined) return "";
  const policy = { ...DEFAULT_WAIT_POLICY, ...wait };
  if (policy.mode === "push") return " push";
  if (wait === POLL_WAIT) return " poll";
  return `[${policy.initialDelayMs}/${policy.maxDelayMs}/${policy.maxPolls}]`;
}

/** Table label of an edgelock peer: the defaults say so, the explicit modes name themselves. */
export function edgelockLabel(kind: string, wait: WaitOptions | undefined, blind = false): string {
  const tag = waitTag(wait, blind);
  return tag === "" ? `${kind} (defaults)` : `${kind}${tag}`;
}

/**
 * `wait` undefined runs the library's defaults (no `wait` option at all: what a user gets);
 * `POLL_WAIT` and `PUSH_WAIT` name a mode; other options are polling variants (tuning runs).
 * `blind` polls with the pace hints of busy replies hidden (see blind-redis.ts), so that it polls
 * with the full-jitter backoff alone, as before pacing: an A/B in the same run.
 */
export function edgelockPeer(env: PeerEnv, wait?: WaitOptions, blind = false): Peer {
  const given = blind ? POLL_WAIT : wait;
  const tag = waitTag(given, blind);
  return {
    id: `edgelock${tag.replace(" ", "-")}`,
    label: edgelockLabel("edgelock", given, blind),
    transport: "REST",
    config: `lease ${env.leaseMs} ms, ${describeWait(given, blind)}`,
    contender: async () => {
      const redis = new Redis({ url: env.restUrl, token: env.token });
      const client = new LockClient({
        redis: blind ? blindRedis(redis) : redis,
        prefix: "bench",
        ...(given === undefined ? {} : { wait: given }),
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
  if (wait === undefined) {
    return (
      `no wait option (library defaults: mode "${DEFAULT_WAIT_POLICY.mode}", woken over a ` +
      "subscription or a blocking pop where the server offers one, else queue-directed polling)"
    );
  }
  const policy = { ...DEFAULT_WAIT_POLICY, ...wait };
  if (policy.mode === "push") {
    return (
      `wait { mode: "push", wakeBy: "${policy.wakeBy}", parkMs: ${policy.parkMs}, ` +
      `claimMs: ${policy.claimMs}, maxPolls: ${policy.maxPolls} }: woken holding the lock`
    );
  }
  return (
    `wait { mode: "${policy.mode}", initialDelayMs: ${policy.initialDelayMs}, ` +
    `maxDelayMs: ${policy.maxDelayMs}, maxPolls: ${policy.maxPolls} }` +
    (blind ? ", busy-reply hints hidden: full-jitter backoff only" : ", queue-directed polling")
  );
}

/** The local servers the workerd projects run against, LockClients on them, and waiting helpers. */
import { env } from "cloudflare:workers";
import { Redis } from "@upstash/redis/cloudflare";
import { LockClient } from "../../src/index.js";

export interface TestServer {
  readonly kind: string;
  readonly url: string;
  readonly token: string;
}

export const TEST_SERVERS: readonly TestServer[] = JSON.parse(env.EDGELOCK_TEST_SERVERS);

let clients = 0;

/**
 * A LockClient on `server` through @upstash/redis/cloudflare: under `prefix` when given (a second
 * client on the same locks), else under a fresh one starting with `tag`.
 */
export function clientOn(server: TestServer, tag: string, prefix?: string): LockClient {
  clients += 1;
  return new LockClient({
    redis: new Redis({ url: server.url, token: server.token }),
    prefix: prefix ?? `${tag}${Date.now().toString(36)}${clients}`,
  });
}

export const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `predicate` every 10 ms until it holds; throws after `timeoutMs`. */
export async function until(
  predicate: () => Promise<boolean> | boolean,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleepMs(10);
  }
}

/**
 * The workers project's global setup. The first backend kind under test is started through
 * `edgelock/testing` (dev/testing.ts), exactly as a user's project would, and becomes the
 * UPSTASH_REDIS_REST_* bindings (vitest.config.ts); every kind's server is also listed in the
 * EDGELOCK_TEST_SERVERS binding so the tests run against each.
 */
import type { TestProject } from "vitest/node";
import { type DevServer, startDevServer } from "../dev/index.js";
import { edgelockGlobalSetup, type ProvidedDevServer } from "../dev/testing.js";
import { backendKindsUnderTest } from "./support/backends.js";

declare module "vitest" {
  interface ProvidedContext {
    devServers: { kind: string; url: string; token: string }[];
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [first, ...others] = backendKindsUnderTest();
  let primary: ProvidedDevServer | undefined;
  const stopPrimary = await edgelockGlobalSetup({ backend: first ?? "embedded" })({
    provide(key, value) {
      primary = value;
      project.provide(key, value);
    },
  });
  const servers: DevServer[] = [];
  try {
    for (const kind of others) servers.push(await startDevServer({ backend: kind }));
  } catch (error) {
    await Promise.all([stopPrimary(), ...servers.map((server) => server.close())]);
    throw error;
  }
  project.provide("devServers", [
    ...(primary === undefined
      ? []
      : [{ kind: primary.backendKind, url: primary.url, token: primary.token }]),
    ...servers.map((server) => ({
      kind: server.backendKind,
      url: server.url,
      token: server.token,
    })),
  ]);
  return async () => {
    await Promise.all([stopPrimary(), ...servers.map((server) => server.close())]);
  };
}

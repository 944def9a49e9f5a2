/**
 * The workers projects' global setup. The first backend kind under test is started through
 * `edgelock/testing` (dev/testing.ts), exactly as a user's project would, and becomes the
 * UPSTASH_REDIS_REST_* bindings (vitest.config.ts); every kind's server is also listed in the
 * EDGELOCK_TEST_SERVERS binding so the tests run against each. The servers behave as production
 * Upstash (the default profile); test/global-setup-blocking.ts starts them as a Redis behind a
 * REST proxy, for the push tests, whose parks block only there.
 */
import type { TestProject } from "vitest/node";
import { type DevServer, type ServerProfile, startDevServer } from "../dev/index.js";
import { STATS_PATH } from "../dev/rest/routes.js";
import type { StatsSnapshot } from "../dev/rest/stats.js";
import { edgelockGlobalSetup, type ProvidedDevServer } from "../dev/testing.js";
import { backendKindsUnderTest } from "./support/backend-kinds.js";
import { recordScriptCensus } from "./support/script-census.js";

declare module "vitest" {
  interface ProvidedContext {
    devServers: { kind: string; url: string; token: string }[];
  }
}

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return startServers(project);
}

export async function startServers(
  project: TestProject,
  profile?: ServerProfile,
): Promise<() => Promise<void>> {
  const [first, ...others] = backendKindsUnderTest();
  const chosen = profile === undefined ? {} : { profile };
  let primary: ProvidedDevServer | undefined;
  const stopPrimary = await edgelockGlobalSetup({ backend: first ?? "embedded", ...chosen })({
    provide(key, value) {
      primary = value;
      project.provide(key, value);
    },
  });
  const servers: DevServer[] = [];
  try {
    for (const kind of others) servers.push(await startDevServer({ backend: kind, ...chosen }));
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
    const source = `${project.name} (workerd)`;
    if (primary !== undefined) {
      const stats = await fetch(`${primary.url}${STATS_PATH}`, {
        headers: { authorization: `Bearer ${primary.token}` },
      });
      const { scripts } = (await stats.json()) as StatsSnapshot;
      recordScriptCensus(source, primary, scripts);
    }
    for (const server of servers)
      recordScriptCensus(source, server, server.stats.snapshot().scripts);
    await Promise.all([stopPrimary(), ...servers.map((server) => server.close())]);
  };
}

/**
 * Starts one local REST server per backend kind for the workers project; tests inside workerd
 * reach them through the EDGELOCK_TEST_SERVERS binding (see vitest.config.ts).
 */
import type { TestProject } from "vitest/node";
import { type DevServer, startDevServer } from "../dev/index.js";
import { backendKindsUnderTest } from "./support/backends.js";

declare module "vitest" {
  interface ProvidedContext {
    devServers: { kind: string; url: string; token: string }[];
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const servers: DevServer[] = [];
  for (const kind of backendKindsUnderTest()) servers.push(await startDevServer({ backend: kind }));
  project.provide(
    "devServers",
    servers.map((server) => ({ kind: server.backendKind, url: server.url, token: server.token })),
  );
  return async () => {
    await Promise.all(servers.map((server) => server.close()));
  };
}

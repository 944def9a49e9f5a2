/**
 * The global setup of the workers project whose tests need blocking pops (push mode's parks): the
 * same servers as test/global-setup.ts, on the `redis` profile (a Redis behind a REST proxy).
 */
import type { TestProject } from "vitest/node";
import { startServers } from "./global-setup.js";

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return startServers(project, "redis");
}

import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { upstashBindings } from "./dev/testing.js";

/**
 * Projects over local REST servers and the same real Redis:
 * - node:    the library and the dev server, in Node.
 * - workers: the library inside workerd, reaching the servers (production Upstash's profile)
 *   through bindings; workers-blocking: the push tests there, on servers whose pops block.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "node",
          include: ["test/node/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/census-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      workersProject("workers", {
        exclude: ["test/workers/push.test.ts"],
        globalSetup: ["test/global-setup.ts"],
      }),
      // Push mode parks on blocking pops, which only a Redis behind a REST proxy serves.
      workersProject("workers-blocking", {
        include: ["test/workers/push.test.ts"],
        globalSetup: ["test/global-setup-blocking.ts"],
      }),
    ],
  },
});

type TestServers = { kind: string; url: string; token: string }[];

/** A project of tests inside workerd over the servers its global setup starts. */
function workersProject(
  name: string,
  files: { include?: string[]; exclude?: string[]; globalSetup: string[] },
) {
  return {
    plugins: [
      cloudflareTest(({ inject }) => {
        const servers = inject<TestServers>("devServers");
        return {
          wrangler: { configPath: "./wrangler.toml" },
          miniflare: {
            bindings: {
              EDGELOCK_TEST_SERVERS: JSON.stringify(servers),
              // The LockWatchdog Durable Object renews on the first server (real Redis when
              // redis-server is installed), through the bindings a deployment would set, as
              // edgelock/testing hands them to a user's Worker tests.
              ...upstashBindings(inject),
            },
          },
        };
      }),
    ],
    test: {
      name,
      include: files.include ?? ["test/workers/**/*.test.ts"],
      exclude: files.exclude ?? [],
      globalSetup: files.globalSetup,
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  };
}

import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { upstashBindings } from "./dev/testing.js";

/**
 * Two projects over the same local REST server and the same real Redis:
 * - node:    the library and the dev server, in Node.
 * - workers: the library inside workerd, reaching the server through bindings.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "node",
          include: ["test/node/**/*.test.ts"],
          environment: "node",
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
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
          name: "workers",
          include: ["test/workers/**/*.test.ts"],
          globalSetup: ["test/global-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
    ],
  },
});

type TestServers = { kind: string; url: string; token: string }[];

/**
 * Runs @upstash/redis's own test suite (from a local checkout of upstash/redis-js) against the
 * local server, on the embedded engine and on a spawned redis-server, through a bun:test → vitest
 * shim. Never vendors the tests: they are read from the checkout given on the command line.
 *
 *   npm run upstash-suite -- <path-to-redis-js-checkout> [--backend embedded|redis-server]
 *
 * Prints, per backend, the pass/fail/skip counts and the failed tests.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startVitest } from "vitest/node";
import { type BackendChoice, startDevServer } from "../../dev/index.js";
import { skippedFiles, skippedTests } from "./skips.js";

/** The upstash/redis-js commit the skip list was written against. */
export const PINNED_COMMIT = "777dc30585ae61e5826bb95f5a957e6dea277900";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROJECT = path.resolve(HERE, "../..");

const HOW_TO_GET_IT = `Get the suite (it is not in the npm package):
  git clone https://github.com/upstash/redis-js /tmp/upstash-redis-js
  git -C /tmp/upstash-redis-js checkout ${PINNED_COMMIT}
then: npm run upstash-suite -- /tmp/upstash-redis-js`;

const INCLUDE = [
  "pkg/commands/*.test.ts",
  "pkg/pipeline.test.ts",
  "pkg/auto-pipeline.test.ts",
  "pkg/script.test.ts",
  "pkg/scriptRo.test.ts",
  "pkg/redis.test.ts",
];

interface Counts {
  passed: number;
  failed: number;
  skipped: number;
  failures: string[];
}

function packageRoot(checkout: string): string | undefined {
  for (const candidate of [path.join(checkout, "packages/redis"), checkout]) {
    if (existsSync(path.join(candidate, "pkg/commands"))) return candidate;
  }
  return undefined;
}

async function runOn(backend: BackendChoice, root: string): Promise<Counts> {
  const server = await startDevServer({ backend });
  process.env.UPSTASH_REDIS_REST_URL = server.url;
  process.env.UPSTASH_REDIS_REST_TOKEN = server.token;
  process.env.UPSTASH_SUITE_SKIPPED_TESTS = JSON.stringify(Object.keys(skippedTests));
  const exclude = Object.keys(skippedFiles).map((prefix) =>
    prefix.endsWith(".ts") ? prefix : `${prefix}*`,
  );
  try {
    const vitest = await startVitest(
      "test",
      [],
      {
        root,
        config: false,
        include: INCLUDE,
        exclude,
        watch: false,
        reporters: ["dot"],
        // The machine is shared: one worker, and generous timeouts.
        maxWorkers: 1,
        testTimeout: 30_000,
        hookTimeout: 30_000,
        passWithNoTests: true,
      },
      {
        resolve: {
          alias: {
            "bun:test": path.join(HERE, "bun-test-shim.ts"),
            bun: path.join(HERE, "bun-test-shim.ts"),
            uncrypto: path.join(PROJECT, "node_modules/uncrypto/dist/crypto.node.mjs"),
          },
        },
      },
    );
    const counts: Counts = { passed: 0, failed: 0, skipped: 0, failures: [] };
    for (const module of vitest.state.getTestModules()) {
      for (const testCase of module.children.allTests()) {
        const state = testCase.result().state;
        if (state === "passed") counts.passed += 1;
        else if (state === "failed") {
          counts.failed += 1;
          const message = testCase.result().errors?.[0]?.message?.split("\n")[0] ?? "";
          counts.failures.push(
            `${path.relative(root, module.moduleId)} > ${testCase.fullName}: ${message.slice(0, 160)}`,
          );
        } else counts.skipped += 1;
      }
    }
    await vitest.close();
    return counts;
  } finally {
    await server.close();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const checkout = args.find((arg) => !arg.startsWith("--"));
  const root = checkout === undefined ? undefined : packageRoot(path.resolve(checkout));
  if (root === undefined) {
    console.error(HOW_TO_GET_IT);
    process.exitCode = 2;
    return;
  }
  const backendIndex = args.indexOf("--backend");
  const backends: BackendChoice[] =
    backendIndex === -1 ? ["redis-server", "embedded"] : [args[backendIndex + 1] as BackendChoice];
  const skippedFileCount = Object.keys(skippedFiles).length;
  for (const backend of backends) {
    const counts = await runOn(backend, root);
    console.log(
      `\n== ${String(backend)}: ${counts.passed} passed, ${counts.failed} failed, ` +
        `${counts.skipped} skipped (plus ${skippedFileCount} skip-list file patterns)`,
    );
    for (const failure of counts.failures) console.log(`  FAIL ${failure}`);
  }
  // Test failures are the report, not a crash of this script.
  process.exitCode = 0;
}

await main();

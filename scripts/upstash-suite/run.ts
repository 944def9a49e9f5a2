/**
 * Runs @upstash/redis's own test suite (from a local checkout of upstash/redis-js) against the
 * local server, on the embedded engine and on a spawned redis-server, through a bun:test → vitest
 * shim. Never vendors the tests: they are read from the checkout given on the command line.
 *
 *   npm run upstash-suite -- <path-to-redis-js-checkout> [--backend embedded|redis-server]
 *                           [--profile upstash|redis] [--only-skipped]
 *
 * Prints, per backend, the pass/fail/skip counts and the failed tests; with both backends, whether
 * they passed exactly the same tests; and any skip-list entry that names no test or file of the
 * checkout. `--only-skipped` runs the skip-listed tests instead: one that passes on both backends
 * no longer needs its skip. `--profile` picks the server profile (default: EDGELOCK_DEV_PROFILE,
 * else the server's default); each backend's line names it, with the scripts the suite ran under
 * Upstash's global lock and the blocking commands the profile answered at once or refused.
 */
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startVitest } from "vitest/node";
import { type BackendChoice, type ServerProfile, startDevServer } from "../../dev/index.js";
import { skippedFiles, skippedTests } from "./skips.js";

/** The upstash/redis-js commit the skip list was written against. */
export const PINNED_COMMIT = "777dc30585ae61e5826bb95f5a957e6dea277900";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROJECT = path.resolve(HERE, "../..");

const HOW_TO_GET_IT = `Get the suite (it is not in the npm package):
  git clone https://github.com/upstash/redis-js /tmp/upstash-redis-js
  git -C /tmp/upstash-redis-js checkout ${PINNED_COMMIT}
then: npm run upstash-suite -- /tmp/upstash-redis-js`;

/** Every test file runs unless skips.ts names it (with its reason). */
const INCLUDE = ["pkg/**/*.test.ts"];

interface Counts {
  passed: number;
  failed: number;
  skipped: number;
  failures: string[];
  /** `path > describes > name` of every test that passed, and of every test collected. */
  passedTests: Set<string>;
  collectedTests: Set<string>;
  /** The profile served, and what it counted (docs/upstash.md). */
  profileSummary: string;
}

function packageRoot(checkout: string): string | undefined {
  for (const candidate of [path.join(checkout, "packages/redis"), checkout]) {
    if (existsSync(path.join(candidate, "pkg/commands"))) return candidate;
  }
  return undefined;
}

async function runOn(
  backend: BackendChoice,
  root: string,
  onlySkipped: boolean,
  profile: ServerProfile | undefined,
): Promise<Counts> {
  const server = await startDevServer({ backend, ...(profile === undefined ? {} : { profile }) });
  process.env.UPSTASH_REDIS_REST_URL = server.url;
  process.env.UPSTASH_REDIS_REST_TOKEN = server.token;
  process.env.UPSTASH_SUITE_SKIPPED_TESTS = JSON.stringify(Object.keys(skippedTests));
  process.env.UPSTASH_SUITE_SKIPPED_FILES = JSON.stringify(Object.keys(skippedFiles));
  process.env.UPSTASH_SUITE_ONLY_SKIPPED = onlySkipped ? "1" : "0";
  // Skipped files are not even loaded, except when checking the skips.
  const exclude = onlySkipped
    ? []
    : Object.keys(skippedFiles).map((prefix) => (prefix.endsWith(".ts") ? prefix : `${prefix}*`));
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
    const counts: Counts = {
      passed: 0,
      failed: 0,
      skipped: 0,
      failures: [],
      passedTests: new Set(),
      collectedTests: new Set(),
      profileSummary: "",
    };
    for (const module of vitest.state.getTestModules()) {
      for (const testCase of module.children.allTests()) {
        const id = `${path.relative(root, module.moduleId)} > ${testCase.fullName}`;
        counts.collectedTests.add(id);
        const state = testCase.result().state;
        if (state === "passed") {
          counts.passed += 1;
          counts.passedTests.add(id);
        } else if (state === "failed") {
          counts.failed += 1;
          const message = testCase.result().errors?.[0]?.message?.split("\n")[0] ?? "";
          counts.failures.push(`${id}: ${message.slice(0, 160)}`);
        } else counts.skipped += 1;
      }
    }
    await vitest.close();
    const { scripts, blocking } = server.stats.snapshot();
    counts.profileSummary =
      `profile ${server.profile}: ${scripts.globalLock} script runs under the global lock, ` +
      `${scripts.keyLocking} with allow-key-locking; blocking commands ` +
      `${blocking.answeredAtOnce} answered at once, ${blocking.refused} refused`;
    return counts;
  } finally {
    await server.close();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  // The checkout is the one argument that is neither an option nor an option's value.
  const checkout = args.find(
    (arg, index) =>
      !arg.startsWith("--") && !["--backend", "--profile"].includes(args[index - 1] ?? ""),
  );
  const root = checkout === undefined ? undefined : packageRoot(path.resolve(checkout));
  if (root === undefined) {
    console.error(HOW_TO_GET_IT);
    process.exitCode = 2;
    return;
  }
  const backendIndex = args.indexOf("--backend");
  const backends: BackendChoice[] =
    backendIndex === -1 ? ["redis-server", "embedded"] : [args[backendIndex + 1] as BackendChoice];
  const onlySkipped = args.includes("--only-skipped");
  const profileIndex = args.indexOf("--profile");
  const profile = profileIndex === -1 ? undefined : (args[profileIndex + 1] as ServerProfile);
  const skippedFileCount = Object.keys(skippedFiles).length;
  const results = new Map<BackendChoice, Counts>();
  for (const backend of backends) {
    const counts = await runOn(backend, root, onlySkipped, profile);
    results.set(backend, counts);
    console.log(
      `\n== ${String(backend)}: ${counts.passed} passed, ${counts.failed} failed, ` +
        `${counts.skipped} skipped` +
        (onlySkipped
          ? " (only the skip-listed tests ran)"
          : ` (plus ${skippedFileCount} skip-list file patterns)`),
    );
    console.log(`   ${counts.profileSummary}`);
    for (const failure of counts.failures) console.log(`  FAIL ${failure}`);
    if (onlySkipped) {
      for (const id of counts.passedTests) console.log(`  PASSES DESPITE ITS SKIP ${id}`);
    }
  }
  const [first, second] = [...results.values()];
  if (first !== undefined && second !== undefined) {
    const onlyFirst = [...first.passedTests].filter((id) => !second.passedTests.has(id));
    const onlySecond = [...second.passedTests].filter((id) => !first.passedTests.has(id));
    console.log(
      onlyFirst.length + onlySecond.length === 0
        ? `\n== ${backends.join(" and ")} pass exactly the same ${first.passed} tests`
        : `\n== the backends differ: ${backends[0]} alone passes ${onlyFirst.length}, ${backends[1]} alone ${onlySecond.length}`,
    );
    for (const id of onlyFirst) console.log(`  only ${String(backends[0])}: ${id}`);
    for (const id of onlySecond) console.log(`  only ${String(backends[1])}: ${id}`);
  }
  for (const entry of staleSkips(root, first?.collectedTests)) {
    console.log(`  STALE SKIP (names nothing in this checkout): ${entry}`);
  }
  // Test failures are the report, not a crash of this script.
  process.exitCode = 0;
}

/** Skip-list entries that name no test file (whole-file entries) or no collected test. */
function staleSkips(root: string, collected: ReadonlySet<string> | undefined): string[] {
  const files = (readdirSync(path.join(root, "pkg"), { recursive: true }) as string[]).map((file) =>
    path.join("pkg", file).split(path.sep).join("/"),
  );
  const staleFiles = Object.keys(skippedFiles).filter(
    (prefix) => !files.some((file) => file.startsWith(prefix) && file.endsWith(".test.ts")),
  );
  const staleTests =
    collected === undefined ? [] : Object.keys(skippedTests).filter((id) => !collected.has(id));
  return [...staleFiles, ...staleTests];
}

await main();

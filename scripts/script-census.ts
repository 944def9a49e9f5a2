/**
 * Prints the script census of the test run that just ended (test/support/script-census.ts): over
 * every server on the `upstash` profile, the scripts run under per-key locking, under Upstash's
 * database-wide lock, and refused for an undeclared key. Fails when a global-lock script or a
 * refusal came from a test file that does not send one on purpose (listed below, with why), or
 * when no server reported (the census itself broke).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { CENSUS_DIR, type CensusEntry } from "../test/support/script-census.js";

/** Test files that send unflagged scripts to an `upstash`-profile server on purpose. */
const UNFLAGGED_ON_PURPOSE: Readonly<Record<string, string>> = {
  "test/node/safety/upstash-key-locking.test.ts": "shows what the count measures (flag off)",
  "test/node/dev/upstash-profile.test.ts": "tests the server's emulation itself",
  "test/node/dev/protocol.test.ts": "tests the REST protocol with a raw EVAL",
  "test/node/dev/pubsub.test.ts": "tests PUBLISH from a raw EVAL",
  "test/node/dev/engine/upstash-client.test.ts": "tests the engine through a raw EVAL",
  "test/node/exclusive/hold-statistics.test.ts": "evaluates Lua fragments on their own",
  "test/node/safety/shared-expiry.test.ts": "reads expiry times with a raw script",
};

const entries: CensusEntry[] = existsSync(CENSUS_DIR)
  ? readdirSync(CENSUS_DIR).map(
      (file) => JSON.parse(readFileSync(join(CENSUS_DIR, file), "utf8")) as CensusEntry,
    )
  : [];
const upstash = entries
  .filter((entry) => entry.profile === "upstash")
  .map((entry) => ({ ...entry, source: relative(process.cwd(), entry.source) || entry.source }));
const sum = (list: typeof upstash, field: "keyLocking" | "globalLock" | "dynamicKeyRejections") =>
  list.reduce((total, entry) => total + entry[field], 0);

console.log(
  `script census: ${entries.length} servers reported, ${upstash.length} on the upstash profile ` +
    `(${new Set(upstash.map((entry) => entry.source)).size} test files or projects)`,
);
console.log(
  `  upstash profile: ${sum(upstash, "keyLocking")} scripts under per-key locking, ` +
    `${sum(upstash, "globalLock")} under the global lock, ` +
    `${sum(upstash, "dynamicKeyRejections")} refused for an undeclared key`,
);
const onPurpose = upstash.filter((entry) => entry.source in UNFLAGGED_ON_PURPOSE);
for (const [source, why] of Object.entries(UNFLAGGED_ON_PURPOSE)) {
  const mine = onPurpose.filter((entry) => entry.source === source);
  console.log(
    `  of which on purpose, ${source} (${why}): ${sum(mine, "globalLock")} global-lock, ` +
      `${sum(mine, "dynamicKeyRejections")} refused`,
  );
}
const unmeant = upstash.filter(
  (entry) =>
    !(entry.source in UNFLAGGED_ON_PURPOSE) &&
    (entry.globalLock > 0 || entry.dynamicKeyRejections > 0),
);
for (const entry of unmeant) {
  console.error(
    `  UNMEANT: ${entry.source} on ${entry.backend}: ${entry.globalLock} global-lock, ` +
      `${entry.dynamicKeyRejections} refused`,
  );
}
if (upstash.length === 0) {
  console.error("script census: no server on the upstash profile reported; the census is broken");
  process.exit(1);
}
if (unmeant.length > 0) process.exit(1);
console.log(
  `  outside those: ${sum(upstash, "globalLock") - sum(onPurpose, "globalLock")} global-lock, ` +
    `${sum(upstash, "dynamicKeyRejections") - sum(onPurpose, "dynamicKeyRejections")} refused`,
);

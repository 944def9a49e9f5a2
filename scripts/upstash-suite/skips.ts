/**
 * Tests of @upstash/redis's suite that the local server is not meant to pass, each with its
 * reason. Keys are paths relative to the package (`pkg/commands/json_get.test.ts`), optionally
 * followed by ` > ` and a test's name (its describe names and own name joined by ` > `).
 */
export interface Skip {
  readonly reason: string;
}

const UPSTASH_ONLY = "Upstash-only: not a Redis command";
const NEWER_THAN_7_0 = "newer than Redis 7.0";

/** Whole files. Prefix match on the path, so `pkg/commands/json_` skips every JSON command. */
export const skippedFiles: Readonly<Record<string, Skip>> = {
  "pkg/commands/json_": { reason: `${UPSTASH_ONLY} (RedisJSON module)` },
  "pkg/commands/search": { reason: `${UPSTASH_ONLY} (search)` },
  "pkg/commands/hexpire": { reason: `${NEWER_THAN_7_0} (hash field expiry, 7.4)` },
  "pkg/commands/hpexpire": { reason: `${NEWER_THAN_7_0} (hash field expiry, 7.4)` },
  "pkg/commands/hexpireat": { reason: `${NEWER_THAN_7_0} (hash field expiry, 7.4)` },
  "pkg/commands/hpexpireat": { reason: `${NEWER_THAN_7_0} (hash field expiry, 7.4)` },
  "pkg/commands/hexpiretime": { reason: `${NEWER_THAN_7_0} (hash field expiry, 7.4)` },
  "pkg/commands/hpexpiretime": { reason: `${NEWER_THAN_7_0} (hash field expiry, 7.4)` },
  "pkg/commands/httl": { reason: `${NEWER_THAN_7_0} (hash field expiry, 7.4)` },
  "pkg/commands/hpttl": { reason: `${NEWER_THAN_7_0} (hash field expiry, 7.4)` },
  "pkg/commands/hpersist": { reason: `${NEWER_THAN_7_0} (hash field expiry, 7.4)` },
  "pkg/commands/hgetdel": { reason: `${NEWER_THAN_7_0} (8.0)` },
  "pkg/commands/hgetex": { reason: `${NEWER_THAN_7_0} (8.0)` },
  "pkg/commands/hsetex": { reason: `${NEWER_THAN_7_0} (8.0)` },
  "pkg/http.test.ts": {
    reason: "tests the client's HTTP layer against Bun's own server, not Redis",
  },
  "pkg/functions.integration.test.ts": { reason: "needs Upstash's function-library hosting" },
  "pkg/read-your-writes.test.ts": { reason: `${UPSTASH_ONLY} (replica sync tokens)` },
  "pkg/test-utils.test.ts": { reason: "tests the suite's own helpers" },
  "pkg/commands/xackdel": { reason: `${NEWER_THAN_7_0} (8.2)` },
  "pkg/commands/xdelex": { reason: `${NEWER_THAN_7_0} (8.2)` },
};

/** Single tests, as `path > name`. */
export const skippedTests: Readonly<Record<string, Skip>> = {
  "pkg/commands/bitop.test.ts > sets bits that are in X AND in one or more Y": {
    reason: `${NEWER_THAN_7_0} (BITOP ANDOR, 8.2)`,
  },
  "pkg/commands/bitop.test.ts > sets bits that are in X but not in any Y": {
    reason: `${NEWER_THAN_7_0} (BITOP DIFF, 8.2)`,
  },
  "pkg/commands/bitop.test.ts > sets bits that are in Y but not in X": {
    reason: `${NEWER_THAN_7_0} (BITOP DIFF1, 8.2)`,
  },
  "pkg/commands/bitop.test.ts > sets bits that are in exactly one source": {
    reason: `${NEWER_THAN_7_0} (BITOP ONE, 8.2)`,
  },
  "pkg/commands/scan.test.ts > returns cursor and keys with types": {
    reason: `${UPSTASH_ONLY} (SCAN WITHTYPE)`,
  },
  "pkg/commands/subscribe.test.ts > should handle streaming data split across two chunks": {
    reason: "needs Bun's own HTTP server",
  },
  "pkg/redis.test.ts > should create index, seed data, and query": {
    reason: `${UPSTASH_ONLY} (search)`,
  },
  "pkg/pipeline.test.ts > works": { reason: `${NEWER_THAN_7_0} (uses HEXPIRE, 7.4)` },
  "pkg/auto-pipeline.test.ts > should batch a large Promise.all of mixed reads and writes into one read and one write pipeline":
    { reason: `${NEWER_THAN_7_0} (uses HEXPIRE, 7.4)` },
  "pkg/auto-pipeline.test.ts > should split JSON reads and writes into separate pipelines across awaited Promise.all calls":
    { reason: `${UPSTASH_ONLY} (RedisJSON)` },
  "pkg/auto-pipeline.test.ts > should split a Promise.all of json.set and json.get into separate write and read pipelines":
    { reason: `${UPSTASH_ONLY} (RedisJSON)` },
};

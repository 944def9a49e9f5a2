/**
 * Tests of @upstash/redis's suite that the local server is not meant to pass, each with its
 * reason. Keys are paths relative to the package (`pkg/commands/json_get.test.ts`), optionally
 * followed by ` > ` and a test's full name: its describe names and own name joined by ` > `, as
 * vitest's `fullName` spells it (a test's own name alone would also skip its namesakes).
 */
export interface Skip {
  readonly reason: string;
}

const UPSTASH_ONLY = "Upstash-only: not a Redis command";
const NEWER_THAN_7_0 = "newer than Redis 7.0";
const UPSTASH_BEHAVIOUR = "Upstash behaves otherwise than Redis 7.0";

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
  "pkg/commands/xackdel": { reason: `${NEWER_THAN_7_0} (8.2)` },
  "pkg/commands/xdelex": { reason: `${NEWER_THAN_7_0} (8.2)` },
};

/** Single tests, as `path > name`. */
export const skippedTests: Readonly<Record<string, Skip>> = {
  "pkg/commands/bitop.test.ts > when key is set > andor > sets bits that are in X AND in one or more Y":
    {
      reason: `${NEWER_THAN_7_0} (BITOP ANDOR, 8.2)`,
    },
  "pkg/commands/bitop.test.ts > when key is set > diff > sets bits that are in X but not in any Y":
    {
      reason: `${NEWER_THAN_7_0} (BITOP DIFF, 8.2)`,
    },
  "pkg/commands/bitop.test.ts > when key is set > diff1 > sets bits that are in Y but not in X": {
    reason: `${NEWER_THAN_7_0} (BITOP DIFF1, 8.2)`,
  },
  "pkg/commands/bitop.test.ts > when key is set > one > sets bits that are in exactly one source": {
    reason: `${NEWER_THAN_7_0} (BITOP ONE, 8.2)`,
  },
  "pkg/commands/scan.test.ts > with withType > returns cursor and keys with types": {
    reason: `${UPSTASH_ONLY} (SCAN WITHTYPE)`,
  },
  "pkg/commands/subscribe.test.ts > Subscriber > should handle streaming data split across two chunks":
    {
      reason: "needs Bun's own HTTP server",
    },
  "pkg/redis.test.ts > search > should create index, seed data, and query": {
    reason: `${UPSTASH_ONLY} (search)`,
  },
  "pkg/script.test.ts > sha1 > calculates the correct sha1": {
    reason:
      "client-side timing: the SHA-1 is computed with Web Crypto, which Bun settles within the one tick the test waits and Node does not",
  },
  "pkg/script.test.ts > sha1 > calculates the correct sha1 for empty string": {
    reason:
      "client-side timing, as the test before it: it passes only when that one has warmed Web Crypto up, and that one is skipped",
  },
  "pkg/functions.integration.test.ts > redis.functions (integration) > FCALL_RO allows a function that only reads even if it is not declared no-writes (Upstash behavior)":
    {
      reason: `${UPSTASH_BEHAVIOUR}: Redis 7.0 refuses FCALL_RO of a function without the no-writes flag ("Can not execute a script with write flag using *_ro command.")`,
    },
  "pkg/functions.integration.test.ts > redis.functions (integration) > FCALL_RO rejects write functions (read-only context)":
    {
      reason: `${UPSTASH_BEHAVIOUR}: Redis 7.0 refuses the call before it runs ("Can not execute a script with write flag…"); the test expects the error Upstash raises at the write`,
    },
  "pkg/commands/copy.test.ts > COPY test > should handle same source and destination keys": {
    reason: `${UPSTASH_BEHAVIOUR}: Redis 7.0 refuses COPY onto the same key ("source and destination objects are the same"); the test expects Upstash's answer`,
  },
  "pkg/commands/xreadgroup.test.ts > NOACK > should return 0 items in PEL": {
    reason: `${UPSTASH_BEHAVIOUR}: Redis registers the consumer on XREADGROUP, so XINFO CONSUMERS lists it; the test expects Upstash's empty list`,
  },
  "pkg/commands/xtrim.test.ts > XLEN > should approximately trim stream to 30 items": {
    reason: `${UPSTASH_BEHAVIOUR}: approximate trimming (MAXLEN ~) is implementation-defined; Redis 7.0 trims whole 100-entry nodes, so 100 entries stay`,
  },
  "pkg/pipeline.test.ts > use all the things > works": {
    reason: `${NEWER_THAN_7_0} (uses HEXPIRE, 7.4)`,
  },
  "pkg/auto-pipeline.test.ts > Auto pipeline > should batch a large Promise.all of mixed reads and writes into one read and one write pipeline":
    { reason: `${NEWER_THAN_7_0} (uses HEXPIRE, 7.4)` },
  "pkg/auto-pipeline.test.ts > Auto pipeline > should split JSON reads and writes into separate pipelines across awaited Promise.all calls":
    { reason: `${UPSTASH_ONLY} (RedisJSON)` },
  "pkg/auto-pipeline.test.ts > Auto pipeline > read/write pipeline separation > should split a Promise.all of json.set and json.get into separate write and read pipelines":
    { reason: `${UPSTASH_ONLY} (RedisJSON)` },
};

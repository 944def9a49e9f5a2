/**
 * The new command families end to end: the real `@upstash/redis` client, through the local REST
 * server, on redis-server and on the embedded engine, must produce equal results.
 */
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { redisServerUnderTest, withDevServer } from "../../../support/backends.js";

const LIBRARY = `#!lua name=clientlib
redis.register_function('add', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)`;

/** One pass over every family the engine gained; returns what the client gave back. */
async function exercise(redis: Redis): Promise<unknown[]> {
  const out: unknown[] = [];
  const record = async (value: Promise<unknown>) => out.push(await value);
  await record(redis.sadd("a", "1", "2", "3"));
  await record(redis.sadd("b", "2", "3", "4"));
  await record(redis.sinter("a", "b"));
  await record(redis.sinterstore("ab", "a", "b"));
  await record(redis.smove("a", "b", "1"));
  await record(redis.sdiff("b", "a"));
  await record(redis.zadd("z", { score: 1, member: "x" }, { score: 2, member: "y" }));
  await record(redis.zadd("z2", { score: 10, member: "y" }));
  await record(redis.zunionstore("zu", 2, ["z", "z2"]));
  await record(redis.zrange("zu", 0, -1, { withScores: true }));
  await record(redis.zlexcount("z", "-", "+"));
  await record(redis.zpopmin("zu", 1));
  await record(redis.zremrangebyrank("zu", 0, 0));
  await record(redis.setbit("bits", 7, 1));
  await record(redis.getbit("bits", 7));
  await record(redis.bitcount("bits", 0, -1));
  await record(redis.bitpos("bits", 1));
  await record(redis.set("s", "Hello World"));
  await record(redis.getrange("s", 0, 4));
  await record(redis.setrange("s", 6, "Redis"));
  await record(redis.pfadd("hll", "a", "b", "c"));
  await record(redis.pfcount("hll"));
  await record(redis.pfmerge("hll2", "hll"));
  await record(
    redis.geoadd("geo", { longitude: 13.361389, latitude: 38.115556, member: "Palermo" }),
  );
  await record(
    redis.geoadd("geo", { longitude: 15.087269, latitude: 37.502669, member: "Catania" }),
  );
  await record(redis.geodist("geo", "Palermo", "Catania", "KM"));
  await record(redis.geopos("geo", "Palermo"));
  await record(redis.geohash("geo", "Catania"));
  await record(redis.xadd("stream", "1-0", { field: "one" }));
  await record(redis.xadd("stream", "2-0", { field: "two" }));
  await record(redis.xlen("stream"));
  await record(redis.xrange("stream", "-", "+"));
  await record(redis.xdel("stream", ["1-0"]));
  await record(redis.rpush("list", "a", "b", "c"));
  await record(redis.lmove("list", "list2", "left", "right"));
  await record(redis.linsert("list", "before", "c", "x"));
  await record(redis.lrange("list", 0, -1));
  await record(redis.copy("s", "s2"));
  await record(redis.touch("s", "s2", "nope"));
  await record(redis.hset("h", { f: "v" }));
  await record(redis.hrandfield("h"));
  await record(redis.hscan("h", 0));
  await record(redis.functions.load({ code: LIBRARY }));
  await record(redis.functions.call("add", ["counter"], ["5"]));
  return out;
}

// guard: compared with a real redis-server; redisServerUnderTest throws under CI=true without one.
describe.runIf(redisServerUnderTest())("@upstash/redis on the embedded engine", () => {
  const real = withDevServer("redis-server");
  const embedded = withDevServer("embedded");
  const client = (server: { url: string; token: string }) =>
    new Redis({ url: server.url, token: server.token, enableTelemetry: false });

  it("gives the same results as on redis-server for every new command family", async () => {
    const expected = await exercise(client(real()));
    const actual = await exercise(client(embedded()));
    expect(actual).toEqual(expected);
  });
});

/**
 * Micro-benchmark: the cost of one lock EVALSHA (acquire + release) on the embedded engine,
 * called in-process. Run: `npx tsx bench/micro/engine-evalsha.ts [iterations]`.
 */
import { createEmbeddedBackend } from "../../dev/engine/index.js";

const ACQUIRE = `
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`;
const RELEASE = `
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
redis.call('del', KEYS[1])
return 1`;

async function main(): Promise<void> {
  const iterations = Number(process.argv[2] ?? 20_000);
  const engine = await createEmbeddedBackend();
  const sha = async (body: string): Promise<string> => {
    const reply = await engine.command(["script", "load", body]);
    if (reply.type !== "bulk" || reply.value === null) throw new Error("SCRIPT LOAD failed");
    return Buffer.from(reply.value).toString("latin1");
  };
  const acquire = await sha(ACQUIRE);
  const release = await sha(RELEASE);
  const once = async (i: number): Promise<void> => {
    const key = `lock:${i % 64}`;
    await engine.command(["evalsha", acquire, "1", key, "30000", "owner"]);
    await engine.command(["evalsha", release, "1", key, "owner"]);
  };
  for (let i = 0; i < 2_000; i++) await once(i);
  const started = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) await once(i);
  const elapsedUs = Number(process.hrtime.bigint() - started) / 1000;
  console.log(
    `${iterations} acquire+release pairs: ${(elapsedUs / (iterations * 2)).toFixed(1)} µs per EVALSHA`,
  );
  await engine.close();
}

await main();

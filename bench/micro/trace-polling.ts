/**
 * Anatomy of polling hand-offs: scenario 2's case (N contenders × K sections of a fixed hold on
 * one key, 20 ± 5 ms round trips on the bench backend, whose latency delays replies only, so a
 * request runs on Redis when it is sent) with every script call of every contender traced. For
 * each hand-off it reports how late the winning poll reached Redis after the release, and what
 * the other polls of that gap were (early: sent before the release; losers: sent after it but
 * not granted); how each cycle divides into the holder's grant reply, its hold and that
 * lateness; and the early polls by the queue position they had. A tool for tuning
 * src/wait/turn.ts, not a benchmark.
 *
 * Usage: npx tsx bench/micro/trace-polling.ts [--n 8] [--k 10] [--hold 5] [--fair]
 *          [--write]          the read-write lock's write side instead of the plain lock
 *          [--sequences]      each acquisition's polls: the positions of its busy replies, then G
 *          [--timeline MS]    60 calls from MS ms into the run, with the busy replies' views
 */
import { parseArgs } from "node:util";
import { Redis } from "@upstash/redis";
import { LockClient } from "../../src/index.js";
import type { RedisLike } from "../../src/transport/redis-like.js";
import { startBenchBackend } from "../backend/backend.js";
import { percentile } from "../metrics.js";

interface Call {
  readonly contender: number;
  readonly sentAt: number;
  readonly answeredAt: number;
  /** "granted", "busy" or "other" (a release, an extend…). */
  readonly outcome: "granted" | "busy" | "other";
  /** The busy reply's queue position, -1 when none. */
  readonly position: number;
  readonly release: boolean;
  /** The busy reply's hold, deviation, cycle and held-for, as sent. */
  readonly view: string;
}

const { values } = parseArgs({
  options: {
    n: { type: "string", default: "8" },
    k: { type: "string", default: "10" },
    hold: { type: "string", default: "5" },
    fair: { type: "boolean", default: false },
    write: { type: "boolean", default: false },
    sequences: { type: "boolean", default: false },
    timeline: { type: "string" },
  },
});
const contenders = Number(values.n);
const sections = Number(values.k);
const holdMs = Number(values.hold);

const calls: Call[] = [];
const t0 = performance.now();
const now = () => performance.now() - t0;

function traced(redis: RedisLike, contender: number, releasing: () => boolean): RedisLike {
  const record = async (run: () => Promise<unknown>) => {
    const sentAt = now();
    const release = releasing();
    const reply = await run();
    const first = Array.isArray(reply) ? Number(reply[0]) : Number.NaN;
    const outcome = release ? "other" : first === 1 ? "granted" : first === 0 ? "busy" : "other";
    const position = outcome === "busy" && Array.isArray(reply) ? Number(reply[2] ?? -1) : -1;
    const view = outcome === "busy" && Array.isArray(reply) ? reply.slice(3).join("/") : "";
    calls.push({ contender, sentAt, answeredAt: now(), outcome, position, release, view });
    return reply;
  };
  return {
    eval: (script, keys, args) => record(() => redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) => record(() => redis.evalsha(sha, keys, args)),
  };
}

const backend = await startBenchBackend("upstash");
try {
  await backend.setLatency({ name: "20±5 ms", latencyMs: 20, jitterMs: 5 });
  const work = [];
  const clients: LockClient[] = [];
  const releasing: boolean[] = [];
  for (let index = 0; index < contenders; index++) {
    releasing.push(false);
    const redis = new Redis({ url: backend.restUrl, token: backend.token });
    clients.push(
      new LockClient({ redis: traced(redis, index, () => releasing[index]!), prefix: "trace" }),
    );
  }
  const lockOf = (client: LockClient) =>
    values.fair
      ? client.fairLock("contended")
      : values.write
        ? client.readWriteLock("contended").writeLock()
        : client.lock("contended");
  await Promise.all(
    clients.map(async (client, index) => {
      await (await lockOf(client).acquire({ leaseMs: 10_000 })).release();
      releasing[index] = false;
    }),
  );
  calls.length = 0;
  for (const [index, client] of clients.entries()) {
    work.push(
      (async () => {
        for (let i = 0; i < sections; i++) {
          const handle = await lockOf(client).acquire({ leaseMs: 10_000 });
          await new Promise((resolve) => setTimeout(resolve, holdMs));
          releasing[index] = true;
          await handle.release();
          releasing[index] = false;
        }
      })(),
    );
  }
  const started = now();
  await Promise.all(work);
  const elapsed = now() - started;

  const releases = calls.filter((call) => call.release).sort((a, b) => a.sentAt - b.sentAt);
  const grants = calls
    .filter((call) => call.outcome === "granted")
    .sort((a, b) => a.sentAt - b.sentAt);
  const fmt = (ms: number) => ms.toFixed(1);
  const lateness: number[] = [];
  let early = 0;
  let losers = 0;
  let gaps = 0;
  const winnerPositions = new Map<number, number>();
  const informedLate: number[] = [];
  for (const release of releases) {
    const next = grants
      .filter((grant) => grant.sentAt >= release.sentAt - 0.5)
      .sort((a, b) => a.sentAt - b.sentAt)[0];
    if (next === undefined) continue;
    gaps += 1;
    lateness.push(next.sentAt - release.sentAt);
    const between = calls.filter(
      (call) => !call.release && call.outcome === "busy" && call.answeredAt > release.sentAt,
    );
    early += between.filter(
      (call) => call.sentAt < release.sentAt && call.answeredAt < next.answeredAt + 1,
    ).length;
    losers += between.filter(
      (call) => call.sentAt >= release.sentAt && call.sentAt <= next.sentAt,
    ).length;
    const previous = calls
      .filter((call) => call.contender === next.contender && call.sentAt < next.sentAt)
      .at(-1);
    const position = previous?.outcome === "busy" ? previous.position : -1;
    winnerPositions.set(position, (winnerPositions.get(position) ?? 0) + 1);
    if (previous?.outcome === "busy" && previous.answeredAt > release.sentAt) {
      // The winner's last busy reply came back after the release had reached Redis: it could
      // not have aimed at that release, only ask again as soon as it heard (the gap: how soon).
      informedLate.push(next.sentAt - previous.answeredAt);
    }
  }
  // The cycle, taken apart: the holder's grant reply (Redis → holder), its hold (reply → its
  // release reaching Redis), and the next grant's lateness; and the early polls by position.
  const replyMs: number[] = [];
  const heldMs: number[] = [];
  const earlyByPosition = new Map<number, number>();
  for (const release of releases) {
    const grant = grants
      .filter((g) => g.contender === release.contender && g.sentAt <= release.sentAt)
      .at(-1);
    if (grant === undefined) continue;
    replyMs.push(grant.answeredAt - grant.sentAt);
    heldMs.push(release.sentAt - grant.answeredAt);
    const next = grants.find((g) => g.sentAt >= release.sentAt - 0.5);
    for (const call of calls) {
      if (call.release || call.outcome !== "busy") continue;
      if (call.answeredAt <= release.sentAt || call.sentAt >= release.sentAt) continue;
      if (next !== undefined && call.answeredAt >= next.answeredAt + 1) continue;
      earlyByPosition.set(call.position, (earlyByPosition.get(call.position) ?? 0) + 1);
    }
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  console.log(
    `cycle parts (mean): holder's grant reply ${fmt(mean(replyMs))} ms, hold to release ${fmt(mean(heldMs))} ms (p90 ${fmt(percentile(heldMs, 0.9))})`,
  );
  console.log(
    "early polls by their position:",
    [...earlyByPosition.entries()].sort((a, b) => a[0] - b[0]),
  );
  const acquisitions = grants.length;
  const busy = calls.filter((call) => call.outcome === "busy").length;
  console.log(
    `N ${contenders}, K ${sections}, hold ${holdMs} ms${values.fair ? ", fair" : values.write ? ", write lock" : ""}: ` +
      `${acquisitions} acquisitions in ${fmt(elapsed)} ms, ` +
      `${(calls.length / acquisitions).toFixed(2)} requests per acquisition ` +
      `(${(busy / acquisitions).toFixed(2)} busy)`,
  );
  console.log(
    `winning poll after the release: p10 ${fmt(percentile(lateness, 0.1))} p50 ${fmt(percentile(lateness, 0.5))} ` +
      `p90 ${fmt(percentile(lateness, 0.9))} mean ${fmt(lateness.reduce((a, b) => a + b, 0) / lateness.length)} ms`,
  );
  console.log(
    `per hand-off: ${(early / gaps).toFixed(2)} polls sent before the release, ${(losers / gaps).toFixed(2)} other polls after it`,
  );
  console.log(
    `winner's last busy reply came back after the release: ${informedLate.length} of ${gaps} ` +
      `hand-offs (it asked again ${informedLate.length === 0 ? "-" : fmt(mean(informedLate))} ms after that reply, mean)`,
  );
  console.log(
    "winner's last position:",
    [...winnerPositions.entries()].sort((a, b) => a[0] - b[0]),
  );
} finally {
  await backend.close();
}
if (values.timeline !== undefined) {
  const from = Number(values.timeline);
  const sorted = [...calls].sort((a, b) => a.sentAt - b.sentAt);
  const start = sorted.findIndex((call) => call.sentAt >= from);
  for (const call of sorted.slice(start, start + 60)) {
    console.log(
      `${call.sentAt.toFixed(1).padStart(8)} c${call.contender} ${call.release ? "RELEASE" : call.outcome.padEnd(7)} ` +
        `${call.position >= 0 ? `pos ${call.position} ${call.view}` : ""} (rt ${(call.answeredAt - call.sentAt).toFixed(1)})`,
    );
  }
}
if (values.sequences) {
  // Each acquisition's polls: the positions of its busy replies, then G (granted).
  const counts = new Map<string, number>();
  for (let contender = 0; contender < contenders; contender++) {
    let sequence: string[] = [];
    for (const call of calls.filter((c) => c.contender === contender)) {
      if (call.release) continue;
      if (call.outcome === "busy") sequence.push(String(call.position));
      if (call.outcome === "granted") {
        const key = [...sequence, "G"].join(" ");
        counts.set(key, (counts.get(key) ?? 0) + 1);
        sequence = [];
      }
    }
  }
  for (const [key, count] of [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
    console.log(String(count).padStart(4), key);
  }
}

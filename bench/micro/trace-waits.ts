/**
 * A trace of every wait, through what users have: each contender's LockClient reports its steps
 * by the public `waitStep` event (`client.on("waitStep")`, built only while someone listens,
 * `events.listens`), its grants by `acquired` (`handOff`: a release handed it the lock) and its
 * releases by `released`; the client's request observer counts what went on the wire. Scenario
 * 2's case: N contenders × K sections of a fixed hold on one key, 20 ± 5 ms round trips on the
 * bench backend (whose latency delays replies only: a request runs on Redis when it is sent).
 *
 * For each hand-off (a release called → the next holder's acquire resolved, when that holder was
 * already waiting) it reports the gap against the run's round trip, by how the lock came (handed
 * over by the release; the waiter's own attempt found it free; a later poll took it); the
 * acquisitions that found the lock free at their first attempt and how long it lay free before
 * them; and the slowest hand-offs with the winner's steps (attempt, answer, duration, delay, why).
 * A tool for finding where the time goes, not a benchmark.
 *
 * Usage: npx tsx bench/micro/trace-waits.ts [--n 8] [--k 10] [--hold 5] [--mode auto|poll|push]
 *          [--fair | --write]   the fair lock, or the read-write lock's write side
 *          [--profile upstash|redis] [--latency 20] [--slowest 8] [--runs 1]
 */
import { parseArgs } from "node:util";
import { Redis } from "@upstash/redis";
import { isServerProfile } from "../../dev/profile/settings.js";
import { LockClient } from "../../src/index.js";
import type { LockEvent } from "../../src/lock.js";
import type { WaitMode } from "../../src/wait/policy.js";
import { startBenchBackend } from "../backend/backend.js";
import { mean, percentile } from "../metrics.js";

type WaitStepEvent = Extract<LockEvent, { type: "waitStep" }>;

/** A waitStep as received, stamped on the bench's clock. */
interface Step extends Omit<WaitStepEvent, "type" | "name"> {
  readonly at: number;
}

interface Acquisition {
  readonly contender: number;
  readonly askedAt: number;
  readonly acquiredAt: number;
  readonly steps: readonly Step[];
  readonly handOff: boolean;
  readonly requests: number;
}

interface Release {
  readonly contender: number;
  readonly calledAt: number;
  readonly answeredAt: number;
}

const { values } = parseArgs({
  options: {
    n: { type: "string", default: "8" },
    k: { type: "string", default: "10" },
    hold: { type: "string", default: "5" },
    mode: { type: "string", default: "auto" },
    fair: { type: "boolean", default: false },
    write: { type: "boolean", default: false },
    profile: { type: "string", default: "upstash" },
    latency: { type: "string", default: "20" },
    slowest: { type: "string", default: "8" },
    runs: { type: "string", default: "1" },
  },
});
const contenders = Number(values.n);
const sections = Number(values.k);
const holdMs = Number(values.hold);
const mode = values.mode as WaitMode;
if (!["auto", "poll", "push"].includes(mode)) throw new Error("--mode: auto, poll or push");
const profile = values.profile ?? "upstash";
if (!isServerProfile(profile)) throw new Error("--profile: upstash or redis");
const latencyMs = Number(values.latency);

const t0 = performance.now();
const now = () => performance.now() - t0;
const fmt = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(1) : "-");

const backend = await startBenchBackend(profile);
try {
  await backend.setLatency({
    name: `${latencyMs}±5 ms`,
    latencyMs,
    jitterMs: latencyMs === 0 ? 0 : 5,
  });
  for (let run = 1; run <= Number(values.runs); run++) await traceRun(run);
} finally {
  await backend.close();
}

async function traceRun(run: number): Promise<void> {
  const key = `contended-${run}-${Date.now()}`;
  const acquisitions: Acquisition[] = [];
  const releases: Release[] = [];
  const requestsByKind = new Map<string, number>();
  const count = (kind: string) => requestsByKind.set(kind, (requestsByKind.get(kind) ?? 0) + 1);
  const clients = Array.from({ length: contenders }, () => {
    const redis = new Redis({ url: backend.restUrl, token: backend.token });
    return new LockClient({
      redis,
      prefix: "trace",
      ...(mode === "auto" ? {} : { wait: { mode } }),
      observer: {
        onAttempt: (script) => count(script.name),
        onBlocking: (command) => count(command.toLowerCase()),
      },
    });
  });
  const lockOf = (client: LockClient) =>
    values.fair
      ? client.fairLock(key)
      : values.write
        ? client.readWriteLock(key).writeLock()
        : client.lock(key);
  // Warm-up off the trace: each client has sent its scripts and learnt the server.
  for (const client of clients) await (await lockOf(client).acquire({ leaseMs: 10_000 })).release();
  requestsByKind.clear();

  const started = now();
  await Promise.all(
    clients.map(async (client, contender) => {
      // The current acquisition's steps and grant, as the events tell them.
      const current: { steps: Step[]; granted?: Extract<LockEvent, { type: "acquired" }> } = {
        steps: [],
      };
      client.on("waitStep", ({ type: _type, name: _name, ...step }) => {
        current.steps.push({ ...step, at: now() });
      });
      client.on("acquired", (event) => {
        current.granted = event;
      });
      for (let section = 0; section < sections; section++) {
        current.steps = [];
        current.granted = undefined;
        const askedAt = now();
        const handle = await lockOf(client).acquire({ leaseMs: 10_000 });
        // Read through a call: the listener set it, which the compiler cannot see.
        const grant = grantOf(current);
        acquisitions.push({
          contender,
          askedAt,
          acquiredAt: now(),
          steps: current.steps,
          handOff: grant?.handOff ?? false,
          requests: grant?.requests ?? Number.NaN,
        });
        await new Promise((resolve) => setTimeout(resolve, holdMs));
        const calledAt = now();
        await handle.release();
        releases.push({ contender, calledAt, answeredAt: now() });
      }
    }),
  );
  const elapsed = now() - started;
  report(run, elapsed, acquisitions, releases, requestsByKind);
}

function grantOf(current: {
  granted?: Extract<LockEvent, { type: "acquired" }>;
}): Extract<LockEvent, { type: "acquired" }> | undefined {
  return current.granted;
}

/** How an acquisition got the lock. */
function howCame(a: Acquisition): "handed over" | "free at first attempt" | "a later attempt" {
  if (a.handOff) return "handed over";
  const attempt = a.steps.at(-1)?.attempt ?? 1;
  return attempt <= 1 ? "free at first attempt" : "a later attempt";
}

function describeSteps(steps: readonly Step[], from: number): string {
  return steps
    .map(
      (s) =>
        `${s.attempt}:${s.answer}@${fmt(s.at - from)}(${fmt(s.durationMs)}` +
        `${s.delayMs > 0 ? ` →${s.delayMs}` : ""}${s.why === null ? "" : ` ${s.why}`})`,
    )
    .join(" ");
}

function report(
  run: number,
  elapsed: number,
  acquisitions: readonly Acquisition[],
  releases: readonly Release[],
  requestsByKind: ReadonlyMap<string, number>,
): void {
  const roundTrips = releases.map((r) => r.answeredAt - r.calledAt);
  const r = percentile(roundTrips, 0.5);
  const holds = releases.map((release) => {
    const own = acquisitions
      .filter((a) => a.contender === release.contender && a.acquiredAt <= release.calledAt)
      .at(-1);
    return own === undefined ? holdMs : release.calledAt - own.acquiredAt;
  });
  const ideal = holds.reduce((sum, h) => sum + h, 0) + (acquisitions.length + 1) * r;
  const totalRequests = [...requestsByKind.values()].reduce((sum, n) => sum + n, 0);
  const kindLabel = values.fair ? "fair lock" : values.write ? "write lock" : "lock";
  console.log(
    `\n== run ${run}: ${kindLabel}, N ${contenders}, K ${sections}, hold ${holdMs} ms, ` +
      `wait.mode ${mode}, profile ${profile}, ${latencyMs} ± 5 ms`,
  );
  console.log(
    `${acquisitions.length} acquisitions in ${fmt(elapsed)} ms; release round trip p50 ${fmt(r)} ms ` +
      `(R here); ideal Σholds + (S + 1)·R = ${fmt(ideal)} ms: ${((ideal / elapsed) * 100).toFixed(0)} % ` +
      `of it; ${(totalRequests / acquisitions.length).toFixed(2)} script/blocking requests per ` +
      `acquisition (${[...requestsByKind].map(([k, n]) => `${k} ${n}`).join(", ")}; subscriptions not counted)`,
  );

  // Each hand-off: the release, then the first acquisition resolved after it by a waiter that
  // had asked before it.
  interface HandOffGap {
    readonly release: Release;
    readonly next: Acquisition;
    readonly gap: number;
  }
  const gaps: HandOffGap[] = [];
  const sorted = [...releases].sort((a, b) => a.calledAt - b.calledAt);
  for (const release of sorted) {
    const next = acquisitions
      .filter((a) => a.acquiredAt > release.calledAt)
      .sort((a, b) => a.acquiredAt - b.acquiredAt)[0];
    if (next === undefined || next.askedAt > release.calledAt) continue;
    gaps.push({ release, next, gap: next.acquiredAt - release.calledAt });
  }
  const byHow = new Map<string, number[]>();
  for (const g of gaps) byHow.set(howCame(g.next), [...(byHow.get(howCame(g.next)) ?? []), g.gap]);
  console.log(
    `hand-offs to a waiter: ${gaps.length}; gap release → next hold p50 ${fmt(
      percentile(
        gaps.map((g) => g.gap),
        0.5,
      ),
    )} ` +
      `p90 ${fmt(
        percentile(
          gaps.map((g) => g.gap),
          0.9,
        ),
      )} p99 ${fmt(
        percentile(
          gaps.map((g) => g.gap),
          0.99,
        ),
      )} ms`,
  );
  for (const [how, list] of byHow) {
    console.log(
      `  ${how.padEnd(22)} ${String(list.length).padStart(4)}: p50 ${fmt(percentile(list, 0.5))} ` +
        `p90 ${fmt(percentile(list, 0.9))} max ${fmt(Math.max(...list))} ms (gap − R mean ${fmt(mean(list) - r)})`,
    );
  }

  // Acquisitions that were not waiting at the release before them: asked after it, found the
  // lock free (or waited a whole other hold). The idle time: their first attempt reached Redis
  // (sent, the latency being on the reply path) after the lock was released.
  const notWaiting = acquisitions.filter(
    (a) => !gaps.some((g) => g.next === a) && a.acquiredAt > started0(acquisitions),
  );
  const idle: number[] = [];
  for (const a of notWaiting) {
    if (howCame(a) !== "free at first attempt") continue;
    const first = a.steps[0];
    const sentAt = first === undefined ? a.askedAt : first.at - first.durationMs;
    const before = sorted.filter((rel) => rel.calledAt <= sentAt).at(-1);
    if (before !== undefined) idle.push(sentAt - before.calledAt);
  }
  console.log(
    `acquisitions not waiting at the release before them: ${notWaiting.length} of ${acquisitions.length}` +
      (idle.length === 0
        ? ""
        : `; ${idle.length} found it free at their first attempt, the lock free before it ` +
          `p50 ${fmt(percentile(idle, 0.5))} mean ${fmt(mean(idle))} max ${fmt(Math.max(...idle))} ms`),
  );
  const howAll = new Map<string, number>();
  for (const a of acquisitions) howAll.set(howCame(a), (howAll.get(howCame(a)) ?? 0) + 1);
  console.log(`how every acquisition came: ${[...howAll].map(([k, n]) => `${k} ${n}`).join(", ")}`);
  const whys = new Map<string, number>();
  for (const a of acquisitions)
    for (const s of a.steps) whys.set(String(s.why), (whys.get(String(s.why)) ?? 0) + 1);
  console.log(`steps by why: ${[...whys].map(([k, n]) => `${k} ${n}`).join(", ")}`);

  const slowest = [...gaps].sort((a, b) => b.gap - a.gap).slice(0, Number(values.slowest));
  if (slowest.length > 0) {
    console.log(
      "slowest hand-offs (gap ms; the winner's steps from its ask: attempt:answer@t(duration →delay why)):",
    );
    for (const g of slowest) {
      console.log(
        `  ${fmt(g.gap).padStart(6)}  c${g.release.contender}→c${g.next.contender} at ${fmt(g.release.calledAt)} ` +
          `(release answered +${fmt(g.release.answeredAt - g.release.calledAt)}), ${howCame(g.next)}, ` +
          `asked ${fmt(g.release.calledAt - g.next.askedAt)} ms before: ${describeSteps(g.next.steps, g.next.askedAt)}`,
      );
    }
  }
}

/** The first grant of the run (the first acquisition waited for nobody). */
function started0(acquisitions: readonly Acquisition[]): number {
  return Math.min(...acquisitions.map((a) => a.acquiredAt));
}

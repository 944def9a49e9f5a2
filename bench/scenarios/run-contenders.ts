/**
 * The measurement shared by the contention scenarios: N contenders, each running K critical
 * sections of hold H on its key, all started at once; every section is timed on the client and
 * every request counted by the backend.
 */
import type { BenchBackend } from "../backend/backend.js";
import { wireDelta } from "../backend/backend.js";
import type { LatencyModel, WireCounts } from "../backend/protocol.js";
import { idealSerialMs, jainIndex, mean, percentile } from "../metrics.js";
import type { Contender, HoldMode, Peer } from "../peers/peer.js";

export interface ContentionPlan {
  readonly peer: Peer;
  readonly latency: LatencyModel;
  /** Uncontended round trip of the peer's transport under `latency`, measured before the run. */
  readonly roundTripMs: number;
  readonly contenders: number;
  /** Key of contender `index`. */
  readonly keyOf: (index: number) => string;
  readonly sectionsPerContender: number;
  /** Hold of every section, or their mean when `holdOf` is given. */
  readonly holdMs: number;
  /**
   * Hold of the run's n-th acquisition (0-based, in the order the locks were granted), so that
   * every library gets the same sequence of holds whoever wins each hand-off. Default: `holdMs`.
   */
  readonly holdOf?: (acquisition: number) => number;
  /** How the holds are drawn, stated in the results when they vary, e.g. "log-normal …". */
  readonly holdModel?: string;
  /** Read or write hold of contender `index`'s section `section`. Default: all writes. */
  readonly modeOf?: (index: number, section: number) => HoldMode;
  /** Stop starting new sections after this long (a run that hits it is marked incomplete). */
  readonly timeLimitMs: number;
  /** Called after each completed section. */
  readonly onSection?: () => void;
}

interface Section {
  readonly contender: number;
  readonly key: string;
  readonly mode: HoldMode;
  readonly askedAt: number;
  readonly acquiredAt: number;
  readonly releaseAt: number;
  readonly releasedAt: number;
}

export interface ContentionResult {
  readonly peer: string;
  readonly label: string;
  readonly transport: string;
  readonly latency: string;
  readonly contenders: number;
  readonly keys: number;
  readonly sectionsPerContender: number;
  /** Hold of every section (its mean when `holdModel` says the holds vary). */
  readonly holdMs: number;
  readonly holdModel?: string;
  readonly acquisitions: number;
  /** Acquisitions the library gave up on (returned false or threw); the section was retried. */
  readonly failures: number;
  readonly firstError?: string;
  /**
   * Times a contender entered a key's critical section while a conflicting hold was inside
   * (a writer with anyone, a reader with a writer). Must be 0.
   */
  readonly overlaps: number;
  /** Share of acquisitions that no earlier-asking contender was still waiting for (FIFO order). */
  readonly fifoShare: number;
  readonly reads: number;
  /** True when the time limit stopped the run before every section ran. */
  readonly incomplete: boolean;
  readonly elapsedMs: number;
  readonly throughputPerSec: number;
  readonly meanHoldMs: number;
  /**
   * R of the ideal bound: the uncontended round trip of the transport under the latency model,
   * measured before the runs (the same for every library of a transport).
   */
  readonly roundTripMs: number;
  /** Mean duration of this run's releases (one request each): the round trip under its load. */
  readonly releaseRoundTripMs: number;
  /** ideal = max over keys of (Σ measured holds on the key + (sections on the key + 1) × R). */
  readonly idealMs: number;
  /** ideal / elapsed. */
  readonly efficiency: number;
  readonly requests: number;
  /** All requests of the run (acquire polls and releases) / successful acquisitions; minimum 2. */
  readonly requestsPerAcquisition: number;
  readonly bytesPerAcquisition: number;
  /**
   * Billed commands per acquisition (what Upstash bills: every command Redis ran, each command
   * a script ran included; INFO commandstats), releases included.
   */
  readonly billedPerAcquisition: number;
  /**
   * Commands the server ran per acquisition, by name, e.g. `{ evalsha: 2.1, blpop: 0.9 }` (REST:
   * from the REST server's counters, which count a blocking pop once it returned).
   */
  readonly commandsPerAcquisition: Readonly<Record<string, number>>;
  /** Release sent → next holder's acquire resolved, when that holder was already waiting. */
  readonly handoffP50Ms: number;
  readonly handoffP99Ms: number;
  readonly waitP50Ms: number;
  readonly waitP99Ms: number;
  readonly worstWaitMs: number;
  /** Jain's index of the contenders' total wait times. */
  readonly jainIndex: number;
  /** Largest single wait / mean wait. */
  readonly maxOverMeanWait: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function runContenders(
  backend: BenchBackend,
  plan: ContentionPlan,
): Promise<ContentionResult> {
  const { peer, contenders: count, sectionsPerContender: k, holdMs } = plan;
  const contenders: Contender[] = [];
  for (let i = 0; i < count; i++) contenders.push(await plan.peer.contender());
  try {
    // Warm up off the clock: connections open, scripts cached, each on a key of its own.
    await Promise.all(
      contenders.map(async (contender, index) => {
        const key = `${plan.keyOf(index)}:warm:${index}`;
        if (await contender.acquire(key)) await contender.release(key);
      }),
    );

    const sections: Section[] = [];
    const inside = new Map<string, { readers: number; writers: number }>();
    let overlaps = 0;
    let failures = 0;
    let firstError: string | undefined;
    let stopped = false;
    let granted = 0;
    const before = await backend.snapshot();
    const start = performance.now();
    const limit = setTimeout(() => {
      stopped = true;
    }, plan.timeLimitMs);

    const work = contenders.map(async (contender, index) => {
      const key = plan.keyOf(index);
      let done = 0;
      while (done < k && !stopped) {
        const mode: HoldMode =
          plan.peer.sharedReads === true ? (plan.modeOf?.(index, done) ?? "write") : "write";
        const askedAt = performance.now();
        let acquired = false;
        try {
          acquired = await contender.acquire(key, mode);
        } catch (error) {
          firstError ??= error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        }
        if (!acquired) {
          failures += 1;
          continue;
        }
        const acquiredAt = performance.now();
        const sectionHoldMs = plan.holdOf?.(granted) ?? holdMs;
        granted += 1;
        const holders = inside.get(key) ?? { readers: 0, writers: 0 };
        inside.set(key, holders);
        if (holders.writers > 0 || (mode === "write" && holders.readers > 0)) overlaps += 1;
        if (mode === "read") holders.readers += 1;
        else holders.writers += 1;
        await sleep(sectionHoldMs);
        if (mode === "read") holders.readers -= 1;
        else holders.writers -= 1;
        const releaseAt = performance.now();
        await contender.release(key);
        sections.push({
          contender: index,
          key,
          mode,
          askedAt,
          acquiredAt,
          releaseAt,
          releasedAt: performance.now(),
        });
        done += 1;
        plan.onSection?.();
      }
    });
    await Promise.all(work);
    clearTimeout(limit);
    const elapsedMs = performance.now() - start;
    const after = await backend.snapshot();
    const wire: WireCounts =
      peer.transport === "REST"
        ? wireDelta(after.rest, before.rest)
        : wireDelta(after.tcp, before.tcp);
    return summarize(plan, sections, wire, {
      billed: after.billed - before.billed,
      elapsedMs,
      failures,
      overlaps,
      incomplete: sections.length < count * k,
      ...(firstError === undefined ? {} : { firstError }),
    });
  } finally {
    await Promise.all(contenders.map((contender) => contender.close()));
  }
}

function summarize(
  plan: ContentionPlan,
  sections: readonly Section[],
  wire: WireCounts,
  run: {
    billed: number;
    elapsedMs: number;
    failures: number;
    overlaps: number;
    incomplete: boolean;
    firstError?: string;
  },
): ContentionResult {
  const acquisitions = sections.length;
  const meanHoldMs = mean(sections.map((s) => s.releaseAt - s.acquiredAt));
  const perKey = new Map<string, Section[]>();
  for (const section of sections) {
    const list = perKey.get(section.key) ?? [];
    list.push(section);
    perKey.set(section.key, list);
  }
  const handoffs: number[] = [];
  let idealMs = 0;
  for (const list of perKey.values()) {
    const holds = list.map((s) => s.releaseAt - s.acquiredAt);
    idealMs = Math.max(idealMs, idealSerialMs(holds, plan.roundTripMs));
    list.sort((a, b) => a.acquiredAt - b.acquiredAt);
    for (let i = 1; i < list.length; i++) {
      const previous = list[i - 1]!;
      const next = list[i]!;
      // Only a real hand-off: the next holder was already waiting when the release went out,
      // and one of the two excluded the other (shared reads overlap, they hand nothing off).
      const exclusive = previous.mode === "write" || next.mode === "write";
      if (exclusive && next.askedAt < previous.releaseAt) {
        handoffs.push(next.acquiredAt - previous.releaseAt);
      }
    }
  }
  const waits = sections.map((s) => s.acquiredAt - s.askedAt);
  const waitByContender = new Array<number>(plan.contenders).fill(0);
  for (const section of sections) {
    waitByContender[section.contender] =
      (waitByContender[section.contender] ?? 0) + section.acquiredAt - section.askedAt;
  }
  // FIFO: nobody who asked earlier (for the same key) got the lock later.
  let inOrder = 0;
  for (const list of perKey.values()) {
    for (const section of list) {
      const overtaken = list.some(
        (other) => other.askedAt < section.askedAt && other.acquiredAt > section.acquiredAt,
      );
      if (!overtaken) inOrder += 1;
    }
  }
  const meanWait = mean(waits);
  return {
    peer: plan.peer.id,
    label: plan.peer.label,
    transport: plan.peer.transport,
    latency: plan.latency.name,
    contenders: plan.contenders,
    keys: perKey.size,
    sectionsPerContender: plan.sectionsPerContender,
    holdMs: plan.holdMs,
    ...(plan.holdModel === undefined ? {} : { holdModel: plan.holdModel }),
    acquisitions,
    failures: run.failures,
    ...(run.firstError === undefined ? {} : { firstError: run.firstError }),
    overlaps: run.overlaps,
    fifoShare: acquisitions === 0 ? Number.NaN : inOrder / acquisitions,
    reads: sections.filter((s) => s.mode === "read").length,
    incomplete: run.incomplete,
    elapsedMs: run.elapsedMs,
    throughputPerSec: (acquisitions / run.elapsedMs) * 1000,
    meanHoldMs,
    roundTripMs: plan.roundTripMs,
    releaseRoundTripMs: mean(sections.map((s) => s.releasedAt - s.releaseAt)),
    idealMs,
    efficiency: idealMs / run.elapsedMs,
    requests: wire.requests,
    requestsPerAcquisition: wire.requests / acquisitions,
    bytesPerAcquisition: (wire.bytesIn + wire.bytesOut) / acquisitions,
    billedPerAcquisition: run.billed / acquisitions,
    commandsPerAcquisition: Object.fromEntries(
      Object.entries(wire.commandsByName).map(([name, count]) => [name, count / acquisitions]),
    ),
    handoffP50Ms: percentile(handoffs, 0.5),
    handoffP99Ms: percentile(handoffs, 0.99),
    waitP50Ms: percentile(waits, 0.5),
    waitP99Ms: percentile(waits, 0.99),
    worstWaitMs: Math.max(...waits),
    jainIndex: jainIndex(waitByContender),
    maxOverMeanWait: meanWait > 0 ? Math.max(...waits) / meanWait : 1,
  };
}

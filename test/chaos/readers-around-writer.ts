/**
 * Read holds that end early or crash around a parked writer (issue 41 case 8; the `rw-sub` kind).
 * Every `readersAroundWriterEveryMs` on average, an actor outside the sections takes two read
 * holds on one key through two isolates' (faulty) clients: a live reader with a lease far past
 * any park, and one with three of the run's leases whose holder then crashes (it never releases, nothing
 * renews it). Once a writer of the workload waits on that key (it parks: writers wait behind
 * live read holds), the live reader releases early. The lock is then free when the crashed
 * reader's lease ends; push.md: "the writer's park ends just after the last read lease would" —
 * the liveness check sees whether the writer holds by then (plus its base bound).
 */
import { createPrng } from "../../dev/rest/faults.js";
import { LockClient } from "../../src/index.js";
import { sleep as sleepMs } from "../../src/platform.js";
import type { ChaosConfig } from "./config.js";
import type { DeadHolderWatch } from "./dead-holders.js";
import type { Journal } from "./journal.js";
import type { ChaosIsolate, ChaosPrimitive } from "./primitive.js";

/** The live reader's lease, in the run's leases: longer than any park. */
const LIVE_READER_LEASES = 20;
/**
 * The crashing reader's lease, in the run's leases: it outlasts the live reader's early release
 * (so that release is not the last read end, which hands over at once) by some hundred ms.
 */
const CRASHING_READER_LEASES = 3;
/** How long a round waits for a writer to come and park before it lets its readers go. */
const WRITER_WAIT_MS = 1_000;
/** How long after a writer started waiting the live reader releases (the writer has parked). */
const RELEASE_AFTER_WRITER_MS = 100;

export interface ReaderCounts {
  /** Rounds whose two read holds were taken. */
  rounds: number;
  /** Of those, rounds in which a writer waited when the live reader released early. */
  aroundAWriter: number;
}

export function startReadersAroundWriter(
  primitive: ChaosPrimitive,
  journal: Journal,
  isolates: readonly ChaosIsolate[],
  keys: readonly string[],
  config: ChaosConfig,
  bury: (watch: DeadHolderWatch) => void,
): { readonly counts: ReaderCounts; stop(): Promise<void> } {
  const counts: ReaderCounts = { rounds: 0, aroundAWriter: 0 };
  const readHold = primitive.readHold;
  const random = createPrng(config.seed ^ 0x0eade5);
  let stopped = false;
  let wake = () => {};
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const writerWaiting = (key: string, since: number) =>
    journal.waits.find(
      (wait) =>
        wait.key === key &&
        !wait.shared &&
        wait.startedAt >= since &&
        wait.endedAt === Number.POSITIVE_INFINITY &&
        wait.abortedAt === Number.POSITIVE_INFINITY,
    );
  const round = async () => {
    const key = keys[Math.floor(random() * keys.length)] ?? keys[0]!;
    const pick = () => isolates[Math.floor(random() * isolates.length)] ?? isolates[0]!;
    const [liveIsolate, crashIsolate] = [pick(), pick()];
    const live = LockClient.newOwner();
    const crashing = LockClient.newOwner();
    crashIsolate.track(crashing);
    const since = Date.now();
    // Readers wait behind a waiting writer (writer preference): a round that cannot start soon
    // is skipped.
    const [liveHold, crashSent] = await Promise.all([
      readHold!(liveIsolate, key, live, LIVE_READER_LEASES * config.leaseMs, 200).catch(
        () => undefined,
      ),
      (async () => {
        const sentAt = Date.now();
        await readHold!(
          crashIsolate,
          key,
          crashing,
          CRASHING_READER_LEASES * config.leaseMs,
          200,
        ).catch(() => {});
        return sentAt;
      })(),
    ]);
    // The crashing reader's hold (if its acquire took one, answered or not) ends with its lease
    // after its last request settled: watched as a dead holder's.
    crashIsolate.crash(crashing);
    const diedAt = Date.now();
    const boundOf = () =>
      Math.max(
        crashSent,
        ...crashIsolate.requestsOf(crashing).map((request) => request.settledAt ?? Infinity),
      ) +
      CRASHING_READER_LEASES * config.leaseMs;
    const record = {
      key,
      owner: crashing,
      cause: "crash" as const,
      diedAt,
      boundAt: boundOf(),
      lastSeenHeldAt: null,
      freedAt: null,
    };
    journal.dead.push(record);
    bury({ record, boundOf });
    if (liveHold === undefined) return;
    counts.rounds += 1;
    let writer = writerWaiting(key, since);
    const until = Date.now() + WRITER_WAIT_MS;
    while (writer === undefined && Date.now() < until && !stopped) {
      await sleepMs(10);
      writer = writerWaiting(key, since);
    }
    if (writer !== undefined) {
      await sleepMs(RELEASE_AFTER_WRITER_MS);
      if (writer.endedAt === Number.POSITIVE_INFINITY) counts.aroundAWriter += 1;
    }
    // A release that fails leaves the hold to its lease: the writer then waits for that, as
    // documented; three tries, as the sections do.
    for (let attempt = 0; attempt < 3; attempt++) {
      if (
        await liveHold.release().then(
          () => true,
          () => false,
        )
      )
        break;
    }
  };
  const pending = new Set<Promise<void>>();
  const loop = (async () => {
    if (readHold === undefined || config.readersAroundWriterEveryMs <= 0) return;
    await pause(config.readersAroundWriterEveryMs / 2);
    while (!stopped) {
      const running = round().finally(() => pending.delete(running));
      pending.add(running);
      await pause(config.readersAroundWriterEveryMs * (0.5 + random()));
    }
  })();
  return {
    counts,
    async stop() {
      stopped = true;
      wake();
      await loop;
      await Promise.all([...pending]);
    },
  };
}

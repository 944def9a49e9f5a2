/**
 * The invariants of a chaos run, as pure functions of its journal: each says how many cases it
 * checked and how many broke it, with a few examples to start debugging from.
 */
import type {
  DeadHolderRecord,
  Journal,
  ReleaseCheck,
  SectionRecord,
  TokenRecord,
  WriteRecord,
} from "./journal.js";

export interface InvariantResult {
  readonly name: string;
  readonly checked: number;
  readonly violations: number;
  readonly examples: readonly string[];
}

const MAX_EXAMPLES = 5;

class Tally {
  checked = 0;
  violations = 0;
  readonly examples: string[] = [];

  constructor(readonly name: string) {}

  check(ok: boolean, describe: () => string): void {
    this.checked += 1;
    if (ok) return;
    this.violations += 1;
    if (this.examples.length < MAX_EXAMPLES) this.examples.push(describe());
  }

  result(): InvariantResult {
    return {
      name: this.name,
      checked: this.checked,
      violations: this.violations,
      examples: this.examples,
    };
  }
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/**
 * No more than `capacity` sections of one key were inside their valid interval
 * [start, validEnd) at once. A sweep over start/end events per key; touching intervals are fine.
 */
export function checkExclusion(
  sections: readonly SectionRecord[],
  capacity: number,
): InvariantResult {
  const tally = new Tally("no overlapping valid critical sections");
  for (const [key, group] of groupBy(sections, (section) => section.key)) {
    const events: { at: number; delta: 1 | -1; section: SectionRecord }[] = [];
    for (const section of group) {
      if (section.validEnd <= section.start) {
        tally.check(true, () => "");
        continue;
      }
      events.push({ at: section.start, delta: 1, section });
      events.push({ at: section.validEnd, delta: -1, section });
    }
    // Ends before starts at the same instant: [a, b) and [b, c) do not overlap.
    events.sort((a, b) => a.at - b.at || a.delta - b.delta);
    const inside = new Set<SectionRecord>();
    for (const event of events) {
      if (event.delta === -1) {
        inside.delete(event.section);
        continue;
      }
      inside.add(event.section);
      const others = [...inside].filter((other) => other !== event.section);
      tally.check(
        inside.size <= capacity,
        () =>
          `key ${key}: owner ${event.section.owner.slice(0, 8)} (token ${event.section.token}) started at ` +
          `${event.section.start} inside ${others
            .map((o) => `${o.owner.slice(0, 8)} [${o.start}, ${o.validEnd}) token ${o.token}`)
            .join(", ")}`,
      );
    }
  }
  return tally.result();
}

/**
 * Every write the fenced store accepted carried a token strictly larger than the last accepted
 * one, and no token of a key was ever handed to two owners.
 */
export function checkFencing(
  writes: readonly WriteRecord[],
  tokens: readonly TokenRecord[],
): InvariantResult {
  const tally = new Tally("fencing tokens strictly increase");
  for (const write of writes) {
    if (write.status !== "accepted") continue;
    tally.check(
      write.token > write.previousToken,
      () =>
        `key ${write.key}: write with token ${write.token} accepted after token ${write.previousToken}`,
    );
  }
  const ownerOf = new Map<string, string>();
  for (const { key, owner, token } of tokens) {
    const id = `${key}\n${token}`;
    const first = ownerOf.get(id);
    if (first === undefined) ownerOf.set(id, owner);
    tally.check(
      first === undefined || first === owner,
      () => `key ${key}: token ${token} handed to ${first?.slice(0, 8)} and ${owner.slice(0, 8)}`,
    );
  }
  return tally.result();
}

/**
 * No hold count drifted: right after a clean release the owner held nothing, and once every dead
 * holder's lease had passed no key was left held.
 */
export function checkHoldCounts(
  releases: readonly ReleaseCheck[],
  leftHeld: readonly { key: string; owners: readonly string[] }[],
): InvariantResult {
  const tally = new Tally("no hold count drift");
  for (const release of releases) {
    tally.check(
      !release.stillHeld,
      () => `key ${release.key}: owner ${release.owner.slice(0, 8)} still held it after release`,
    );
  }
  for (const { key, owners } of leftHeld) {
    tally.check(
      owners.length === 0,
      () =>
        `key ${key}: held by ${owners.map((o) => o.slice(0, 8)).join(", ")} after all leases passed`,
    );
  }
  return tally.result();
}

/**
 * Every dead holder's lock came free by its bound (its last arming request settled + its lease),
 * give or take `toleranceMs` for clock granularity.
 */
export function checkDeadHolders(
  dead: readonly DeadHolderRecord[],
  toleranceMs: number,
): InvariantResult {
  const tally = new Tally("dead holders' locks came free within their bound");
  for (const holder of dead) {
    const late =
      holder.lastSeenHeldAt !== null && holder.lastSeenHeldAt > holder.boundAt + toleranceMs;
    tally.check(
      holder.freedAt !== null && !late,
      () =>
        `key ${holder.key}: ${holder.cause} holder ${holder.owner.slice(0, 8)} ` +
        (holder.freedAt === null
          ? "was never seen free"
          : `still held ${(holder.lastSeenHeldAt ?? 0) - holder.boundAt} ms past its bound`),
    );
  }
  return tally.result();
}

/** No promise rejection went unhandled during the run. */
export function checkUnhandled(unhandledRejections: number): InvariantResult {
  return {
    name: "no unhandled rejection",
    checked: 1,
    violations: unhandledRejections,
    examples: unhandledRejections > 0 ? [`${unhandledRejections} unhandled rejections`] : [],
  };
}

/** Every operation ended, with a result or an edgelock error (a typed one, with a stable name). */
export function checkOperationsEnded(journal: Journal): InvariantResult {
  const violations = journal.untypedErrors.length + journal.hung;
  const examples = [...journal.untypedErrors.slice(0, MAX_EXAMPLES)];
  if (journal.hung > 0) examples.push(`${journal.hung} operations hung`);
  return {
    name: "every operation ended with a result or a typed error",
    checked: journal.totalOperations,
    violations,
    examples,
  };
}

/** The REST token appeared in no error message, cause or event. */
export function checkSecrets(journal: Journal, inspected: number): InvariantResult {
  return {
    name: "REST token in no error or event",
    checked: inspected,
    violations: journal.secretLeaks.length,
    examples: journal.secretLeaks.slice(0, MAX_EXAMPLES),
  };
}

/** All invariants of a finished run. */
export function checkAll(
  journal: Journal,
  options: {
    capacity: number;
    toleranceMs: number;
    leftHeld: readonly { key: string; owners: readonly string[] }[];
    inspectedForSecrets: number;
  },
): InvariantResult[] {
  return [
    checkExclusion(journal.sections, options.capacity),
    checkFencing(journal.writes, journal.tokens),
    checkHoldCounts(journal.releaseChecks, options.leftHeld),
    checkDeadHolders(journal.dead, options.toleranceMs),
    checkUnhandled(journal.unhandledRejections),
    checkOperationsEnded(journal),
    checkSecrets(journal, options.inspectedForSecrets),
  ];
}

/** A stream: entries ordered by ID, plus consumer groups with their pending-entry lists. */

export interface StreamId {
  readonly ms: bigint;
  readonly seq: bigint;
}

export const ZERO_ID: StreamId = { ms: 0n, seq: 0n };
export const UINT64_MAX = 2n ** 64n - 1n;
export const MAX_ID: StreamId = { ms: UINT64_MAX, seq: UINT64_MAX };

export function compareIds(a: StreamId, b: StreamId): number {
  if (a.ms !== b.ms) return a.ms < b.ms ? -1 : 1;
  if (a.seq !== b.seq) return a.seq < b.seq ? -1 : 1;
  return 0;
}

export const idText = (id: StreamId): string => `${id.ms}-${id.seq}`;

export interface StreamEntry {
  readonly id: StreamId;
  /** field, value, field, value, ... */
  readonly fields: readonly string[];
  /** Which 100-entry macro node Redis would have put it in (for approximate trimming). */
  readonly node: number;
}

export interface PendingEntry {
  readonly id: StreamId;
  consumer: string;
  deliveredAt: number;
  deliveries: number;
}

export interface Consumer {
  readonly name: string;
  seenAt: number;
  /** Pending IDs (text form) owned by this consumer. */
  readonly pending: Set<string>;
}

export interface ConsumerGroup {
  lastId: StreamId;
  /** Logical read counter; null when Redis would consider it invalid. */
  entriesRead: number | null;
  /** Pending entries by ID text, kept in ID order by `pendingInOrder`. */
  readonly pending: Map<string, PendingEntry>;
  readonly consumers: Map<string, Consumer>;
}

/** Entries per macro node, Redis's stream-node-max-entries default. */
export const NODE_MAX_ENTRIES = 100;

export class Stream {
  entries: StreamEntry[] = [];
  lastId: StreamId = ZERO_ID;
  maxDeletedId: StreamId = ZERO_ID;
  entriesAdded = 0;
  readonly groups = new Map<string, ConsumerGroup>();

  get length(): number {
    return this.entries.length;
  }

  append(id: StreamId, fields: readonly string[]): void {
    this.entries.push({ id, fields, node: Math.floor(this.entriesAdded / NODE_MAX_ENTRIES) });
    this.lastId = id;
    this.entriesAdded++;
  }

  /** Index of the first entry with ID >= `id`. */
  lowerBound(id: StreamId): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareIds(this.entries[mid]!.id, id) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  find(id: StreamId): StreamEntry | undefined {
    const entry = this.entries[this.lowerBound(id)];
    return entry !== undefined && compareIds(entry.id, id) === 0 ? entry : undefined;
  }

  /** Entries with start <= ID <= end, ascending. */
  range(start: StreamId, end: StreamId): StreamEntry[] {
    const out: StreamEntry[] = [];
    for (let i = this.lowerBound(start); i < this.entries.length; i++) {
      const entry = this.entries[i]!;
      if (compareIds(entry.id, end) > 0) break;
      out.push(entry);
    }
    return out;
  }

  delete(id: StreamId): boolean {
    const at = this.lowerBound(id);
    const entry = this.entries[at];
    if (entry === undefined || compareIds(entry.id, id) !== 0) return false;
    this.entries.splice(at, 1);
    if (compareIds(id, this.maxDeletedId) > 0) this.maxDeletedId = id;
    return true;
  }

  /** Redis's streamRangeHasTombstones from `start` to the end. */
  hasTombstonesAfter(start: StreamId): boolean {
    if (this.length === 0 || compareIds(this.maxDeletedId, ZERO_ID) === 0) return false;
    return compareIds(start, this.maxDeletedId) <= 0;
  }

  /** Redis's streamEstimateDistanceFromFirstEverEntry; null when unknown. */
  estimateReads(id: StreamId): number | null {
    if (this.entriesAdded === 0) return 0;
    if (this.length === 0 && compareIds(id, this.lastId) < 1) return this.entriesAdded;
    const last = compareIds(id, this.lastId);
    if (last === 0) return this.entriesAdded;
    if (last > 0) return null;
    const first = this.entries[0]!.id;
    const idVsFirst = compareIds(id, first);
    if (compareIds(this.maxDeletedId, ZERO_ID) === 0 || compareIds(this.maxDeletedId, first) < 0) {
      if (idVsFirst < 0) return this.entriesAdded - this.length;
      if (idVsFirst === 0) return this.entriesAdded - this.length + 1;
    }
    return null;
  }

  /** The lag XINFO GROUPS reports, or null when Redis cannot tell. */
  lag(group: ConsumerGroup): number | null {
    if (this.entriesAdded === 0) return 0;
    if (group.entriesRead !== null && !this.hasTombstonesAfter(group.lastId)) {
      return this.entriesAdded - group.entriesRead;
    }
    const read = this.estimateReads(group.lastId);
    return read === null ? null : this.entriesAdded - read;
  }

  /** Advances a group past `id` after delivering it, keeping its read counter like Redis. */
  markDelivered(group: ConsumerGroup, id: StreamId): void {
    if (compareIds(id, group.lastId) <= 0) return;
    if (group.entriesRead !== null && !this.hasTombstonesAfter(id)) group.entriesRead++;
    else if (this.entriesAdded > 0) group.entriesRead = this.estimateReads(id);
    group.lastId = id;
  }

  clone(): Stream {
    const copy = new Stream();
    copy.entries = [...this.entries];
    copy.lastId = this.lastId;
    copy.maxDeletedId = this.maxDeletedId;
    copy.entriesAdded = this.entriesAdded;
    for (const [name, group] of this.groups) {
      const pending = new Map<string, PendingEntry>();
      for (const [key, entry] of group.pending) pending.set(key, { ...entry });
      const consumers = new Map<string, Consumer>();
      for (const [cname, consumer] of group.consumers) {
        consumers.set(cname, { ...consumer, pending: new Set(consumer.pending) });
      }
      copy.groups.set(name, { ...group, pending, consumers });
    }
    return copy;
  }
}

/** Pending entries of a group in ID order. */
export function pendingInOrder(group: ConsumerGroup): PendingEntry[] {
  return [...group.pending.values()].sort((a, b) => compareIds(a.id, b.id));
}

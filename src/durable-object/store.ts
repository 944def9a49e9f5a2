/**
 * The watchdog's SQLite state: leases it renews and, for a while, why it stopped, one row per
 * hold (key, owner, fencing token; the keys of different kinds differ). Writes name their
 * registration, so an alarm awaiting Redis cannot overwrite a registration that changed
 * meanwhile.
 */
import type { HoldKind } from "../watchdog/renewer.js";
import {
  type EndedRegistration,
  type EndReason,
  isHoldKind,
  type WatchdogStatus,
} from "./messages.js";
import type { SqlLike, SqlValue } from "./platform.js";
import { EARLY_RENEWAL_DIVISOR } from "./schedule.js";

export interface LeaseRecord {
  /** Which script renews the hold (see RegisterMessage.kind). */
  readonly kind: HoldKind;
  readonly key: string;
  readonly owner: string;
  /** The hold this lease is: renewals name it (see `lock.extend`). */
  readonly fencingToken: number;
  readonly registration: string;
  readonly leaseMs: number;
  readonly registeredAt: number;
  readonly holdUntil: number;
  readonly heartbeatTimeoutMs: number | null;
  readonly lastHeartbeatAt: number;
  /** Object clock: when the lease was last surely set (renewal sent, or the holder's acquire). */
  readonly confirmedAt: number;
  readonly renewals: number;
  readonly lastRenewedAt: number | null;
  readonly nextRenewalAt: number;
  readonly failures: number;
}

const LEASES = "edgelock_watchdog_leases_v2";
const ENDINGS = "edgelock_watchdog_endings_v2";

// The v1 tables knew leases by (key, owner) only: renewing them without a token is the bug v2
// fixes, so they go (their locks expire within a lease; their holders hear "unknown").
const SCHEMA = `
DROP TABLE IF EXISTS edgelock_watchdog_leases_v1;
DROP TABLE IF EXISTS edgelock_watchdog_endings_v1;
CREATE TABLE IF NOT EXISTS ${LEASES} (
  lock_key TEXT NOT NULL,
  owner TEXT NOT NULL,
  fencing_token INTEGER NOT NULL,
  registration TEXT NOT NULL,
  lease_ms INTEGER NOT NULL,
  registered_at INTEGER NOT NULL,
  hold_until INTEGER NOT NULL,
  heartbeat_timeout_ms INTEGER,
  last_heartbeat_at INTEGER NOT NULL,
  confirmed_at INTEGER NOT NULL,
  renewals INTEGER NOT NULL,
  last_renewed_at INTEGER,
  next_renewal_at INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  kind TEXT NOT NULL DEFAULT 'lock',
  PRIMARY KEY (lock_key, owner, fencing_token)
);
CREATE INDEX IF NOT EXISTS ${LEASES}_due ON ${LEASES} (next_renewal_at);
CREATE TABLE IF NOT EXISTS ${ENDINGS} (
  lock_key TEXT NOT NULL,
  owner TEXT NOT NULL,
  fencing_token INTEGER NOT NULL,
  reason TEXT NOT NULL,
  detail TEXT NOT NULL,
  ended_at INTEGER NOT NULL,
  renewals INTEGER NOT NULL,
  PRIMARY KEY (lock_key, owner, fencing_token)
);`;

/**
 * Leases tables made before holds had a kind get the column; their rows were all registered
 * as locks, the only kind renewed then, and keep being renewed as such.
 */
const KIND_COLUMN = `ALTER TABLE ${LEASES} ADD COLUMN kind TEXT NOT NULL DEFAULT 'lock'`;

function integer(row: Record<string, unknown>, column: string): number {
  const value = row[column];
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new Error(`LockWatchdog storage: column ${column} holds ${String(value)}`);
  }
  return value;
}

function integerOrNull(row: Record<string, unknown>, column: string): number | null {
  return row[column] === null ? null : integer(row, column);
}

function text(row: Record<string, unknown>, column: string): string {
  const value = row[column];
  if (typeof value !== "string") {
    throw new Error(`LockWatchdog storage: column ${column} holds ${String(value)}`);
  }
  return value;
}

function holdKind(row: Record<string, unknown>): HoldKind {
  const value = text(row, "kind");
  if (!isHoldKind(value)) throw new Error(`LockWatchdog storage: column kind holds ${value}`);
  return value;
}

function leaseFrom(row: Record<string, unknown>): LeaseRecord {
  return {
    kind: holdKind(row),
    key: text(row, "lock_key"),
    owner: text(row, "owner"),
    fencingToken: integer(row, "fencing_token"),
    registration: text(row, "registration"),
    leaseMs: integer(row, "lease_ms"),
    registeredAt: integer(row, "registered_at"),
    holdUntil: integer(row, "hold_until"),
    heartbeatTimeoutMs: integerOrNull(row, "heartbeat_timeout_ms"),
    lastHeartbeatAt: integer(row, "last_heartbeat_at"),
    confirmedAt: integer(row, "confirmed_at"),
    renewals: integer(row, "renewals"),
    lastRenewedAt: integerOrNull(row, "last_renewed_at"),
    nextRenewalAt: integer(row, "next_renewal_at"),
    failures: integer(row, "failures"),
  };
}

function endingFrom(row: Record<string, unknown>): EndedRegistration {
  return {
    key: text(row, "lock_key"),
    owner: text(row, "owner"),
    fencingToken: integer(row, "fencing_token"),
    reason: text(row, "reason") as EndReason,
    detail: text(row, "detail"),
    endedAt: integer(row, "ended_at"),
    renewals: integer(row, "renewals"),
  };
}

/** The status message of a lease, an ending, or neither (of hold `fencingToken`, if named). */
export function statusOf(
  key: string,
  owner: string,
  fencingToken: number | null,
  lease: LeaseRecord | undefined,
  ending: EndedRegistration | undefined,
): WatchdogStatus {
  if (lease) {
    // The key tells the kind; the answer keeps the shape holders of every version read.
    const { registration: _, confirmedAt: __, kind: ___, ...shown } = lease;
    return { state: "renewing", ...shown };
  }
  if (ending) return { state: "ended", ...ending };
  return { state: "unknown", key, owner, fencingToken };
}

/** Rows of hold `fencingToken` of (key, owner), or, for null, of its latest hold. */
function holdFilter(fencingToken: number | null): { where: string; bindings: SqlValue[] } {
  return fencingToken === null
    ? { where: "ORDER BY fencing_token DESC LIMIT 1", bindings: [] }
    : { where: "AND fencing_token = ?", bindings: [fencingToken] };
}

export class LeaseStore {
  #schemaReady = false;

  constructor(private readonly sql: SqlLike) {}

  #exec(query: string, ...bindings: SqlValue[]) {
    if (!this.#schemaReady) {
      this.sql.exec(SCHEMA).toArray();
      const columns = this.sql.exec(`PRAGMA table_info(${LEASES})`).toArray();
      if (!columns.some((column) => column.name === "kind")) this.sql.exec(KIND_COLUMN).toArray();
      this.#schemaReady = true;
    }
    return this.sql.exec(query, ...bindings);
  }

  /** Runs a write to its end; the number of rows it wrote. */
  #write(query: string, ...bindings: SqlValue[]): number {
    const cursor = this.#exec(query, ...bindings);
    cursor.toArray();
    return cursor.rowsWritten;
  }

  /** After `storage.deleteAll()` the tables are gone; the next use creates them again. */
  forgetSchema(): void {
    this.#schemaReady = false;
  }

  /** Inserts or replaces the registration of the hold (key, owner, token); forgets its ending. */
  put(lease: LeaseRecord): void {
    this.#write(
      `INSERT OR REPLACE INTO ${LEASES} (kind, lock_key, owner, fencing_token, registration,
        lease_ms, registered_at, hold_until, heartbeat_timeout_ms, last_heartbeat_at,
        confirmed_at, renewals, last_renewed_at, next_renewal_at, failures)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      lease.kind,
      lease.key,
      lease.owner,
      lease.fencingToken,
      lease.registration,
      lease.leaseMs,
      lease.registeredAt,
      lease.holdUntil,
      lease.heartbeatTimeoutMs,
      lease.lastHeartbeatAt,
      lease.confirmedAt,
      lease.renewals,
      lease.lastRenewedAt,
      lease.nextRenewalAt,
      lease.failures,
    );
    this.#write(
      `DELETE FROM ${ENDINGS} WHERE lock_key = ? AND owner = ? AND fencing_token = ?`,
      lease.key,
      lease.owner,
      lease.fencingToken,
    );
  }

  /** The lease of hold `fencingToken` of (key, owner); null: of its latest hold. */
  get(key: string, owner: string, fencingToken: number | null): LeaseRecord | undefined {
    const row = this.#holdRow(LEASES, key, owner, fencingToken);
    return row === undefined ? undefined : leaseFrom(row);
  }

  /** Every lease of (key, owner), whatever the hold. */
  leasesOf(key: string, owner: string): LeaseRecord[] {
    return this.#exec(
      `SELECT * FROM ${LEASES} WHERE lock_key = ? AND owner = ? ORDER BY fencing_token`,
      key,
      owner,
    )
      .toArray()
      .map(leaseFrom);
  }

  ending(key: string, owner: string, fencingToken: number | null): EndedRegistration | undefined {
    const row = this.#holdRow(ENDINGS, key, owner, fencingToken);
    return row === undefined ? undefined : endingFrom(row);
  }

  /** The row of `table` for hold `fencingToken` of (key, owner); null: its latest hold. */
  #holdRow(table: string, key: string, owner: string, fencingToken: number | null) {
    const hold = holdFilter(fencingToken);
    const [row] = this.#exec(
      `SELECT * FROM ${table} WHERE lock_key = ? AND owner = ? ${hold.where}`,
      key,
      owner,
      ...hold.bindings,
    ).toArray();
    return row;
  }

  /**
   * The status of hold `fencingToken` of (key, owner); null: of the latest hold the object knows
   * (the highest token, renewing or ended).
   */
  status(key: string, owner: string, fencingToken: number | null): WatchdogStatus {
    const lease = this.get(key, owner, fencingToken);
    const ending = this.ending(key, owner, fencingToken);
    if (fencingToken === null && lease && ending) {
      // Both kinds exist for different holds: the later hold is the one asked about.
      return lease.fencingToken > ending.fencingToken
        ? statusOf(key, owner, null, lease, undefined)
        : statusOf(key, owner, null, undefined, ending);
    }
    return statusOf(key, owner, fencingToken, lease, ending);
  }

  /** Leases whose renewal is due at `now` (or within a sixth of their lease), earliest first. */
  due(now: number): LeaseRecord[] {
    return this.#exec(
      `SELECT * FROM ${LEASES} WHERE next_renewal_at - lease_ms / ${EARLY_RENEWAL_DIVISOR} <= ?
       ORDER BY next_renewal_at`,
      now,
    )
      .toArray()
      .map(leaseFrom);
  }

  /** Every lease and ending, for inspection. */
  list(): WatchdogStatus[] {
    const order = "ORDER BY lock_key, owner, fencing_token";
    const leases = this.#exec(`SELECT * FROM ${LEASES} ${order}`).toArray().map(leaseFrom);
    const endings = this.#exec(`SELECT * FROM ${ENDINGS} ${order}`).toArray().map(endingFrom);
    return [
      ...leases.map((lease) => statusOf(lease.key, lease.owner, null, lease, undefined)),
      ...endings.map((ending) => statusOf(ending.key, ending.owner, null, undefined, ending)),
    ];
  }

  /** Moves the next renewal of this registration; false when it is no longer registered. */
  reschedule(lease: LeaseRecord, nextRenewalAt: number): boolean {
    return this.#updateRegistration(lease, "next_renewal_at = ?", nextRenewalAt) > 0;
  }

  renewed(lease: LeaseRecord, sentAt: number, nextRenewalAt: number): void {
    this.#updateRegistration(
      lease,
      `renewals = renewals + 1, last_renewed_at = ?, confirmed_at = ?, next_renewal_at = ?,
         failures = 0`,
      sentAt,
      sentAt,
      nextRenewalAt,
    );
  }

  failed(lease: LeaseRecord, nextRenewalAt: number): void {
    this.#updateRegistration(lease, "failures = failures + 1, next_renewal_at = ?", nextRenewalAt);
  }

  /** Records a heartbeat of this registration (of one hold); false when it is no longer there. */
  heartbeat(lease: LeaseRecord, now: number): boolean {
    return this.#updateRegistration(lease, "last_heartbeat_at = ?", now) > 0;
  }

  /** Sets `assignments` on this very registration of the lease; the number of rows written. */
  #updateRegistration(lease: LeaseRecord, assignments: string, ...values: SqlValue[]): number {
    return this.#write(
      `UPDATE ${LEASES} SET ${assignments}
       WHERE lock_key = ? AND owner = ? AND fencing_token = ? AND registration = ?`,
      ...values,
      lease.key,
      lease.owner,
      lease.fencingToken,
      lease.registration,
    );
  }

  /**
   * Stops renewing hold `fencingToken` of (key, owner) — only `registration` when given — and,
   * when `ending` is given, remembers why. Returns the removed lease, if any.
   */
  remove(
    key: string,
    owner: string,
    fencingToken: number,
    registration: string | null,
    ending?: { reason: EndReason; detail: string; at: number },
  ): LeaseRecord | undefined {
    const lease = this.get(key, owner, fencingToken);
    if (!lease || (registration !== null && lease.registration !== registration)) return undefined;
    this.#write(
      `DELETE FROM ${LEASES}
       WHERE lock_key = ? AND owner = ? AND fencing_token = ? AND registration = ?`,
      key,
      owner,
      fencingToken,
      lease.registration,
    );
    if (ending) {
      this.#write(
        `INSERT OR REPLACE INTO ${ENDINGS} (lock_key, owner, fencing_token, reason, detail,
           ended_at, renewals)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
        key,
        owner,
        fencingToken,
        ending.reason,
        ending.detail,
        ending.at,
        lease.renewals,
      );
    }
    return lease;
  }

  /** Forgets the ending of hold `fencingToken` of (key, owner), if one was recorded. */
  forgetEnding(key: string, owner: string, fencingToken: number): void {
    this.#write(
      `DELETE FROM ${ENDINGS} WHERE lock_key = ? AND owner = ? AND fencing_token = ?`,
      key,
      owner,
      fencingToken,
    );
  }

  /** Forgets endings older than `retentionMs`. */
  prune(now: number, retentionMs: number): void {
    this.#write(`DELETE FROM ${ENDINGS} WHERE ended_at <= ?`, now - retentionMs);
  }

  /**
   * When the object must wake next: the earliest renewal, else the moment the oldest ending may
   * be forgotten, else never (null: the object holds nothing).
   */
  nextWakeAt(retentionMs: number): number | null {
    const [row] = this.#exec(
      `SELECT (SELECT MIN(next_renewal_at) FROM ${LEASES}) AS renewal,
              (SELECT MIN(ended_at) FROM ${ENDINGS}) AS ended`,
    ).toArray();
    const renewal = row ? integerOrNull(row, "renewal") : null;
    if (renewal !== null) return renewal;
    const ended = row ? integerOrNull(row, "ended") : null;
    return ended === null ? null : ended + retentionMs;
  }
}

/**
 * The watchdog's durable state, in the object's SQLite: the leases it renews and, for a while,
 * why it stopped renewing others. Every write names the registration it applies to, so that an
 * alarm that was awaiting Redis cannot overwrite a registration that changed meanwhile (the
 * object serves other requests while an alarm awaits its renewals).
 */
import type { EndedRegistration, EndReason, WatchdogStatus } from "./messages.js";
import type { SqlLike, SqlValue } from "./platform.js";
import { EARLY_RENEWAL_DIVISOR } from "./schedule.js";

export interface LeaseRecord {
  readonly key: string;
  readonly owner: string;
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

const LEASES = "edgelock_watchdog_leases_v1";
const ENDINGS = "edgelock_watchdog_endings_v1";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ${LEASES} (
  lock_key TEXT NOT NULL,
  owner TEXT NOT NULL,
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
  PRIMARY KEY (lock_key, owner)
);
CREATE INDEX IF NOT EXISTS ${LEASES}_due ON ${LEASES} (next_renewal_at);
CREATE TABLE IF NOT EXISTS ${ENDINGS} (
  lock_key TEXT NOT NULL,
  owner TEXT NOT NULL,
  reason TEXT NOT NULL,
  detail TEXT NOT NULL,
  ended_at INTEGER NOT NULL,
  renewals INTEGER NOT NULL,
  PRIMARY KEY (lock_key, owner)
);`;

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

function leaseFrom(row: Record<string, unknown>): LeaseRecord {
  return {
    key: text(row, "lock_key"),
    owner: text(row, "owner"),
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
    reason: text(row, "reason") as EndReason,
    detail: text(row, "detail"),
    endedAt: integer(row, "ended_at"),
    renewals: integer(row, "renewals"),
  };
}

/** The status message of a lease, an ending, or neither. */
export function statusOf(
  key: string,
  owner: string,
  lease: LeaseRecord | undefined,
  ending: EndedRegistration | undefined,
): WatchdogStatus {
  if (lease) {
    const { registration: _, confirmedAt: __, ...shown } = lease;
    return { state: "renewing", ...shown };
  }
  if (ending) return { state: "ended", ...ending };
  return { state: "unknown", key, owner };
}

export class LeaseStore {
  #schemaReady = false;

  constructor(private readonly sql: SqlLike) {}

  #exec(query: string, ...bindings: SqlValue[]) {
    if (!this.#schemaReady) {
      this.sql.exec(SCHEMA).toArray();
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

  /** Inserts or replaces the registration of (key, owner); forgets an earlier ending. */
  put(lease: LeaseRecord): void {
    this.#write(
      `INSERT OR REPLACE INTO ${LEASES} (lock_key, owner, registration, lease_ms, registered_at,
        hold_until, heartbeat_timeout_ms, last_heartbeat_at, confirmed_at, renewals,
        last_renewed_at, next_renewal_at, failures)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      lease.key,
      lease.owner,
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
    this.#write(`DELETE FROM ${ENDINGS} WHERE lock_key = ? AND owner = ?`, lease.key, lease.owner);
  }

  get(key: string, owner: string): LeaseRecord | undefined {
    const [row] = this.#exec(
      `SELECT * FROM ${LEASES} WHERE lock_key = ? AND owner = ?`,
      key,
      owner,
    ).toArray();
    return row === undefined ? undefined : leaseFrom(row);
  }

  ending(key: string, owner: string): EndedRegistration | undefined {
    const [row] = this.#exec(
      `SELECT * FROM ${ENDINGS} WHERE lock_key = ? AND owner = ?`,
      key,
      owner,
    ).toArray();
    return row === undefined ? undefined : endingFrom(row);
  }

  status(key: string, owner: string): WatchdogStatus {
    return statusOf(key, owner, this.get(key, owner), this.ending(key, owner));
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
    const leases = this.#exec(`SELECT * FROM ${LEASES} ORDER BY lock_key, owner`)
      .toArray()
      .map(leaseFrom);
    const endings = this.#exec(`SELECT * FROM ${ENDINGS} ORDER BY lock_key, owner`)
      .toArray()
      .map(endingFrom);
    return [
      ...leases.map((lease) => statusOf(lease.key, lease.owner, lease, undefined)),
      ...endings.map((ending) => statusOf(ending.key, ending.owner, undefined, ending)),
    ];
  }

  /** Moves the next renewal of this registration; false when it is no longer registered. */
  reschedule(lease: LeaseRecord, nextRenewalAt: number): boolean {
    return (
      this.#write(
        `UPDATE ${LEASES} SET next_renewal_at = ?
         WHERE lock_key = ? AND owner = ? AND registration = ?`,
        nextRenewalAt,
        lease.key,
        lease.owner,
        lease.registration,
      ) > 0
    );
  }

  renewed(lease: LeaseRecord, sentAt: number, nextRenewalAt: number): void {
    this.#write(
      `UPDATE ${LEASES} SET renewals = renewals + 1, last_renewed_at = ?, confirmed_at = ?,
         next_renewal_at = ?, failures = 0
       WHERE lock_key = ? AND owner = ? AND registration = ?`,
      sentAt,
      sentAt,
      nextRenewalAt,
      lease.key,
      lease.owner,
      lease.registration,
    );
  }

  failed(lease: LeaseRecord, nextRenewalAt: number): void {
    this.#write(
      `UPDATE ${LEASES} SET failures = failures + 1, next_renewal_at = ?
       WHERE lock_key = ? AND owner = ? AND registration = ?`,
      nextRenewalAt,
      lease.key,
      lease.owner,
      lease.registration,
    );
  }

  /** Records a heartbeat; false when (key, owner) is not registered. */
  heartbeat(key: string, owner: string, now: number): boolean {
    return (
      this.#write(
        `UPDATE ${LEASES} SET last_heartbeat_at = ? WHERE lock_key = ? AND owner = ?`,
        now,
        key,
        owner,
      ) > 0
    );
  }

  /**
   * Stops renewing (key, owner) — only `registration` when given — and, when `reason` is given,
   * remembers why. Returns the removed lease, if any.
   */
  remove(
    key: string,
    owner: string,
    registration: string | null,
    ending?: { reason: EndReason; detail: string; at: number },
  ): LeaseRecord | undefined {
    const lease = this.get(key, owner);
    if (!lease || (registration !== null && lease.registration !== registration)) return undefined;
    this.#write(
      `DELETE FROM ${LEASES} WHERE lock_key = ? AND owner = ? AND registration = ?`,
      key,
      owner,
      lease.registration,
    );
    if (ending) {
      this.#write(
        `INSERT OR REPLACE INTO ${ENDINGS} (lock_key, owner, reason, detail, ended_at, renewals)
         VALUES (?, ?, ?, ?, ?, ?)`,
        key,
        owner,
        ending.reason,
        ending.detail,
        ending.at,
        lease.renewals,
      );
    }
    return lease;
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

/**
 * The watchdog's SQLite state: the registrations it renews and, for a while, why it stopped. A
 * hold is (key, owner, fencing token; the keys of different kinds differ); each client holding it
 * registers it under its own registration id, one row each, and the hold is renewed while any of
 * its rows lives (one client's deregistration removes only its own row). Writes name their
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
import { EARLY_RENEWAL_DIVISOR, renewalDeadline } from "./schedule.js";

/** One registration of a hold: one client's, renewed until it is deregistered or ends. */
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

/** One row per registration (key, owner, fencing token, registration id). */
const LEASES = "edgelock_watchdog_registrations_v2";
/**
 * One row per hold, as objects kept them before: a second client's registration of the hold
 * replaced the first's row, and its deregistration ended the renewal of a hold still held. Its
 * rows move to LEASES (each was one registration) and it goes.
 */
const HOLD_LEASES = "edgelock_watchdog_leases_v2";
const ENDINGS = "edgelock_watchdog_endings_v2";

/** The columns of a registration row, in the order of `put`. */
const LEASE_COLUMNS = [
  "kind",
  "lock_key",
  "owner",
  "fencing_token",
  "registration",
  "lease_ms",
  "registered_at",
  "hold_until",
  "heartbeat_timeout_ms",
  "last_heartbeat_at",
  "confirmed_at",
  "renewals",
  "last_renewed_at",
  "next_renewal_at",
  "failures",
] as const;

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
  kind TEXT NOT NULL,
  PRIMARY KEY (lock_key, owner, fencing_token, registration)
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

/** Rows of hold `fencingToken` of (key, owner), or, for null, of its latest hold. */
function holdFilter(fencingToken: number | null): { where: string; bindings: SqlValue[] } {
  return fencingToken === null
    ? { where: "ORDER BY fencing_token DESC LIMIT 1", bindings: [] }
    : { where: "AND fencing_token = ?", bindings: [fencingToken] };
}

/** The registrations of one hold, as one status: the hold is renewed while any of them lives. */
function holdStatusOf(leases: readonly LeaseRecord[]): WatchdogStatus & { state: "renewing" } {
  const [first] = leases;
  if (first === undefined) throw new Error("LockWatchdog storage: a hold without registrations");
  const most = (of: (lease: LeaseRecord) => number) => Math.max(...leases.map(of));
  const least = (of: (lease: LeaseRecord) => number) => Math.min(...leases.map(of));
  const renewedAt = leases.flatMap((lease) => lease.lastRenewedAt ?? []);
  // Heartbeats stop the hold's renewal only when every registration requires them.
  const heartbeatTimeouts = leases.map((lease) => lease.heartbeatTimeoutMs);
  return {
    state: "renewing",
    key: first.key,
    owner: first.owner,
    fencingToken: first.fencingToken,
    leaseMs: most((lease) => lease.leaseMs),
    registeredAt: least((lease) => lease.registeredAt),
    holdUntil: most((lease) => lease.holdUntil),
    heartbeatTimeoutMs: heartbeatTimeouts.includes(null)
      ? null
      : Math.max(...(heartbeatTimeouts as number[])),
    lastHeartbeatAt: most((lease) => lease.lastHeartbeatAt),
    renewals: most((lease) => lease.renewals),
    lastRenewedAt: renewedAt.length === 0 ? null : Math.max(...renewedAt),
    nextRenewalAt: least((lease) => lease.nextRenewalAt),
    failures: most((lease) => lease.failures),
    registrations: leases.length,
  };
}

/** The hold a registration renews (key, owner, fencing token), as one string. */
export function holdId(lease: LeaseRecord): string {
  return `${lease.key}\n${lease.owner}\n${lease.fencingToken}`;
}

/** `leases` grouped by hold (key, owner, fencing token), in their order. */
export function byHold(leases: readonly LeaseRecord[]): LeaseRecord[][] {
  const holds = new Map<string, LeaseRecord[]>();
  for (const lease of leases) {
    const id = holdId(lease);
    const hold = holds.get(id);
    if (hold) hold.push(lease);
    else holds.set(id, [lease]);
  }
  return [...holds.values()];
}

/** The moment the last of `leases` must stop being renewed (see renewalDeadline). */
export function latestDeadline(leases: readonly LeaseRecord[]): number {
  return Math.max(...leases.map(renewalDeadline));
}

export class LeaseStore {
  #schemaReady = false;

  constructor(private readonly sql: SqlLike) {}

  #exec(query: string, ...bindings: SqlValue[]) {
    if (!this.#schemaReady) {
      this.sql.exec(SCHEMA).toArray();
      this.#adoptHoldLeases();
      this.#schemaReady = true;
    }
    return this.sql.exec(query, ...bindings);
  }

  /**
   * Moves the rows of the one-row-per-hold table earlier objects kept here, each of them one
   * registration, and drops that table: their holds go on being renewed.
   */
  #adoptHoldLeases(): void {
    const [table] = this.sql
      .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", HOLD_LEASES)
      .toArray();
    if (table === undefined) return;
    const columns = this.sql.exec(`PRAGMA table_info(${HOLD_LEASES})`).toArray();
    // Tables made before holds had a kind held locks only, the only kind renewed then.
    const kind = columns.some((column) => column.name === "kind") ? "kind" : "'lock'";
    const selected = LEASE_COLUMNS.map((column) => (column === "kind" ? kind : column));
    this.sql
      .exec(
        `INSERT OR IGNORE INTO ${LEASES} (${LEASE_COLUMNS.join(", ")})
         SELECT ${selected.join(", ")} FROM ${HOLD_LEASES}`,
      )
      .toArray();
    this.sql.exec(`DROP TABLE ${HOLD_LEASES}`).toArray();
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

  /**
   * Inserts this registration of the hold (key, owner, token), or replaces it when re-sent; other
   * registrations of the hold stay. Forgets the hold's ending.
   */
  put(lease: LeaseRecord): void {
    this.#write(
      `INSERT OR REPLACE INTO ${LEASES} (${LEASE_COLUMNS.join(", ")})
       VALUES (${LEASE_COLUMNS.map(() => "?").join(", ")})`,
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
    this.forgetEnding(lease.key, lease.owner, lease.fencingToken);
  }

  /**
   * The registrations of hold `fencingToken` of (key, owner), oldest first; null: of its latest
   * hold (the highest token registered).
   */
  registrationsOf(key: string, owner: string, fencingToken: number | null): LeaseRecord[] {
    const hold = fencingToken ?? this.holdsOf(key, owner).at(-1);
    if (hold === undefined) return [];
    return this.#exec(
      `SELECT * FROM ${LEASES} WHERE lock_key = ? AND owner = ? AND fencing_token = ?
       ORDER BY registered_at, registration`,
      key,
      owner,
      hold,
    )
      .toArray()
      .map(leaseFrom);
  }

  /** The fencing tokens of the holds of (key, owner) that have a registration, lowest first. */
  holdsOf(key: string, owner: string): number[] {
    return this.#exec(
      `SELECT DISTINCT fencing_token FROM ${LEASES} WHERE lock_key = ? AND owner = ?
       ORDER BY fencing_token`,
      key,
      owner,
    )
      .toArray()
      .map((row) => integer(row, "fencing_token"));
  }

  ending(key: string, owner: string, fencingToken: number | null): EndedRegistration | undefined {
    const hold = holdFilter(fencingToken);
    const [row] = this.#exec(
      `SELECT * FROM ${ENDINGS} WHERE lock_key = ? AND owner = ? ${hold.where}`,
      key,
      owner,
      ...hold.bindings,
    ).toArray();
    return row === undefined ? undefined : endingFrom(row);
  }

  /**
   * The status of hold `fencingToken` of (key, owner); null: of the latest hold the object knows
   * (the highest token, renewing or ended).
   */
  status(key: string, owner: string, fencingToken: number | null): WatchdogStatus {
    const leases = this.registrationsOf(key, owner, fencingToken);
    const ending = this.ending(key, owner, fencingToken);
    // A hold still registered is renewing, even if an ending of it was recorded before.
    const renewing = leases[0];
    if (renewing && (!ending || renewing.fencingToken >= ending.fencingToken)) {
      return holdStatusOf(leases);
    }
    if (ending) return { state: "ended", ...ending };
    return { state: "unknown", key, owner, fencingToken };
  }

  /** Registrations whose renewal is due at `now` (or within a sixth of their lease), earliest first. */
  due(now: number): LeaseRecord[] {
    return this.#exec(
      `SELECT * FROM ${LEASES} WHERE next_renewal_at - lease_ms / ${EARLY_RENEWAL_DIVISOR} <= ?
       ORDER BY next_renewal_at`,
      now,
    )
      .toArray()
      .map(leaseFrom);
  }

  /** Every hold renewing (one status each, whatever its registrations) and ending, for inspection. */
  list(): WatchdogStatus[] {
    const order = "ORDER BY lock_key, owner, fencing_token";
    const leases = this.#exec(`SELECT * FROM ${LEASES} ${order}, registered_at, registration`)
      .toArray()
      .map(leaseFrom);
    const endings = this.#exec(`SELECT * FROM ${ENDINGS} ${order}`).toArray().map(endingFrom);
    return [
      ...byHold(leases).map(holdStatusOf),
      ...endings.map((ending) => ({ state: "ended" as const, ...ending })),
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
   * Removes `registration` of hold `fencingToken` of (key, owner), or every registration of the
   * hold when it is null. When `ending` is given and no registration of the hold is left (its
   * renewal stopped), remembers why. Returns the removed registrations.
   */
  remove(
    key: string,
    owner: string,
    fencingToken: number,
    registration: string | null,
    ending?: { reason: EndReason; detail: string; at: number },
  ): LeaseRecord[] {
    const removed = this.registrationsOf(key, owner, fencingToken).filter(
      (lease) => registration === null || lease.registration === registration,
    );
    if (removed.length === 0) return removed;
    this.#write(
      `DELETE FROM ${LEASES}
       WHERE lock_key = ? AND owner = ? AND fencing_token = ? AND (? IS NULL OR registration = ?)`,
      key,
      owner,
      fencingToken,
      registration,
      registration,
    );
    if (ending && this.registrationsOf(key, owner, fencingToken).length === 0) {
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
        Math.max(...removed.map((lease) => lease.renewals)),
      );
    }
    return removed;
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

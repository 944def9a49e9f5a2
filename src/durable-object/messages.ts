/**
 * The watchdog's wire protocol: JSON messages from holders and the status answered. Each carries
 * the version `v` and is validated (400) before storage is touched, so that a holder and an object
 * of different versions fail loudly instead of renewing the wrong thing.
 */
import { LockBackendError, LockInputError } from "../errors.js";
import { lockKeys } from "../hold/script.js";
import { semaphoreKeys } from "../locks/semaphore/keys.js";
import {
  checkDuration,
  checkLease,
  checkLockName,
  checkOptions,
  checkOwner,
  checkPrefix,
} from "../validate.js";
import type { HoldKind } from "../watchdog/renewer.js";

/**
 * Version of the messages, bumped by a change old objects would misread (v2: holds are named by
 * fencing token, not by owner alone).
 */
export const WATCHDOG_PROTOCOL = 2;

/** Path of each message; still v1's, so another version's holder meets the version check. */
export const WATCHDOG_ROUTES = {
  register: "/v1/register",
  deregister: "/v1/deregister",
  heartbeat: "/v1/heartbeat",
  status: "/v1/status",
  list: "/v1/leases",
} as const;

/** "Renew this lease until told otherwise (within `maxHoldMs`, while heartbeats arrive)." */
export interface RegisterMessage {
  readonly v: typeof WATCHDOG_PROTOCOL;
  /**
   * What to renew, and so which script renews it: `lock`, a lock hash, with `lock.extend`;
   * `semaphore`, a permit hold, with `semaphore.extend`. Absent (holders before semaphores
   * were renewed here): `lock`.
   */
  readonly kind: HoldKind;
  /**
   * The hold's Redis key, of its kind's shape: a lock's `<prefix>:{<name>}`, a semaphore's
   * leases `<prefix>:{<name>}:semaphore:leases`. It names the hold in every later message.
   */
  readonly key: string;
  readonly owner: string;
  /**
   * The hold's fencing token, which renewals name. The re-entrant handles of one client share one
   * registration; another client re-entering the hold (given the same `owner`) sends its own.
   */
  readonly fencingToken: number;
  /**
   * Random id of this registration: its deregistration removes only it (the hold stays renewed
   * while another client's registration of it lives), and a late one cannot remove a later one.
   */
  readonly registration: string;
  /** The lease each renewal sets, in ms (the client's watchdogTimeoutMs). */
  readonly leaseMs: number;
  /** How long ago (holder's clock) the lease was last set, when this message was sent. */
  readonly sinceConfirmedMs: number;
  /** Renewal stops this long after registration, whatever else happens. */
  readonly maxHoldMs: number;
  /** Renewal stops after this long without a heartbeat; null: no heartbeats required. */
  readonly heartbeatTimeoutMs: number | null;
}

/**
 * "Stop renewing." With a `registration` (the holder's release), only that registration of hold
 * `fencingToken`, without a record: the hold stays renewed while another registration of it
 * lives. With `registration: null` (`watchdog.forget()` from another invocation), every
 * registration of hold `fencingToken`, or of every hold of the owner when that is null too,
 * recorded as "released".
 */
export interface DeregisterMessage {
  readonly v: typeof WATCHDOG_PROTOCOL;
  /** The hold's key, as registered (its shape tells the kind). */
  readonly key: string;
  readonly owner: string;
  /** The hold meant; null (only with `registration: null`): every hold of the owner. */
  readonly fencingToken: number | null;
  readonly registration: string | null;
}

/**
 * A heartbeat or a status query, about hold `fencingToken` only; null: the owner's latest hold
 * (the highest token the object knows).
 */
export interface LeaseQuery {
  readonly v: typeof WATCHDOG_PROTOCOL;
  /** The hold's key, as registered (its shape tells the kind). */
  readonly key: string;
  readonly owner: string;
  readonly fencingToken: number | null;
}

/** Why the object stopped renewing a lease. */
export type EndReason =
  /** The holder's owner was deregistered from another invocation (`watchdog.forget()`). */
  | "released"
  /**
   * The renew script found the hold gone: expired, force-released, or taken, also by a later hold
   * of the same owner (which has a registration of its own).
   */
  | "gone"
  /** `maxHoldMs` passed since registration. */
  | "max-hold"
  /** Heartbeats were required and none arrived for `heartbeatTimeoutMs`. */
  | "heartbeat-timeout"
  /** Renewals kept failing (Redis unreachable) until the lease had surely passed. */
  | "renewal-failed";

/** What the object knows of one hold (lock, owner, fencing token): the answer to every message. */
export type WatchdogStatus =
  | {
      readonly state: "renewing";
      readonly key: string;
      readonly owner: string;
      readonly fencingToken: number;
      /** The longest lease a renewal sets (its registrations' longest). */
      readonly leaseMs: number;
      /** When the hold's first registration still here was made. Object clock, epoch ms. */
      readonly registeredAt: number;
      /** Renewal stops at this time at the latest (the last registration's registeredAt + maxHoldMs). */
      readonly holdUntil: number;
      /** null when a registration requires no heartbeats, else the longest timeout. */
      readonly heartbeatTimeoutMs: number | null;
      readonly lastHeartbeatAt: number;
      /** Successful renewals so far. */
      readonly renewals: number;
      readonly lastRenewedAt: number | null;
      readonly nextRenewalAt: number;
      /** Failed renewal attempts since the last success. */
      readonly failures: number;
      /**
       * Registrations keeping the hold renewed: one per client (invocation) holding it, each
       * deregistered at that client's last release. The hold is renewed while any is left.
       */
      readonly registrations: number;
    }
  | ({ readonly state: "ended" } & EndedRegistration)
  | {
      readonly state: "unknown";
      readonly key: string;
      readonly owner: string;
      /** The hold asked about; null: the question named none (and the owner has none here). */
      readonly fencingToken: number | null;
    };

/** How a registration ended, kept by the object for a while so that late questions get it. */
export interface EndedRegistration {
  readonly key: string;
  readonly owner: string;
  readonly fencingToken: number;
  readonly reason: EndReason;
  /** A sentence for logs. */
  readonly detail: string;
  readonly endedAt: number;
  readonly renewals: number;
}

const END_REASONS: readonly EndReason[] = [
  "released",
  "gone",
  "max-hold",
  "heartbeat-timeout",
  "renewal-failed",
];
const REGISTRATION_ID = /^[0-9a-f]{16,64}$/;
const HOLD_KINDS: readonly HoldKind[] = ["lock", "semaphore"];
/** Every hold key starts with its hash tag: `<prefix>:{<name>}`. */
const HASH_TAGGED = /^([^{}]+):\{([^{}]+)\}/;

/** Each kind's hold key, as its own keys module builds it. */
const HOLD_KEYS: Record<HoldKind, (prefix: string, name: string) => string> = {
  lock: (prefix, name) => lockKeys(prefix, name).lock,
  semaphore: (prefix, name) => semaphoreKeys(prefix, name).leases,
};

/** The Redis key of hold kind `kind` named `name` under `prefix` (validated). */
export function holdKeyOf(kind: HoldKind, prefix: string, name: string): string {
  return HOLD_KEYS[kind](checkPrefix(prefix), checkLockName(name));
}

/** A hold key taken apart: its kind, and the prefix and name its keys are built from. */
export interface ParsedHoldKey {
  readonly key: string;
  readonly kind: HoldKind;
  readonly prefix: string;
  readonly name: string;
}

/** `value` as the hold key of one of `kinds` (LockInputError otherwise). */
export function parseHoldKey(
  value: unknown,
  kinds: readonly HoldKind[] = HOLD_KINDS,
): ParsedHoldKey {
  const match = typeof value === "string" ? HASH_TAGGED.exec(value) : null;
  if (match) {
    const prefix = checkPrefix(match[1]!);
    const name = checkLockName(match[2]!);
    const kind = kinds.find((each) => HOLD_KEYS[each](prefix, name) === value);
    if (kind !== undefined) return { key: value as string, kind, prefix, name };
  }
  const shapes = kinds.map((kind) => `a ${kind} key ${HOLD_KEYS[kind]("<prefix>", "<name>")}`);
  throw new LockInputError(`key must be ${shapes.join(" or ")}.`);
}

export function isHoldKind(value: unknown): value is HoldKind {
  return HOLD_KINDS.includes(value as HoldKind);
}

/** A hold kind; absent means "lock", the only kind before semaphores were renewed here. */
export function checkHoldKind(value: unknown): HoldKind {
  if (value === undefined) return "lock";
  if (!isHoldKind(value)) {
    throw new LockInputError(
      `kind must be "lock" or "semaphore", got ${JSON.stringify(value) ?? String(value)}.`,
    );
  }
  return value;
}

function checkVersion(value: unknown): typeof WATCHDOG_PROTOCOL {
  if (value !== WATCHDOG_PROTOCOL) {
    throw new LockInputError(
      `Unsupported watchdog protocol version ${String(value)}; this LockWatchdog speaks v${WATCHDOG_PROTOCOL}. Deploy the same edgelock version on both sides.`,
    );
  }
  return WATCHDOG_PROTOCOL;
}

/** A fencing token: the fence counter's value when the hold was first acquired (1 or more). */
export function checkFencingToken(value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new LockInputError(
      `fencingToken must be a whole number of at least 1, got ${JSON.stringify(value) ?? String(value)}.`,
    );
  }
  return value;
}

function checkTokenOrNull(value: unknown): number | null {
  return value === null ? null : checkFencingToken(value);
}

function checkRegistrationId(value: unknown): string {
  if (typeof value !== "string" || !REGISTRATION_ID.test(value)) {
    throw new LockInputError("registration must be 16 to 64 lowercase hex characters.");
  }
  return value;
}

export function parseRegister(body: unknown): RegisterMessage {
  const given = checkOptions<RegisterMessage>(body, "register message", [
    "v",
    "kind",
    "key",
    "owner",
    "fencingToken",
    "registration",
    "leaseMs",
    "sinceConfirmedMs",
    "maxHoldMs",
    "heartbeatTimeoutMs",
  ]);
  const kind = checkHoldKind(given.kind);
  return {
    v: checkVersion(given.v),
    kind,
    key: parseHoldKey(given.key, [kind]).key,
    owner: checkOwner(given.owner),
    fencingToken: checkFencingToken(given.fencingToken),
    registration: checkRegistrationId(given.registration),
    leaseMs: checkLease(given.leaseMs),
    sinceConfirmedMs: checkDuration(given.sinceConfirmedMs, "sinceConfirmedMs", { min: 0 }),
    maxHoldMs: checkDuration(given.maxHoldMs, "maxHoldMs", { min: 1 }),
    heartbeatTimeoutMs:
      given.heartbeatTimeoutMs === null
        ? null
        : checkLease(given.heartbeatTimeoutMs, "heartbeatTimeoutMs"),
  };
}

export function parseDeregister(body: unknown): DeregisterMessage {
  const given = checkOptions<DeregisterMessage>(body, "deregister message", [
    "v",
    "key",
    "owner",
    "fencingToken",
    "registration",
  ]);
  const message: DeregisterMessage = {
    v: checkVersion(given.v),
    key: parseHoldKey(given.key).key,
    owner: checkOwner(given.owner),
    fencingToken: checkTokenOrNull(given.fencingToken),
    registration: given.registration === null ? null : checkRegistrationId(given.registration),
  };
  if (message.registration !== null && message.fencingToken === null) {
    throw new LockInputError("A deregistration that names its registration names its hold too.");
  }
  return message;
}

export function parseQuery(body: unknown): LeaseQuery {
  const given = checkOptions<LeaseQuery>(body, "lease query", [
    "v",
    "key",
    "owner",
    "fencingToken",
  ]);
  return {
    v: checkVersion(given.v),
    key: parseHoldKey(given.key).key,
    owner: checkOwner(given.owner),
    fencingToken: checkTokenOrNull(given.fencingToken),
  };
}

/** Checks a status the object answered (the holder side trusts nothing it did not check). */
export function parseStatus(body: unknown): WatchdogStatus {
  const value = body as Partial<Record<string, unknown>> | null;
  const ok =
    value !== null &&
    typeof value === "object" &&
    typeof value.key === "string" &&
    typeof value.owner === "string" &&
    (value.state === "unknown"
      ? value.fencingToken === null || isToken(value.fencingToken)
      : isToken(value.fencingToken) &&
        ((value.state === "renewing" && typeof value.renewals === "number") ||
          (value.state === "ended" && END_REASONS.includes(value.reason as EndReason))));
  if (!ok) {
    throw new LockBackendError(
      `Unexpected answer from the LockWatchdog: ${JSON.stringify(body)?.slice(0, 200)}.`,
    );
  }
  return value as WatchdogStatus;
}

function isToken(value: unknown): boolean {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 1;
}

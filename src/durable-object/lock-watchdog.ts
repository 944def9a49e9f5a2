/**
 * `LockWatchdog`: a SQLite-backed Durable Object whose alarm renews registered leases with their
 * kind's extend script (`lock.extend`, `semaphore.extend`), naming each hold by its fencing token
 * so it never re-arms a later hold of the same owner. Each client holding a hold registers it
 * (one registration per client, however often it re-enters); the hold is renewed, once per round,
 * while any of its registrations lives. A registration stops (and the hold's last one remembers
 * why for an hour) on its deregistration, the hold gone, its `maxHoldMs`, missed heartbeats, or
 * renewals failing past the lease: a crashed holder's lock or permits free within the bound of
 * docs/lease-vs-watchdog.md.
 *
 * Alarms are at-least-once and may run late: a due lease is claimed before its renewal is sent,
 * renewals happen at a third of the lease, and the next alarm is armed in `finally`.
 */
import { LockInputError } from "../errors.js";
import type { OperationContext } from "../hold/context.js";
import { redisMessageOf } from "../transport/failures.js";
import type { RedisLike } from "../transport/redis-like.js";
import {
  type DeregisterMessage,
  type EndReason,
  type LeaseQuery,
  parseDeregister,
  parseQuery,
  parseRegister,
  type RegisterMessage,
  WATCHDOG_ROUTES,
  type WatchdogStatus,
} from "./messages.js";
import type { AlarmInfo, WatchdogState, WatchdogStorage } from "./platform.js";
import { redisFromEnv, type WatchdogEnv } from "./redis.js";
import { renewHold } from "./renew.js";
import {
  afterThrowDelayMs,
  claimedUntil,
  ENDING_RETENTION_MS,
  firstRenewalAt,
  limitReached,
  renewalIntervalMs,
  retryDelayMs,
} from "./schedule.js";
import { byHold, holdId, type LeaseRecord, LeaseStore, latestDeadline } from "./store.js";

/** Re-sends of an ambiguous renewal, as a LockClient does by default. */
const RENEW_RETRY = { retries: 2, delayMs: 50 } as const;

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

async function readJson(request: Request): Promise<unknown> {
  try {
    return await request.json();
  } catch {
    throw new LockInputError("The watchdog message is not JSON.");
  }
}

/**
 * The Durable Object that renews registered leases from its alarms (SQLite storage): export it
 * from your Worker and bind it (wrangler.toml). `durableObjectWatchdog()` is the client side.
 */
export class LockWatchdog {
  readonly #storage: WatchdogStorage;
  readonly #store: LeaseStore;
  readonly #env: WatchdogEnv;
  #ctx: OperationContext | undefined;
  /** Consecutive alarm handlers that threw (in memory: an evicted object starts afresh). */
  #throws = 0;
  /** Holds with a renewal out (holdId), over every alarm run: never two requests for one. */
  readonly #renewing = new Set<string>();

  constructor(state: WatchdogState, env: WatchdogEnv) {
    this.#storage = state.storage;
    this.#store = new LeaseStore(state.storage.sql);
    this.#env = env;
    // No setAlarm() here: an alarm wakes the object through its constructor, and re-arming in
    // the constructor would push the alarm away every time, so that it never ran.
  }

  /**
   * The Redis this object renews on: by default `UPSTASH_REDIS_REST_URL` and `_TOKEN` of its env,
   * with the client's own re-sends off. An override must reach the holders' Redis and not re-send
   * on its own either: a re-send after a renewal's deadline holds a crashed holder's lock past the
   * documented bound. (Not `connect`: that is the socket handler.)
   */
  protected createRedis(env: WatchdogEnv): RedisLike | undefined {
    return redisFromEnv(env);
  }

  async fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    try {
      if (request.method === "GET" && path === WATCHDOG_ROUTES.list) {
        const all = this.#store.list();
        await this.#tidy();
        return json(all);
      }
      if (request.method !== "POST") return json({ error: "method not allowed" }, 405);
      switch (path) {
        case WATCHDOG_ROUTES.register: {
          const message = parseRegister(await readJson(request));
          if (!this.#context()) {
            return json(
              {
                error:
                  "This LockWatchdog has no Redis: set UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN on its Worker.",
              },
              // A 4xx: the holder gives up at once instead of retrying a misconfiguration.
              424,
            );
          }
          return json(await this.#register(message));
        }
        case WATCHDOG_ROUTES.deregister:
          return json(await this.#deregister(parseDeregister(await readJson(request))));
        case WATCHDOG_ROUTES.heartbeat:
          return json(await this.#heartbeat(parseQuery(await readJson(request))));
        case WATCHDOG_ROUTES.status: {
          const query = parseQuery(await readJson(request));
          const status = this.#store.status(query.key, query.owner, query.fencingToken);
          await this.#tidy();
          return json(status);
        }
        default:
          return json({ error: `no route ${path}` }, 404);
      }
    } catch (error) {
      if (error instanceof LockInputError) return json({ error: error.message }, 400);
      throw error;
    }
  }

  /**
   * Renews every due lease, then arms the next alarm in `finally`: the runtime drops an alarm
   * whose retries all threw. A retried or duplicate run finds done renewals no longer due.
   */
  async alarm(_alarmInfo?: AlarmInfo): Promise<void> {
    let threw = false;
    try {
      await this.renewDue(Date.now());
      this.#throws = 0;
    } catch (error) {
      threw = true;
      this.#throws += 1;
      throw error;
    } finally {
      // Not at once after a throw: a handler that keeps throwing must not spin.
      await this.#rearm(threw ? Date.now() + afterThrowDelayMs(this.#throws) : 0);
    }
  }

  /**
   * @internal Renews (or ends) every registration due at `now`, with one request per hold
   * however many clients registered it; what `alarm()` runs. While renewals are in flight it
   * starts the rounds that fall due meanwhile: the next alarm is armed only once this returns, so
   * a renewal that hangs (up to its call budget) must not hold back a hold registered meanwhile.
   */
  protected async renewDue(now: number): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    for (let at = now; ; at = Date.now()) {
      this.#startRound(at, inFlight);
      if (inFlight.size === 0) return;
      const wake = this.#store.nextWakeAt(ENDING_RETENTION_MS);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const due =
        wake === null
          ? []
          : [
              new Promise<void>((resolve) => {
                timer = setTimeout(resolve, Math.max(0, wake - Date.now()));
              }),
            ];
      await Promise.race([...due, ...inFlight]);
      if (timer !== undefined) clearTimeout(timer);
    }
  }

  /**
   * Claims and sends the renewals due at `now`, one per hold (none for a hold whose renewal is
   * still out), and ends the registrations past their limits. @upstash/redis sends the renewals
   * issued in one tick as one /pipeline request.
   */
  #startRound(now: number, inFlight: Set<Promise<void>>): void {
    const ctx = this.#context();
    for (const hold of byHold(this.#store.due(now))) {
      const live = hold.filter((lease) => {
        const limit = limitReached(lease, now);
        if (limit) this.#end(lease, { ...limit, at: now });
        return limit === null;
      });
      if (live.length === 0) continue;
      // Claimed before the request goes out: a duplicate alarm finds them no longer due. A hold
      // whose renewal is still out is claimed again and sent nothing: its answer reschedules it.
      for (const lease of live) this.#store.reschedule(lease, claimedUntil(now, lease.leaseMs));
      const id = holdId(live[0]!);
      if (this.#renewing.has(id)) continue;
      this.#renewing.add(id);
      const renewal = this.#renew(live, ctx).finally(() => {
        this.#renewing.delete(id);
        inFlight.delete(renewal);
      });
      inFlight.add(renewal);
    }
  }

  /** One renewal of the hold `leases` (its due registrations) register, then each one's record. */
  async #renew(leases: readonly LeaseRecord[], ctx: OperationContext | undefined): Promise<void> {
    const [hold] = leases;
    if (hold === undefined) return;
    const sentAt = Date.now();
    let held: boolean;
    try {
      if (!ctx) throw new Error("no Redis configured (UPSTASH_REDIS_REST_URL, _TOKEN)");
      // A re-send after the last renewal deadline would re-arm the lease past its documented
      // bound; until then one of the registrations still keeps the hold.
      const bounded = { ...ctx, retry: { ...ctx.retry, sendBy: latestDeadline(leases) } };
      // Named by its token: a later hold of the same owner is not this lease's to renew. The
      // longest lease of the registrations, so that none is promised less than it asked.
      const leaseMs = Math.max(...leases.map((lease) => lease.leaseMs));
      held = await renewHold(bounded, { ...hold, leaseMs });
    } catch (error) {
      const at = Date.now();
      for (const lease of leases) {
        if (at - lease.confirmedAt >= lease.leaseMs) {
          this.#end(lease, {
            reason: "renewal-failed",
            detail: `renewals failed until the lease had passed: ${redisMessageOf(error)}`,
            at,
          });
        } else {
          this.#store.failed(lease, at + retryDelayMs(lease.leaseMs));
        }
      }
      return;
    }
    if (held) {
      for (const lease of leases) {
        this.#store.renewed(lease, sentAt, sentAt + renewalIntervalMs(lease.leaseMs));
      }
      return;
    }
    // A hold found gone never comes back (its token is never granted again): every
    // registration of it ends, also one that arrived while the request was out.
    this.#store.remove(hold.key, hold.owner, hold.fencingToken, null, {
      reason: "gone",
      detail:
        hold.kind === "semaphore"
          ? "the renew script found the permit hold gone (released, expired or removed)"
          : "the renew script found the hold gone (expired or force-released), the lock another owner's, or a later hold of the same owner's",
      at: Date.now(),
    });
  }

  /** Stops renewing this registration; records why when it was the hold's last. */
  #end(lease: LeaseRecord, ending: { reason: EndReason; detail: string; at: number }): void {
    this.#store.remove(lease.key, lease.owner, lease.fencingToken, lease.registration, ending);
  }

  /**
   * Adds this registration of the hold, beside another client's of the same hold (re-entered with
   * the same owner), or replaces it when re-sent.
   */
  async #register(message: RegisterMessage): Promise<WatchdogStatus> {
    const now = Date.now();
    const others = this.#store
      .registrationsOf(message.key, message.owner, message.fencingToken)
      .filter((lease) => lease.registration !== message.registration);
    // Into the rounds of the hold's other registrations when they come sooner: one renewal for
    // all of them. Never later than its own first renewal.
    const nextRenewalAt = Math.min(
      firstRenewalAt(now, message.leaseMs, message.sinceConfirmedMs),
      ...others.map((lease) => lease.nextRenewalAt),
    );
    this.#store.put({
      kind: message.kind,
      key: message.key,
      owner: message.owner,
      fencingToken: message.fencingToken,
      registration: message.registration,
      leaseMs: message.leaseMs,
      registeredAt: now,
      holdUntil: now + message.maxHoldMs,
      heartbeatTimeoutMs: message.heartbeatTimeoutMs,
      lastHeartbeatAt: now,
      confirmedAt: now - message.sinceConfirmedMs,
      renewals: 0,
      lastRenewedAt: null,
      nextRenewalAt,
      failures: 0,
    });
    const current = await this.#storage.getAlarm();
    if (current === null || current > nextRenewalAt) await this.#storage.setAlarm(nextRenewalAt);
    return this.#store.status(message.key, message.owner, message.fencingToken);
  }

  /**
   * The holder's release removes its own registration (of its hold) and keeps no record: the hold
   * stays renewed while another client's registration of it lives. `forget()` removes every
   * registration of hold `fencingToken`, or of every hold of the owner, recorded as released.
   */
  async #deregister(message: DeregisterMessage): Promise<WatchdogStatus> {
    const { key, owner, fencingToken, registration } = message;
    const ending =
      registration === null
        ? {
            reason: "released" as const,
            detail: "forgotten by its owner from another invocation",
            at: Date.now(),
          }
        : undefined;
    const holds = fencingToken === null ? this.#store.holdsOf(key, owner) : [fencingToken];
    for (const hold of holds) {
      this.#store.remove(key, owner, hold, registration, ending);
      // The last holder released: a renewal sent between its release and this message found the
      // hold gone and recorded that. It was the release, so nothing of the hold is kept.
      if (registration !== null && this.#store.registrationsOf(key, owner, hold).length === 0) {
        this.#store.forgetEnding(key, owner, hold);
      }
    }
    const status = this.#store.status(key, owner, fencingToken);
    await this.#tidy();
    return status;
  }

  /**
   * Keeps hold `fencingToken` (null: the owner's latest hold) renewing — every registration of it,
   * whichever client beats — and no other hold.
   */
  async #heartbeat(query: LeaseQuery): Promise<WatchdogStatus> {
    const now = Date.now();
    for (const lease of this.#store.registrationsOf(query.key, query.owner, query.fencingToken)) {
      // A heartbeat after the deadline does not revive the registration: the bound holds.
      const limit = limitReached(lease, now);
      if (limit) this.#end(lease, { ...limit, at: now });
      else this.#store.heartbeat(lease, now);
    }
    const status = this.#store.status(query.key, query.owner, query.fencingToken);
    await this.#tidy();
    return status;
  }

  /** Arms the alarm for the next wake (not before `notBefore`), or clears an empty object. */
  async #rearm(notBefore: number): Promise<void> {
    const now = Date.now();
    this.#store.prune(now, ENDING_RETENTION_MS);
    const wake = this.#store.nextWakeAt(ENDING_RETENTION_MS);
    if (wake === null) await this.#clear();
    else await this.#storage.setAlarm(Math.max(wake, notBefore));
  }

  /** An object that holds nothing deletes its storage, so that idle lock names cost nothing. */
  async #tidy(): Promise<void> {
    if (this.#store.nextWakeAt(ENDING_RETENTION_MS) === null) await this.#clear();
  }

  /**
   * Both deletions are issued before anything else can run: a registration handled between them
   * would be wiped by the second (with the schema, failing every later call on the object).
   * Storage operations apply in the order issued, so one that arrives meanwhile is kept.
   */
  async #clear(): Promise<void> {
    this.#store.forgetSchema();
    await Promise.all([this.#storage.deleteAlarm(), this.#storage.deleteAll()]);
  }

  #context(): OperationContext | undefined {
    if (!this.#ctx) {
      const redis = this.createRedis(this.#env);
      if (redis) this.#ctx = { redis, retry: RENEW_RETRY, operationTtlMs: 60_000 };
    }
    return this.#ctx;
  }
}

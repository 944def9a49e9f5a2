/**
 * The holder's side of one hold: register (retried only while the lease lasts), heartbeat, turn
 * an "ended" answer into `target.lost()`, deregister after the registration it cancels. Messages
 * name the hold by its fencing token, never acting on another hold of the same owner.
 */
import { LockBackendError } from "../errors.js";
import { newOperationId, sleep } from "../platform.js";
import type { HoldKind, Renewal, RenewalTarget } from "../watchdog/renewer.js";
import { type CallOutcome, callWatchdog, type WatchdogRoute } from "./calls.js";
import { type RegisterMessage, WATCHDOG_PROTOCOL, type WatchdogStatus } from "./messages.js";
import type { ResolvedWatchdogOptions } from "./options.js";
import type { WatchdogNamespace } from "./platform.js";
import { objectNameFor } from "./shard.js";

/** What a registration needs from the watchdog that started it. */
export interface RegistrationContext {
  readonly namespace: WatchdogNamespace;
  readonly options: ResolvedWatchdogOptions;
  /** Keeps a call's promise until it settles (`watchdog.settled()`). */
  track<T>(promise: Promise<T>): Promise<T>;
  /** Called once when the registration stops or ends, to drop it from the watchdog's index. */
  forget(registration: ActiveRegistration): void;
}

/** A registration the watchdog can route manual heartbeat answers to. */
export interface ActiveRegistration extends Renewal {
  readonly name: string;
  readonly key: string;
  readonly owner: string;
  /** The hold this registration renews: answers about another hold are not about it. */
  readonly fencingToken: number;
  /** True once the object has confirmed the registration: only later answers are about it. */
  readonly confirmed: boolean;
  /**
   * Applies an answer of the object: an ended or unknown lease means the lock is lost. An answer
   * about another hold is ignored, unless `everyHold` (it ended every hold of the owner).
   */
  observe(status: WatchdogStatus, everyHold?: boolean): void;
}

/** Why the holder lost the lock, from the object's answer. */
export function lossReason(status: WatchdogStatus): string | undefined {
  if (status.state === "ended") {
    return `the Durable Object watchdog stopped renewing it (${status.reason}): ${status.detail}`;
  }
  if (status.state === "unknown") {
    return "the Durable Object watchdog has no record of it (never registered, or forgotten)";
  }
  return undefined;
}

function refusal(route: WatchdogRoute, outcome: CallOutcome & { kind: "refused" }) {
  return new LockBackendError(`The Durable Object watchdog refused ${route}: ${outcome.message}`);
}

export function startRegistration(
  context: RegistrationContext,
  target: RenewalTarget & { readonly key: string; readonly kind: HoldKind },
  confirmedAt: number,
): ActiveRegistration {
  const { namespace, options } = context;
  const { kind, key, owner, fencingToken, leaseMs } = target;
  const hold = { v: WATCHDOG_PROTOCOL, key, owner, fencingToken } as const;
  const objectName = objectNameFor(options.shardBy, key, owner);
  const registration = newOperationId();
  const heartbeatEvery = options.heartbeatIntervalMs ?? leaseMs;
  // After a failed registration, try again a few times before the lease could run out.
  const retryDelay = Math.min(1_000, Math.max(50, Math.floor(leaseMs / 10)));
  let stopped = false;
  let ended = false;
  let confirmed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const call = (route: WatchdogRoute, body: unknown, timeoutMs = options.requestTimeoutMs) =>
    context.track(callWatchdog(namespace, objectName, route, body, timeoutMs));

  const end = (reason: string, cause?: unknown) => {
    if (stopped || ended) return;
    ended = true;
    if (timer !== undefined) clearTimeout(timer);
    context.forget(active);
    target.lost(reason, cause);
  };

  async function register(): Promise<boolean> {
    for (;;) {
      if (stopped) return false;
      const message: RegisterMessage = {
        ...hold,
        kind,
        registration,
        leaseMs,
        sinceConfirmedMs: Math.max(0, Date.now() - confirmedAt),
        maxHoldMs: options.maxHoldMs,
        heartbeatTimeoutMs: options.heartbeatTimeoutMs,
      };
      try {
        // Unanswered by the end of the lease, the hold may be gone with nobody renewing it.
        const leaseLeftMs = confirmedAt + leaseMs - Date.now();
        const outcome = await call(
          "register",
          message,
          Math.max(1, Math.min(options.requestTimeoutMs, leaseLeftMs)),
        );
        if (outcome.kind === "refused") {
          const error = refusal("register", outcome);
          target.failed(error);
          end(error.message, error);
          return false;
        }
        confirmed = true;
        active.observe(outcome.status);
        return true;
      } catch (error) {
        target.failed(error);
        if (Date.now() + retryDelay - confirmedAt >= leaseMs) {
          end(
            "it could not be registered with the Durable Object watchdog before its lease passed",
            error,
          );
          // A registration that arrived unanswered must not renew a hold its holder gave up.
          void call("deregister", { ...hold, registration }).catch(() => {});
          return false;
        }
        await sleep(retryDelay);
      }
    }
  }

  async function beat(): Promise<void> {
    if (stopped || ended) return;
    try {
      const outcome = await call("heartbeat", hold);
      if (outcome.kind === "refused") target.failed(refusal("heartbeat", outcome));
      else active.observe(outcome.status);
    } catch (error) {
      if (!stopped && !ended) target.failed(error);
    }
    scheduleBeat();
  }

  function scheduleBeat(): void {
    if (stopped || ended || heartbeatEvery === 0) return;
    timer = setTimeout(() => void beat(), heartbeatEvery);
    // Heartbeats of a lock held in the background must not keep a Node process alive.
    (timer as { unref?: () => void }).unref?.();
  }

  const active: ActiveRegistration = {
    name: target.name,
    key,
    owner,
    fencingToken,
    get confirmed() {
      return confirmed;
    },
    observe(status, everyHold = false) {
      // An answer about another hold of the owner (a later one, say) says nothing of this one.
      const another = status.fencingToken !== null && status.fencingToken !== fencingToken;
      if (another && !everyHold) return;
      const reason = lossReason(status);
      if (reason !== undefined) end(reason);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      context.forget(active);
      if (ended) return;
      const deregister = () =>
        call("deregister", { ...hold, registration }).then(
          () => {},
          // Harmless: the object's next renewal finds the lock released and stops by itself.
          () => {},
        );
      // After the registration it cancels, never before (a late one would outlive it).
      if (confirmed) void deregister();
      else void context.track(registered.then((ok) => (ok ? deregister() : undefined)));
    },
  };

  const registered = register().then(
    (ok) => {
      if (ok) scheduleBeat();
      return ok;
    },
    () => false,
  );
  void context.track(registered);
  return active;
}

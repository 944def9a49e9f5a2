/**
 * A client layer that re-sends late: at a seeded rate, a request an isolate sent (any script
 * call — acquire, release, extend, renewal, leaving the queue, parking's registration — and the
 * park's blocking pop) is delivered once more, `minDelayMs`–`maxDelayMs` after it was first
 * sent, whatever became of the original and of its sender (it may have given up long since, or
 * died). The copy goes through the same faulty proxy and server as the original; its answer goes
 * nowhere. This is what `@upstash/redis`'s own re-sends (up to 5 over ~4 s after a network
 * error) and a slow network do to an edge client.
 *
 * Every copy of a request naming a tracked owner is recorded as one more request of that owner
 * (sent when the original was, settled when the copy's answer or failure came back), so the
 * bound of a dead holder's lock waits for it.
 */
import { createPrng } from "../../dev/rest/faults.js";

export interface LateCopyOptions {
  /** Fraction of requests delivered a second time, later. */
  readonly rate: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
}

/** What became of the copies, for the report. */
export interface LateCopyCounts {
  /** Copies drawn (their timers started). */
  readonly scheduled: number;
  /** Copies that left for the server (the rest were pending when the run stopped them). */
  readonly delivered: number;
  /** Of those, copies of a blocking pop (a park). */
  readonly parks: number;
  /** Delivered copies of a request whose sender had finished with it (settled) by then. */
  readonly afterSenderGaveUp: number;
}

/** One copy: `send` delivers it; `settled` is told when its answer (ignored) came back. */
export interface LateCopy {
  readonly park?: boolean;
  /** Whether the original has settled (its sender stopped waiting for it). */
  readonly originalSettled: () => boolean;
  send(): Promise<unknown>;
  settled?(at: number): void;
  /** The copy will never be sent (the run stopped first). */
  dropped?(): void;
}

export class LateCopies {
  readonly #options: LateCopyOptions;
  readonly #random: () => number;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  readonly #pending = new Map<ReturnType<typeof setTimeout>, LateCopy>();
  readonly #inFlight = new Set<Promise<void>>();
  #stopped = false;
  #scheduled = 0;
  #delivered = 0;
  #parks = 0;
  #afterSenderGaveUp = 0;
  /** When the last delivered copy settled (client clock; 0: none yet). */
  lastSettledAt = 0;

  constructor(options: LateCopyOptions, seed: number) {
    this.#options = options;
    this.#random = createPrng(seed ^ 0x1a7ec0de);
  }

  /** Called as each request leaves: maybe schedules a copy of it. True when one was drawn. */
  maybeCopy(copy: LateCopy): boolean {
    // Two draws per request whatever the rate, so a seed replays the same copies.
    const drawn = this.#random() < this.#options.rate;
    const delay =
      this.#options.minDelayMs +
      this.#random() * (this.#options.maxDelayMs - this.#options.minDelayMs);
    if (!drawn || this.#stopped) return false;
    this.#scheduled += 1;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#pending.delete(timer);
      this.#deliver(copy);
    }, delay);
    this.#timers.add(timer);
    this.#pending.set(timer, copy);
    return true;
  }

  #deliver(copy: LateCopy): void {
    this.#delivered += 1;
    if (copy.park) this.#parks += 1;
    if (copy.originalSettled()) this.#afterSenderGaveUp += 1;
    const flight = copy
      .send()
      .catch(() => {})
      .then(() => {
        const at = Date.now();
        this.lastSettledAt = Math.max(this.lastSettledAt, at);
        copy.settled?.(at);
        this.#inFlight.delete(flight);
      });
    this.#inFlight.add(flight);
  }

  /** No more copies: pending ones are dropped (they never arrive); waits for those in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) {
      clearTimeout(timer);
      this.#pending.get(timer)?.dropped?.();
    }
    this.#timers.clear();
    this.#pending.clear();
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  counts(): LateCopyCounts {
    return {
      scheduled: this.#scheduled,
      delivered: this.#delivered,
      parks: this.#parks,
      afterSenderGaveUp: this.#afterSenderGaveUp,
    };
  }
}

/**
 * Maybe schedules a late copy of an arming request (a renewal, an acquire that sets a lease),
 * tracked like the original: returns the copy's record — settled when its answer comes back, or
 * at once if it is never sent — to be listed beside the request, or undefined when none was drawn.
 */
export function copyArmingRequest<
  R extends { readonly sentAt: number; settledAt: number | undefined },
>(
  lateCopies: LateCopies | undefined,
  request: R,
  send: () => Promise<unknown>,
): (R & { readonly copy: true }) | undefined {
  const copy: R & { readonly copy: true; trace?: string; deliveredAt?: number } = {
    ...request,
    copy: true as const,
  };
  const copied = lateCopies?.maybeCopy({
    originalSettled: () => request.settledAt !== undefined,
    // Its answer reaches nobody; a violation's report shows it (a hold the copy took), and when
    // it left (what it did ran between then and its answer).
    send: async () => {
      copy.deliveredAt = Date.now();
      const reply = await send();
      copy.trace = `→ ${JSON.stringify(reply)?.slice(0, 80)}`;
      return reply;
    },
    settled: (at) => {
      copy.settledAt = at;
    },
    dropped: () => {
      copy.settledAt = copy.sentAt;
    },
  });
  return copied ? copy : undefined;
}

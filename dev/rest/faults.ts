/**
 * Fault injection for the dev server: latency, responses lost after the command ran, and requests
 * refused before anything ran. Decisions come from a seeded PRNG, so a run can be replayed: while
 * any fault is on, every request the filter matches draws exactly three numbers (fail, drop,
 * jitter) whatever the rates, so the same seed and request order give the same faults.
 */
import type { RouteKind } from "./routes.js";

/** Faults the local server injects into the requests they match; all off by default. */
export interface FaultOptions {
  /** Delay added before responding to each matching request, in ms. Default 0. */
  readonly latencyMs?: number;
  /** Uniform random variation of the delay, ± this many ms (the total never goes below 0). Default 0. */
  readonly jitterMs?: number;
  /**
   * Probability (0..1) that a matching request is executed and then its connection destroyed
   * without a response, like a reply lost in the network: `@upstash/redis` sees a fetch error and
   * re-sends the request. Default 0.
   */
  readonly dropAfterExecute?: number;
  /**
   * Probability (0..1) that a matching request is answered HTTP 503
   * `{"error":"injected fault: …"}` without running anything. Default 0.
   */
  readonly failBeforeExecute?: number;
  /** PRNG seed (a 32-bit integer). Setting it restarts the sequence. Default: random. */
  readonly seed?: number;
  /** Only requests to these routes are affected. Default: every route. */
  readonly routes?: readonly RouteKind[];
  /**
   * Only requests containing at least one of these commands (case-insensitive, e.g.
   * `["eval", "evalsha"]`) are affected. Default: every command.
   */
  readonly commands?: readonly string[];
  /** Stop injecting drop/fail faults after this many in total. Default: no limit. */
  readonly maxFaults?: number;
}

/** What to do with one request. */
export interface FaultDecision {
  readonly delayMs: number;
  readonly failBeforeExecute: boolean;
  readonly dropAfterExecute: boolean;
}

/** How many requests each fault touched since the start or the last `resetCounts()`. */
export interface FaultCounts {
  /** Requests answered 503 without running. */
  readonly failBeforeExecute: number;
  /** Requests whose response was dropped after running. */
  readonly dropAfterExecute: number;
  /** Requests that were delayed (delay > 0). */
  readonly delayed: number;
}

/** The full fault configuration in effect, defaults filled in. */
export interface FaultSettings {
  latencyMs: number;
  jitterMs: number;
  dropAfterExecute: number;
  failBeforeExecute: number;
  seed: number;
  routes: readonly RouteKind[] | undefined;
  commands: readonly string[] | undefined;
  maxFaults: number;
}

const NO_FAULT: FaultDecision = { delayMs: 0, failBeforeExecute: false, dropAfterExecute: false };

/** mulberry32: tiny, fast, good enough to spread faults; not for cryptography. */
export function createPrng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function checkRate(name: string, value: number | undefined): void {
  if (value !== undefined && !(value >= 0 && value <= 1)) {
    throw new RangeError(`fault rate ${name} must be between 0 and 1`);
  }
}

function checkNonNegative(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isFinite(value) && value >= 0)) {
    throw new RangeError(`${name} must be a non-negative number`);
  }
}

/** Holds the fault settings of a running server; change them at any time. */
export class FaultController {
  private settings: FaultSettings;
  private random: () => number;
  private injected = { failBeforeExecute: 0, dropAfterExecute: 0, delayed: 0 };
  // How to end each subscription stream open now (the server registers them: trackStream).
  private readonly streamEnds = new Set<() => void>();

  constructor(options: FaultOptions = {}) {
    this.settings = {
      latencyMs: 0,
      jitterMs: 0,
      dropAfterExecute: 0,
      failBeforeExecute: 0,
      seed: (Math.random() * 2 ** 32) >>> 0,
      routes: undefined,
      commands: undefined,
      maxFaults: Number.POSITIVE_INFINITY,
    };
    this.random = createPrng(this.settings.seed);
    this.configure(options);
  }

  /** Current settings, with defaults filled in. */
  get options(): Readonly<FaultSettings> {
    return { ...this.settings };
  }

  /** The seed in use (print it to replay a run). */
  get seed(): number {
    return this.settings.seed;
  }

  /** How many faults were injected, by kind, since the last `resetCounts()`. */
  counts(): FaultCounts {
    return { ...this.injected };
  }

  /** True when any fault can happen. */
  get active(): boolean {
    const s = this.settings;
    return s.latencyMs > 0 || s.jitterMs > 0 || s.dropAfterExecute > 0 || s.failBeforeExecute > 0;
  }

  /** Changes the given settings, keeping the others. A `seed` restarts the random sequence. */
  configure(options: FaultOptions): void {
    checkNonNegative("latencyMs", options.latencyMs);
    checkNonNegative("jitterMs", options.jitterMs);
    checkRate("dropAfterExecute", options.dropAfterExecute);
    checkRate("failBeforeExecute", options.failBeforeExecute);
    if (options.maxFaults !== undefined && !(options.maxFaults >= 0)) {
      throw new RangeError("maxFaults must be a non-negative number");
    }
    const next = { ...this.settings };
    if (options.latencyMs !== undefined) next.latencyMs = options.latencyMs;
    if (options.jitterMs !== undefined) next.jitterMs = options.jitterMs;
    if (options.dropAfterExecute !== undefined) next.dropAfterExecute = options.dropAfterExecute;
    if (options.failBeforeExecute !== undefined) next.failBeforeExecute = options.failBeforeExecute;
    if (options.routes !== undefined) next.routes = [...options.routes];
    if (options.commands !== undefined) {
      next.commands = options.commands.map((name) => name.toLowerCase());
    }
    if (options.maxFaults !== undefined) next.maxFaults = options.maxFaults;
    if (options.seed !== undefined) {
      if (!Number.isInteger(options.seed)) throw new RangeError("seed must be an integer");
      next.seed = options.seed >>> 0;
      this.random = createPrng(next.seed);
    }
    this.settings = next;
  }

  /** Turns every fault off and clears the filters (counts and seed are kept). */
  disable(): void {
    this.settings = {
      ...this.settings,
      latencyMs: 0,
      jitterMs: 0,
      dropAfterExecute: 0,
      failBeforeExecute: 0,
      routes: undefined,
      commands: undefined,
      maxFaults: Number.POSITIVE_INFINITY,
    };
  }

  resetCounts(): void {
    this.injected = { failBeforeExecute: 0, dropAfterExecute: 0, delayed: 0 };
  }

  /** Decides the fate of one request; counts what it decides. */
  decide(route: RouteKind, commandNames: readonly string[]): FaultDecision {
    if (!this.active || !this.matches(route, commandNames)) return NO_FAULT;
    const s = this.settings;
    const failDraw = this.random();
    const dropDraw = this.random();
    const jitterDraw = this.random();

    const budgetLeft =
      this.injected.failBeforeExecute + this.injected.dropAfterExecute < s.maxFaults;
    const failBeforeExecute = budgetLeft && failDraw < s.failBeforeExecute;
    const dropAfterExecute = budgetLeft && !failBeforeExecute && dropDraw < s.dropAfterExecute;
    const delayMs = Math.max(0, s.latencyMs + (jitterDraw * 2 - 1) * s.jitterMs);

    if (failBeforeExecute) this.injected.failBeforeExecute += 1;
    if (dropAfterExecute) this.injected.dropAfterExecute += 1;
    if (delayMs > 0) this.injected.delayed += 1;
    return { delayMs, failBeforeExecute, dropAfterExecute };
  }

  /**
   * The delay of one message a subscription's stream pushes (a published message, the
   * confirmation): the latency model's, as a reply's (`path` route, command `subscribe`, for the
   * filters); streams have no failure faults here.
   */
  pushDelayMs(): number {
    if (!this.active || !this.matches("path", ["subscribe"])) return 0;
    const s = this.settings;
    return Math.max(0, s.latencyMs + (this.random() * 2 - 1) * s.jitterMs);
  }

  /**
   * Ends every subscription stream open now, cleanly, as a proxy that closes long-lived
   * server-sent-event streams would: the client reads the body to its end, with no error and no
   * last event. Returns how many it ended.
   */
  endStreams(): number {
    const ends = [...this.streamEnds];
    this.streamEnds.clear();
    for (const end of ends) end();
    return ends.length;
  }

  /** @internal Called by the server: `end` ends one open stream; returns its unregistration. */
  trackStream(end: () => void): () => void {
    this.streamEnds.add(end);
    return () => this.streamEnds.delete(end);
  }

  private matches(route: RouteKind, commandNames: readonly string[]): boolean {
    const { routes, commands } = this.settings;
    if (routes !== undefined && !routes.includes(route)) return false;
    if (commands !== undefined && !commandNames.some((name) => commands.includes(name))) {
      return false;
    }
    return true;
  }
}

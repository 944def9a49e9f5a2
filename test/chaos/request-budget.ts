/**
 * Nested scopes and several clients per request, under a connection budget the harness enforces
 * (issue 41 case 9; the `*-sub` kinds, `config.requestRate`). push.md: on Workers "a request keeps
 * at most three streams open", over the scopes nested in it and every client used in it, "leaving
 * room for the attempts and releases" among an invocation's six connections.
 *
 * A *request* is one outer `client.scope()` whose handler runs 2–3 sub-tasks at once, each in a
 * nested `client.scope()` with an owner of its own, each a group of two tasks of that owner (one
 * through each of two LockClients the isolate made as a Worker makes them: the library takes the
 * Workers path by the user agent), all waiting in push mode on one key the others make busy.
 *
 * The harness counts from outside the library: a counting `fetch` (every `@upstash/redis` request
 * goes through the global `fetch`) attributes each connection — a subscription's stream, or a
 * request in flight until its body is read, fails or is cancelled — to the request whose code
 * opened it (the harness's own AsyncLocalStorage, apart from the library's scopes), and models the
 * Workers runtime: a request has at most six connections open, and a seventh waits until one
 * closes. A request that had more than three streams, or more than six connections, open at once
 * is a violation; liveness (a waiter beyond the stream budget polls) is the observer's check.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { LockClient } from "../../src/index.js";
import type { InvariantResult } from "./invariants.js";
import { Tally } from "./invariants.js";
import type { ChaosIsolate } from "./primitive.js";
import { runSiblings, type SectionContext } from "./section.js";

/** A Workers invocation's simultaneous open connections; requests beyond them queue. */
export const WORKERS_CONNECTIONS = 6;
/** The streams one request may keep open (push.md; src/wait/push/client-state.ts). */
export const STREAMS_PER_REQUEST = 3;

/** One request's connections as the counting fetch saw them. */
interface RequestRecord {
  readonly id: number;
  /** Counted while the handler runs; connections opened after it returned are not its. */
  live: boolean;
  open: number;
  streams: number;
  peakOpen: number;
  peakStreams: number;
  /** Fetches that waited for a connection (the seventh and later). */
  queued: number;
  /** Fetches waiting for a connection: called with whether a closing one handed its slot over. */
  readonly waiting: ((handedOver: boolean) => void)[];
  /** What the most streams at once were: `<at ms> <n> streams, <m> open`. */
  worst: string;
  readonly startedAt: number;
}

/** What the requests of a run met. */
export interface RequestBudgetCounts {
  /** Requests run (outer scopes). */
  requests: number;
  /** Waiting acquisitions in them. */
  waits: number;
  /** Requests that had the full budget of streams open at once (the budget was reached). */
  atStreamBudget: number;
  /** Fetches that waited for a connection (the request had six open). */
  queuedFetches: number;
  /** The most streams / connections one request had open at once. */
  peakStreams: number;
  peakConnections: number;
}

type Fetch = typeof fetch;

/**
 * The counting fetch, installed for one run: connections by request, the Workers limit of six
 * modelled, peaks recorded. `stop()` restores the global fetch.
 */
export class ConnectionBudget {
  readonly counts: RequestBudgetCounts = {
    requests: 0,
    waits: 0,
    atStreamBudget: 0,
    queuedFetches: 0,
    peakStreams: 0,
    peakConnections: 0,
  };
  readonly #storage = new AsyncLocalStorage<RequestRecord>();
  readonly #tally = new Tally(
    `a request keeps at most ${STREAMS_PER_REQUEST} streams and ${WORKERS_CONNECTIONS} connections open`,
  );
  readonly #original: Fetch;
  readonly #counting: Fetch;
  #nextId = 0;

  constructor() {
    this.#original = globalThis.fetch;
    this.#counting = (input, init) => this.#fetch(input, init);
    globalThis.fetch = this.#counting;
  }

  /** Runs `handler` as one request: every connection its code opens counts against it. */
  async run<T>(handler: () => Promise<T>): Promise<T> {
    const record: RequestRecord = {
      id: this.#nextId++,
      live: true,
      open: 0,
      streams: 0,
      peakOpen: 0,
      peakStreams: 0,
      queued: 0,
      waiting: [],
      worst: "none",
      startedAt: Date.now(),
    };
    this.counts.requests += 1;
    try {
      return await this.#storage.run(record, handler);
    } finally {
      record.live = false;
      // Its queued fetches (none should be left) go now: the request no longer counts.
      for (const go of record.waiting.splice(0)) go(false);
      if (record.peakStreams >= STREAMS_PER_REQUEST) this.counts.atStreamBudget += 1;
      this.#tally.check(
        record.peakStreams <= STREAMS_PER_REQUEST && record.peakOpen <= WORKERS_CONNECTIONS,
        () =>
          `request ${record.id}: ${record.peakStreams} streams and ${record.peakOpen} connections open at once (${record.worst})`,
      );
    }
  }

  result(): InvariantResult {
    return this.#tally.result();
  }

  /** Puts the global fetch back (if nobody replaced it meanwhile: nothing should have). */
  stop(): void {
    if (globalThis.fetch === this.#counting) globalThis.fetch = this.#original;
  }

  #fetch(input: Parameters<Fetch>[0], init: Parameters<Fetch>[1]): Promise<Response> {
    const record = this.#storage.getStore();
    if (record === undefined || !record.live) return this.#original(input, init);
    const stream = isEventStream(init);
    const signal = init?.signal ?? undefined;
    if (record.open < WORKERS_CONNECTIONS) return this.#opened(record, stream, input, init);
    // The Workers runtime: a seventh connection waits until one of the six closes.
    record.queued += 1;
    this.counts.queuedFetches += 1;
    return new Promise<boolean>((resolve, reject) => {
      const go = (handedOver: boolean) => {
        signal?.removeEventListener("abort", abort);
        resolve(handedOver);
      };
      const abort = () => {
        const at = record.waiting.indexOf(go);
        if (at >= 0) record.waiting.splice(at, 1);
        reject(signal?.reason);
      };
      if (signal?.aborted) return abort();
      signal?.addEventListener("abort", abort, { once: true });
      record.waiting.push(go);
    }).then((handedOver) =>
      handedOver ? this.#opened(record, stream, input, init, true) : this.#original(input, init),
    );
  }

  /** Sends on one of the request's connections, closed when the answer's body is done. */
  async #opened(
    record: RequestRecord,
    stream: boolean,
    input: Parameters<Fetch>[0],
    init: Parameters<Fetch>[1],
    /** The slot was handed over by a connection that closed (already counted open). */
    handedOver = false,
  ): Promise<Response> {
    if (!handedOver) record.open += 1;
    if (stream) record.streams += 1;
    if (record.streams > record.peakStreams) {
      record.peakStreams = record.streams;
      record.worst = `+${Date.now() - record.startedAt} ms: ${record.streams} streams, ${record.open} open`;
    }
    record.peakOpen = Math.max(record.peakOpen, record.open);
    this.counts.peakStreams = Math.max(this.counts.peakStreams, record.peakStreams);
    this.counts.peakConnections = Math.max(this.counts.peakConnections, record.peakOpen);
    let closed = false;
    const signal = init?.signal ?? undefined;
    const close = () => {
      if (closed) return;
      closed = true;
      signal?.removeEventListener("abort", close);
      if (stream) record.streams -= 1;
      // The slot goes straight to the first fetch waiting for one, so none can take it first.
      const next = record.waiting.shift();
      if (next === undefined) record.open -= 1;
      else next(true);
    };
    // An aborted fetch (a stream the library unsubscribed, a request given up) closes at once.
    if (signal?.aborted) close();
    signal?.addEventListener("abort", close, { once: true });
    try {
      return closingWithBody(await this.#original(input, init), close);
    } catch (error) {
      close();
      throw error;
    }
  }
}

/** `@upstash/redis`'s subscribe asks for `text/event-stream`. */
function isEventStream(init: RequestInit | undefined): boolean {
  const headers = init?.headers;
  if (headers === undefined) return false;
  const accept =
    headers instanceof Headers
      ? headers.get("accept")
      : Array.isArray(headers)
        ? headers.find(([name]) => name.toLowerCase() === "accept")?.[1]
        : (headers as Record<string, string>).Accept;
  return accept === "text/event-stream";
}

/** `response` whose body calls `close` once read to its end, failed or cancelled. */
function closingWithBody(response: Response, close: () => void): Response {
  const source = response.body;
  if (source === null) {
    close();
    return response;
  }
  const reader = source.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await reader.read();
        if (done) {
          close();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        close();
        controller.error(error);
      }
    },
    cancel(reason) {
      close();
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/**
 * Two LockClients of `isolate` made as on Workers (the user agent the library decides by:
 * `Cloudflare-Workers`): each acquisition waiting by word has a stream of its own, counted
 * against its request's budget. Made once per isolate.
 */
export function workersClients(
  isolate: ChaosIsolate,
  made: Map<number, readonly [ChaosIsolate, ChaosIsolate]>,
): readonly [ChaosIsolate, ChaosIsolate] {
  const known = made.get(isolate.id);
  if (known !== undefined) return known;
  const spawn = isolate.spawnClient;
  if (spawn === undefined) throw new Error("chaos: the request pattern needs isolate.spawnClient");
  const scope = globalThis as { navigator?: unknown };
  const before = Object.getOwnPropertyDescriptor(scope, "navigator");
  Object.defineProperty(scope, "navigator", {
    value: { userAgent: "Cloudflare-Workers" },
    configurable: true,
    writable: true,
  });
  try {
    const views = [
      { ...isolate, client: spawn() },
      { ...isolate, client: spawn() },
    ] as const;
    made.set(isolate.id, views);
    return views;
  } finally {
    if (before === undefined) delete scope.navigator;
    else Object.defineProperty(scope, "navigator", before);
  }
}

/**
 * One request's handler: `subTasks` sub-tasks at once, each in a scope nested in the request's
 * (`apart`: a sabotage — each sub-task in a top-level scope of its own, as if nested scopes did
 * not share their request), each run by `subTask` with its owner and the client whose scope it is.
 */
export function runRequestScopes(
  clients: readonly [ChaosIsolate, ChaosIsolate],
  subTasks: number,
  apart: boolean,
  subTask: (index: number, owner: string) => Promise<void>,
): Promise<unknown> {
  const run = () =>
    Promise.all(
      Array.from({ length: subTasks }, (_, index) => {
        const owner = LockClient.newOwner();
        return clients[index % 2]!.client.scope(() => subTask(index, owner), owner);
      }),
    );
  return apart ? run() : clients[0].client.scope(run);
}

/**
 * One request of the workload (a section drawn as one, `config.requestRate`): 2–3 sub-tasks on
 * one key, each a sibling group of two tasks of its own owner, one through each Workers client,
 * every task waiting (section.ts runs and checks each as any section).
 */
export async function runRequest(
  ctx: SectionContext,
  isolate: ChaosIsolate,
  budget: ConnectionBudget,
  made: Map<number, readonly [ChaosIsolate, ChaosIsolate]>,
): Promise<void> {
  const clients = workersClients(isolate, made);
  const key = ctx.keys[Math.floor(ctx.random() * ctx.keys.length)] ?? ctx.keys[0]!;
  const subTasks = 2 + Math.floor(ctx.random() * 2);
  budget.counts.waits += subTasks * TASKS_PER_SUB_TASK;
  await budget.run(() =>
    runRequestScopes(clients, subTasks, ctx.config.requestScopesApart === true, (_, owner) =>
      runSiblings(ctx, isolate, {
        owner,
        count: TASKS_PER_SUB_TASK,
        key,
        clients,
        // Fewer aborts and longer holds than plain siblings: the key stays busy while most of
        // the request's waits wait (streams open), a few still give up with a stream open.
        abortRate: ctx.config.siblingAbortRate / 4,
        holdLeases: 0.5,
      }),
    ),
  );
}

/** A sub-task's concurrent waits: one through each client. */
const TASKS_PER_SUB_TASK = 2;

/** The figures every run of the pattern must meet (chaos.test.ts requires each above 0). */
export function requestFigures(counts: RequestBudgetCounts): Record<string, number> {
  return {
    "requests (outer scopes: nested scopes over two Workers clients)": counts.requests,
    "  waits in them": counts.waits,
    [`  requests that had ${STREAMS_PER_REQUEST} streams open at once`]: counts.atStreamBudget,
    "  most connections one request had open at once": counts.peakConnections,
  };
}

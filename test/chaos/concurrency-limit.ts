/**
 * Chaos for `concurrencyLimit()` (issue 41 case 1: responses whose bodies are dropped): isolates
 * each run their own Hono app, one route per answer shape behind the middleware (watchdog mode,
 * `permits` per tenant, a short `unreadBodyMs`), against the faulty server. Clients send a mix of
 * requests: a GET read to its end, a HEAD, a GET whose Response is dropped unread, a GET whose
 * streamed body is cancelled after its first chunk, a handler that throws, a streamed body read to
 * its end. Each request runs in a scope with an owner of its own, so that every hold the observer
 * reads in Redis names the request it belongs to.
 *
 * The checks trust no answer of the middleware:
 * - at most `permits` handlers of one tenant run at once (a counter in the handler; a handler
 *   counts while its hold is surely valid: the watchdog's last confirmed renewal + its timeout);
 * - every permit comes back: once a request ended (its body read, cancelled or dropped, its HEAD
 *   or error answered), a release of its hold is sent within the bound (at once; a dropped body
 *   after `unreadBodyMs`), and the observer sees the hold gone once that release settled (a failed
 *   one: once its watchdog, renewing until the retries give up, can no longer re-arm it);
 * - when the run ends, no hold is left;
 * - liveness: no 429 is answered while the observer saw a permit of that tenant free, and none
 *   granted, for the whole of the request.
 */
import { createHash } from "node:crypto";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { createPrng } from "../../dev/rest/faults.js";
import { type ConcurrencyLimitOptions, concurrencyLimit } from "../../src/hono/index.js";
import { LockClient, type RedisLike } from "../../src/index.js";
import { semaphoreKeys } from "../../src/locks/semaphore/keys.js";
import type { PermitHandle } from "../../src/locks/semaphore/permit-handle.js";
import { sleep as sleepMs } from "../../src/platform.js";
import { SCRIPTS } from "../../src/scripts.js";
import type { ChaosConfig } from "./config.js";
import { createIsolate, startEnvironment } from "./environment.js";
import { type InvariantResult, Tally } from "./invariants.js";
import type { RenewalRecord } from "./killable-renewer.js";
import type { LateCopyCounts } from "./late-copies.js";
import { LoopLag } from "./loop-lag.js";
import type { ChaosIsolate } from "./primitive.js";
import { type KeyState, readKeys, type Sample, startSampler } from "./server-state.js";
import { startSpikes } from "./spikes.js";

/** How a client treats its request and the answer. */
export type RequestKind = "read" | "head" | "drop" | "cancel" | "throw" | "stream";

/** The mix of requests (weights). */
const MIX: readonly (readonly [RequestKind, number])[] = [
  ["read", 0.22],
  ["head", 0.2],
  ["drop", 0.15],
  ["cancel", 0.11],
  ["throw", 0.1],
  ["stream", 0.22],
];

export interface ConcurrencyLimitChaosOptions {
  /** Permits per tenant. Default 3. */
  readonly permits?: number;
  /** The middleware's `unreadBodyMs`. Default 500. */
  readonly unreadBodyMs?: number;
  /**
   * Tenants (one semaphore each). Default one per 4 clients (at least 3): each tenant's permits
   * are sometimes all taken, sometimes free.
   */
  readonly tenants?: number;
  /**
   * The middleware under test, given the options the run would pass `concurrencyLimit()` (the
   * sabotage cases swap in a broken copy). Default `concurrencyLimit`.
   */
  readonly middleware?: (options: ConcurrencyLimitOptions) => MiddlewareHandler;
}

export interface ConcurrencyLimitChaosResult {
  readonly primitive: "concurrencyLimit()";
  readonly elapsedMs: number;
  /** Requests sent (each one `app.fetch`). */
  readonly sent: number;
  readonly byKind: Readonly<Record<RequestKind, number>>;
  /** Answers by status (`threw <name>` when `app.fetch` rejected). */
  readonly statuses: Readonly<Record<string, number>>;
  /** Requests whose handler ran (they held a permit). */
  readonly handled: number;
  /** Releases of a permit sent (retries included), and those that failed. */
  readonly releases: { readonly sent: number; readonly failed: number };
  readonly requests: { readonly total: number; readonly faultedFraction: number };
  readonly lateCopies: LateCopyCounts;
  readonly invariants: readonly InvariantResult[];
  readonly violations: number;
}

/** A timer or request may be this late past its due time before the check objects. */
const SLACK_MS = 150;

/** The texts and SHA-1s of the semaphore's release script. */
const RELEASE_SCRIPTS: ReadonlySet<string> = new Set(
  ["semaphore.release"].flatMap((name) => {
    const script = SCRIPTS.get(name);
    if (script === undefined) throw new Error(`chaos: no script ${name} in the catalogue`);
    return [script.source, script.keyLocking.source].flatMap((source) => [
      source,
      createHash("sha1").update(source, "utf8").digest("hex"),
    ]);
  }),
);

/** One release request of a hold, as the harness timed it. */
interface ReleaseRequest {
  /** The hold it releases: a request may release a hold lost on arrival before its permit's. */
  readonly token: number;
  readonly sentAt: number;
  settledAt: number | undefined;
  failed: boolean;
}

/** What happened to one request, as the client and the handler saw it. */
interface RequestRecord {
  readonly owner: string;
  readonly tenant: string;
  readonly kind: RequestKind;
  readonly isolate: ChaosIsolate;
  readonly startedAt: number;
  /** When the client was done with it (answer read, cancelled, dropped); undefined while not. */
  endedAt?: number;
  status?: string;
  /** Set when the handler ran: the hold it ran under. */
  permit?: { readonly fencingToken: number };
}

/** `redis`, with the release requests of every hold timed by owner. */
function timingReleases(redis: RedisLike, releases: Map<string, ReleaseRequest[]>): RedisLike {
  const timed = async <T>(
    scriptOrSha: string,
    args: readonly unknown[],
    send: () => Promise<T>,
  ): Promise<T> => {
    if (!RELEASE_SCRIPTS.has(scriptOrSha)) return send();
    const [owner = "", token = "0"] = typeof args[0] === "string" ? args[0].split(" ") : [];
    const request: ReleaseRequest = {
      token: Number(token),
      sentAt: Date.now(),
      settledAt: undefined,
      failed: false,
    };
    releases.set(owner, [...(releases.get(owner) ?? []), request]);
    try {
      return await send();
    } catch (error) {
      request.failed = true;
      throw error;
    } finally {
      request.settledAt = Date.now();
    }
  };
  return {
    ...redis,
    eval: (script, keys, args) => timed(script, args, () => redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) => timed(sha, args, () => redis.evalsha(sha, keys, args)),
  };
}

/** Handlers running now, per tenant, each with until when its hold is surely valid. */
class Overlap {
  readonly #running = new Map<string, Set<{ validUntil(): number; what: string }>>();
  readonly tally = new Tally("at most `permits` handlers of a tenant run at once");

  constructor(readonly permits: number) {}

  /** A handler starts: returns the function that marks it done. */
  enter(tenant: string, validUntil: () => number, what: string): () => void {
    const running = this.#running.get(tenant) ?? new Set();
    this.#running.set(tenant, running);
    const now = Date.now();
    const trusted = [...running].filter((entry) => entry.validUntil() > now);
    this.tally.check(
      trusted.length < this.permits,
      () =>
        `tenant ${tenant}: ${what} started at ${now} while ${trusted.length} handlers held permits ` +
        `valid for ${trusted.map((entry) => `${entry.what} ${entry.validUntil() - now} ms`).join(", ")}`,
    );
    const entry = { validUntil, what };
    running.add(entry);
    return () => running.delete(entry);
  }
}

/** A permit of the tenant is free for a request's attempt: fewer live holds than permits, none queued. */
function isFree(state: KeyState, permits: number): boolean {
  let holds = 0;
  for (const tokens of state.tokens?.values() ?? []) holds += tokens.length;
  return holds < permits && state.queue.size === 0;
}

/**
 * The stretches in which the observer saw a permit of `tenant` free and none granted, reading
 * after reading: surely free from the first reading's answer to the last one's send.
 */
function freeStretches(
  samples: readonly Sample[],
  tenant: string,
  permits: number,
): { from: number; to: number }[] {
  const stretches: { from: number; to: number }[] = [];
  let open: { from: number; to: number; granted: number | undefined } | undefined;
  for (const sample of samples) {
    const state = sample.states.get(tenant);
    if (state === undefined) continue;
    const free = isFree(state, permits);
    if (!free || (open !== undefined && open.granted !== state.granted)) {
      if (open !== undefined && open.to > open.from) stretches.push(open);
      open = undefined;
    }
    if (!free) continue;
    if (open === undefined) {
      open = { from: sample.answeredAt, to: sample.answeredAt, granted: state.granted };
    } else {
      open.to = sample.sentAt;
    }
  }
  if (open !== undefined && open.to > open.from) stretches.push(open);
  return stretches;
}

/**
 * @param requests - requests to send in all
 */
export async function runConcurrencyLimitChaos(
  config: ChaosConfig,
  requests: number,
  options: ConcurrencyLimitChaosOptions = {},
): Promise<ConcurrencyLimitChaosResult> {
  const permits = options.permits ?? 3;
  const unreadBodyMs = options.unreadBodyMs ?? 500;
  const clients = config.isolates * config.holdersPerIsolate;
  const tenants = Array.from(
    { length: options.tenants ?? Math.max(3, Math.ceil(clients / 4)) },
    (_, index) => `tenant${index}`,
  );
  const middleware = options.middleware ?? concurrencyLimit;
  const env = await startEnvironment({
    ...config,
    maxHangMs: config.requestTimeoutMs * 4,
    lateCopies: config.lateCopies,
  });
  const lag = new LoopLag();
  lag.start();
  try {
    const random = createPrng(config.seed ^ 0xc0cc);
    const records = new Map<string, RequestRecord>();
    const releases = new Map<string, ReleaseRequest[]>();
    const overlap = new Overlap(permits);
    const isolates = Array.from({ length: config.isolates }, (_, id) =>
      createIsolate(env, id, config),
    );
    const apps = isolates.map((isolate) => {
      const client = new LockClient({
        redis: timingReleases(isolate.client.redis, releases),
        prefix: env.prefix,
        watchdogTimeoutMs: config.watchdogTimeoutMs,
        // Parks shorter than a request timeout (the default 5 s would end each park as a
        // failed request while its pop stayed open at the server: polling in all but name).
        wait: { ...config.wait, parkMs: config.push.parkMs, maxPolls: 10_000 },
        watchdog: isolate.renewer,
      });
      const app = new Hono<{ Variables: { permit: PermitHandle } }>();
      // Hono's default answer logs every error: the thrown handlers are the harness's own.
      app.onError((_error, c) => c.text("handler threw", 500));
      app.use(
        "*",
        middleware({
          client,
          key: (c: Context) => c.req.header("x-tenant") ?? "none",
          permits,
          unreadBodyMs,
          // Failed releases are counted from the requests themselves.
          onFailure: () => {},
        }) as MiddlewareHandler,
      );
      const running = (c: Context<{ Variables: { permit: PermitHandle } }>) => {
        const permit = c.get("permit");
        const record = records.get(permit.owner)!;
        record.permit = { fencingToken: permit.fencingToken };
        const renewal: RenewalRecord | undefined = isolate.renewer.record(permit.owner, {
          fencingToken: permit.fencingToken,
        });
        const acquiredBy = record.startedAt;
        const validUntil = () =>
          (renewal?.confirmedSentAt ?? acquiredBy) + config.watchdogTimeoutMs;
        return overlap.enter(
          record.tenant,
          validUntil,
          `${record.kind} ${permit.owner.slice(0, 8)} (token ${permit.fencingToken})`,
        );
      };
      app.get("/plain", async (c) => {
        const done = running(c);
        try {
          await sleepMs(5 + random() * 25);
          if (c.req.query("throw") !== undefined) throw new Error("the handler failed");
          return c.text("x".repeat(2_000));
        } finally {
          done();
        }
      });
      app.get("/stream", async (c) => {
        const done = running(c);
        await sleepMs(random() * 10);
        let chunks = 4;
        const body = new ReadableStream<Uint8Array>(
          {
            async pull(controller) {
              await sleepMs(5 + random() * 15);
              if (chunks-- > 0) {
                controller.enqueue(new TextEncoder().encode("chunk "));
              } else {
                controller.close();
                done();
              }
            },
            cancel() {
              done();
            },
          },
          { highWaterMark: 0 },
        );
        return c.body(body);
      });
      return app;
    });

    const byKind = Object.fromEntries(MIX.map(([kind]) => [kind, 0])) as Record<
      RequestKind,
      number
    >;
    const statuses: Record<string, number> = {};
    const pick = (): RequestKind => {
      let draw = random();
      for (const [kind, weight] of MIX) {
        draw -= weight;
        if (draw < 0) return kind;
      }
      return "read";
    };
    const layout = (tenant: string) => {
      const keys = semaphoreKeys(env.prefix, tenant);
      return {
        key: tenant,
        leases: keys.leases,
        queue: keys.queue,
        timeouts: keys.timeouts,
        granted: keys.fence,
      };
    };
    const readTenants = (keys: readonly string[]) => readKeys(env.observer.raw, keys.map(layout));
    const sampler = startSampler(readTenants, tenants, config.sampleIntervalMs);
    const spikes = startSpikes([env.server.faults], config.spike);
    const startedAt = Date.now();
    let sent = 0;

    const send = async (workerIsolate: number) => {
      const isolate = isolates[workerIsolate]!;
      const app = apps[workerIsolate]!;
      const kind = pick();
      const tenant = tenants[Math.floor(random() * tenants.length)]!;
      const owner = LockClient.newOwner();
      isolate.track(owner);
      const record: RequestRecord = { owner, tenant, kind, isolate, startedAt: Date.now() };
      records.set(owner, record);
      sent += 1;
      byKind[kind] += 1;
      const path =
        kind === "stream" || kind === "cancel"
          ? "/stream"
          : kind === "throw"
            ? "/plain?throw"
            : "/plain";
      const request = new Request(`http://chaos${path}`, {
        method: kind === "head" ? "HEAD" : "GET",
        headers: { "x-tenant": tenant },
      });
      try {
        const response = await isolate.client.scope(
          () => Promise.resolve(app.fetch(request)),
          owner,
        );
        record.status = String(response.status);
        if (kind === "drop" && response.ok) {
          // Dropped: never read nor cancelled, as a runtime that discards it.
        } else if (kind === "cancel" && response.body !== null) {
          const reader = response.body.getReader();
          await reader.read();
          await reader.cancel("the client went away");
        } else {
          await response.arrayBuffer();
        }
      } catch (error) {
        record.status = `threw ${(error as Error).name}`;
      }
      record.endedAt = Date.now();
      statuses[record.status] = (statuses[record.status] ?? 0) + 1;
    };
    const workers = Array.from({ length: clients }, async (_, worker) => {
      while (sent < requests) {
        await send(worker % config.isolates);
        // A short pause between requests: the tenants' permits are not always all taken.
        await sleepMs(random() * 40);
      }
    });
    await Promise.all(workers).finally(() => spikes.stop());
    const elapsedMs = Date.now() - startedAt;

    /**
     * Until when `owner`'s hold may still be seen in Redis at `at` (Infinity: nothing known yet
     * bounds it), and why; `late` says whether no release was sent in time.
     */
    const boundOf = (record: RequestRecord, at: number): { until: number; why: string } => {
      if (record.endedAt === undefined) return { until: Number.POSITIVE_INFINITY, why: "running" };
      // Its late copies too (an acquisition's copy replays, by its operation id, what it did).
      let lastSettled = record.endedAt;
      for (const request of record.isolate.requestsOf(record.owner)) {
        lastSettled = Math.max(lastSettled, request.settledAt ?? Number.POSITIVE_INFINITY);
      }
      const unleased = lastSettled + config.watchdogTimeoutMs;
      if (record.permit === undefined) {
        // No handler ran: whatever its attempts took, nothing renews it.
        return { until: unleased, why: `no permit; last request + lease` };
      }
      const allowance = record.kind === "drop" && record.status === "200" ? unreadBodyMs : 0;
      const due = record.endedAt + allowance;
      const dueBy = due + SLACK_MS + lag.lateness(due, Math.max(due, at));
      // Its permit's own: a hold that came back lost on arrival was released before it.
      const ofPermit = (releases.get(record.owner) ?? []).filter(
        (release) => release.token === record.permit!.fencingToken,
      );
      const sentReleases = ofPermit.filter((release) => release.sentAt <= dueBy);
      if (sentReleases.length === 0) {
        return { until: dueBy, why: `no release sent by ${dueBy}` };
      }
      const succeeded = sentReleases.filter(
        (release) => !release.failed && release.settledAt !== undefined,
      );
      if (succeeded.length > 0) {
        const released = Math.min(...succeeded.map((release) => release.settledAt!));
        return { until: released, why: `released at ${released}` };
      }
      // Failed so far: retried in the background while its watchdog renews, then given up.
      const later = ofPermit.filter(
        (release) => !release.failed && release.settledAt !== undefined,
      );
      const released =
        later.length > 0 ? Math.min(...later.map((release) => release.settledAt!)) : unleased;
      return { until: released, why: `release failed; then ${released}` };
    };

    /** The holds in a reading, each with its request. */
    const holdsIn = (sample: Sample) =>
      [...sample.states].flatMap(([tenant, state]) =>
        [...(state.tokens ?? [])].flatMap(([owner, tokens]) =>
          tokens.map((token) => ({ tenant, owner, token, record: records.get(owner) })),
        ),
      );

    // The run's end: every hold must go within its bound (a failed release's retries take ~10 s).
    const endBy = Date.now() + 15_000;
    while (Date.now() < endBy) {
      const last = sampler.samples.at(-1);
      if (last !== undefined && last.sentAt > elapsedMs + startedAt) {
        const left = holdsIn(last);
        if (left.length === 0) break;
        const now = Date.now();
        if (
          left.every(({ record }) => record === undefined || boundOf(record, now).until + 300 < now)
        ) {
          break;
        }
      }
      await sleepMs(50);
    }
    await sampler.stop();
    await env.lateCopies.stop();

    const serverHolds = new Tally("at most `permits` live holds of a tenant in any reading");
    for (const sample of sampler.samples) {
      for (const tenant of tenants) {
        const held = holdsIn(sample).filter((hold) => hold.tenant === tenant);
        serverHolds.check(
          held.length <= permits,
          () =>
            `tenant ${tenant}: ${held.length} live holds read at ${sample.sentAt}: ` +
            held.map(({ owner, token }) => `${owner.slice(0, 8)} (token ${token})`).join(", "),
        );
      }
    }

    // The first time each hold was seen past its bound.
    const pastBound = new Map<string, string>();
    for (const sample of sampler.samples) {
      for (const { tenant, owner, token, record } of holdsIn(sample)) {
        if (record === undefined || pastBound.has(owner)) continue; // every hold is a request's
        const bound = boundOf(record, sample.sentAt);
        if (sample.sentAt <= bound.until + SLACK_MS) continue;
        pastBound.set(
          owner,
          `tenant ${tenant}: ${record.kind} ${owner.slice(0, 8)} (token ${token}, ${record.status}) ` +
            `ended at ${record.endedAt}, its hold seen at ${sample.sentAt} (${sample.sentAt - record.endedAt!} ms after), ` +
            `allowed until ${bound.until} (${bound.why})`,
        );
      }
    }
    const returned = new Tally("every permit comes back within its bound after its request ends");
    for (const record of records.values()) {
      const past = pastBound.get(record.owner);
      if (record.permit === undefined && past === undefined) continue;
      returned.check(past === undefined, () => past!);
    }

    const final = sampler.samples.at(-1);
    const left = final === undefined ? [] : holdsIn(final);
    const leftAtEnd = new Tally("no hold left when the run ends");
    for (const tenant of tenants) {
      const held = left.filter((hold) => hold.tenant === tenant);
      leftAtEnd.check(held.length === 0, () =>
        held
          .map(
            ({ owner, token, record }) =>
              `tenant ${tenant}: ${record?.kind ?? "?"} ${owner.slice(0, 8)} (token ${token}) still held, ` +
              `its request ended at ${record?.endedAt}`,
          )
          .join("; "),
      );
    }

    const liveness = new Tally(
      "no 429 answered while a permit was free (and none granted) for the whole request",
    );
    const stretchesByTenant = new Map(
      tenants.map((tenant) => [tenant, freeStretches(sampler.samples, tenant, permits)]),
    );
    for (const record of records.values()) {
      if (record.status !== "429") continue;
      // A failed request of its own: its attempt may not have run as the reading shows.
      if (record.isolate.requestsOf(record.owner).some((request) => request.failed)) continue;
      const answeredAt = record.endedAt!;
      const stretch = stretchesByTenant
        .get(record.tenant)!
        .find((each) => each.from <= record.startedAt && answeredAt <= each.to);
      liveness.check(
        stretch === undefined,
        () =>
          `tenant ${record.tenant}: ${record.kind} ${record.owner.slice(0, 8)} answered 429 ` +
          `(${record.startedAt}–${answeredAt}) while a permit was free ${stretch!.from}–${stretch!.to}`,
      );
    }

    // Leaked holds (a sabotaged middleware's) stop renewing with the run.
    for (const record of records.values()) record.isolate.renewer.kill(record.owner);

    const faults = env.server.faults.counts();
    const hangs = env.hangs();
    const faulted =
      faults.failBeforeExecute +
      faults.dropAfterExecute +
      faults.delayed +
      hangs.hungBeforeExecute +
      hangs.hungAfterExecute;
    const invariants = [
      overlap.tally.result(),
      serverHolds.result(),
      returned.result(),
      leftAtEnd.result(),
      liveness.result(),
      {
        name: "the observer's readings all answered",
        checked: sampler.samples.length,
        violations: sampler.failures,
        examples: [],
      },
    ];
    const allReleases = [...releases.values()].flat();
    return {
      primitive: "concurrencyLimit()",
      elapsedMs,
      sent,
      byKind,
      statuses,
      handled: [...records.values()].filter((record) => record.permit !== undefined).length,
      releases: {
        sent: allReleases.length,
        failed: allReleases.filter((release) => release.failed).length,
      },
      requests: {
        total: hangs.requests,
        faultedFraction: hangs.requests === 0 ? 0 : faulted / hangs.requests,
      },
      lateCopies: env.lateCopies.counts(),
      invariants,
      violations: invariants.reduce((sum, invariant) => sum + invariant.violations, 0),
    };
  } finally {
    lag.stop();
    await env.close();
  }
}

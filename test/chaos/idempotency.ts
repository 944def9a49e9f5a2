/**
 * Chaos for `idempotency()`: isolates each run their own Hono app (two routes, each guarded by
 * `idempotency()` with the default route scope) against the faulty server, and deliveries of a
 * few event ids go to both routes, often several copies at once, as webhook senders retry and fan
 * out. The handler is the harness's own code: it counts its executions per (route, key) itself,
 * so the check trusts no answer of the middleware: one execution per key and scope.
 */
import { type Context, Hono } from "hono";
import { createPrng } from "../../dev/rest/faults.js";
import { fromHeader, idempotency } from "../../src/hono/index.js";
import { sleep as sleepMs } from "../../src/platform.js";
import type { ChaosConfig } from "./config.js";
import { createIsolate, startEnvironment } from "./environment.js";
import type { InvariantResult } from "./invariants.js";
import type { LateCopyCounts } from "./late-copies.js";
import { startSpikes } from "./spikes.js";

export interface IdempotencyChaosResult {
  readonly primitive: "idempotency()";
  readonly elapsedMs: number;
  /** Deliveries sent (each one request to `app.fetch`). */
  readonly deliveries: number;
  /** Answers by status. */
  readonly statuses: Readonly<Record<string, number>>;
  readonly requests: { readonly total: number; readonly faultedFraction: number };
  /** Copies of the isolates' requests delivered again late (see late-copies.ts). */
  readonly lateCopies: LateCopyCounts;
  readonly invariants: readonly InvariantResult[];
  readonly violations: number;
}

const ROUTES = ["/hooks/a", "/hooks/b"] as const;

/**
 * @param guard false: the routes without `idempotency()` (the sabotage case: duplicates run)
 */
export async function runIdempotencyChaos(
  config: ChaosConfig,
  deliveries: number,
  guard = true,
): Promise<IdempotencyChaosResult> {
  const env = await startEnvironment({ ...config, maxHangMs: config.requestTimeoutMs * 4 });
  try {
    const random = createPrng(config.seed ^ 0x1d3);
    const executions = new Map<string, number>();
    const apps = Array.from({ length: config.isolates }, (_, id) => {
      const isolate = createIsolate(env, id, config);
      const app = new Hono();
      for (const route of ROUTES) {
        const handler = async (c: Context) => {
          const id = `${route} ${c.req.header("idempotency-key")}`;
          executions.set(id, (executions.get(id) ?? 0) + 1);
          await sleepMs(random() * 5);
          return c.json({ done: id });
        };
        if (guard) {
          // Registered on the route itself: its pattern is the key's scope.
          app.post(
            route,
            idempotency({ client: isolate.client, key: fromHeader("idempotency-key") }),
            handler,
          );
        } else {
          app.post(route, handler);
        }
      }
      return app;
    });
    const statuses: Record<string, number> = {};
    const spikes = startSpikes([env.server.faults], config.spike);
    const startedAt = Date.now();
    let sent = 0;
    const events = Math.max(1, Math.floor(deliveries / 6));
    const deliver = async () => {
      const app = apps[Math.floor(random() * apps.length)]!;
      const route = ROUTES[Math.floor(random() * ROUTES.length)]!;
      const key = `evt_${Math.floor(random() * events)}`;
      const copies = 1 + Math.floor(random() * 3);
      sent += copies;
      const answers = await Promise.all(
        Array.from({ length: copies }, () =>
          Promise.resolve(
            app.fetch(
              new Request(`http://chaos${route}`, {
                method: "POST",
                headers: { "idempotency-key": key, "content-type": "application/json" },
                body: "{}",
              }),
            ),
          ).then(
            (response) => String(response.status),
            (error: unknown) => `threw ${(error as Error).name}`,
          ),
        ),
      );
      for (const status of answers) statuses[status] = (statuses[status] ?? 0) + 1;
    };
    const workers = Array.from({ length: config.isolates * config.holdersPerIsolate }, async () => {
      while (sent < deliveries) await deliver();
    });
    await Promise.all(workers).finally(() => spikes.stop());
    const elapsedMs = Date.now() - startedAt;
    await env.lateCopies.stop();
    const faults = env.server.faults.counts();
    const hangs = env.hangs();
    const faulted =
      faults.failBeforeExecute +
      faults.dropAfterExecute +
      faults.delayed +
      hangs.hungBeforeExecute +
      hangs.hungAfterExecute;
    const twice = [...executions].filter(([, count]) => count > 1);
    const once: InvariantResult = {
      name: "one execution per idempotency key and scope",
      checked: executions.size,
      violations: twice.length,
      examples: twice.slice(0, 5).map(([id, count]) => `${id} ran ${count} times`),
    };
    return {
      primitive: "idempotency()",
      elapsedMs,
      deliveries: sent,
      statuses,
      requests: {
        total: hangs.requests,
        faultedFraction: hangs.requests === 0 ? 0 : faulted / hangs.requests,
      },
      lateCopies: env.lateCopies.counts(),
      invariants: [once],
      violations: once.violations,
    };
  } finally {
    await env.close();
  }
}

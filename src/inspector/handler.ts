/**
 * The inspector as a fetch handler for any runtime: the page and its JSON API. Routes match the
 * end of the path, so it works wherever it is mounted (the page at a path ending in `/`).
 */
import { EdgelockError, LockInputError } from "../errors.js";
import { type PlainLockClient as LockClient, runtimeOf } from "../plain-lock-client.js";
import { checkLockName } from "../validate.js";
import { forceReleaseLock, removeWaiter } from "./actions.js";
import { PAGE_CSS, PAGE_HTML, PAGE_JS } from "./page.js";
import type { RecentWaitsRecorder } from "./recent-waits.js";
import { checkExec, isPermissionRefusal } from "./redis.js";
import { DEFAULT_BUDGET, namesWithinBudget, type RefreshBudget, takeSnapshot } from "./snapshot.js";
import type { InspectedWaits, InspectorAccess } from "./types.js";

/** Options of `inspectorHandler()`: the client to inspect, who may act, and each refresh's budget. */
export interface InspectorHandlerOptions extends RefreshBudget {
  /**
   * The LockClient whose Redis (one that can send SCAN, as `@upstash/redis`) and prefix are
   * inspected; a read-write lock's force-release needs the root entry's client. Required.
   */
  client: LockClient;
  /**
   * Each request's access, behind your own authentication: `"write"` (also force-release and
   * remove waiters), `"read"` or `"none"` (403). A read-only Redis token makes every page
   * read-only. Required.
   */
  access: (request: Request) => InspectorAccess | Promise<InspectorAccess>;
  /**
   * Locks always read, whether or not SCAN finds them (a read-only token cannot SCAN).
   * @default []
   */
  names?: readonly string[];
  /**
   * The Redis is an Upstash global database (or a local server in replica mode): each snapshot's
   * `lagNote` then says that its reads come from the nearest region and may lag the primary.
   * @default false
   */
  globalDatabase?: boolean;
  /**
   * The recent waits to show (`GET api/waits`, the page's "Recent waits"): a recorder of
   * `recordRecentWaits(client)`, this process's. Without one the API answers
   * `{"recording": false}` and the page leaves the section out.
   * @default undefined
   */
  recentWaits?: RecentWaitsRecorder;
}

const NOT_RECORDING: InspectedWaits = { recording: false };

const SECURITY_HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

const PAGE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** What the page says of its view on a global database (docs/inspector.md). */
const GLOBAL_DATABASE_NOTE =
  "read from the nearest region of a global database: a change of the last moments may not show yet (actions run on the primary)";

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...SECURITY_HEADERS, "content-type": "application/json; charset=utf-8" },
  });
}

function asset(body: string, type: string): Response {
  return new Response(body, {
    headers: { ...SECURITY_HEADERS, "content-type": type, "content-security-policy": PAGE_POLICY },
  });
}

/** The error text a caller may see: edgelock's own messages carry no secret; others are hidden. */
function errorResponse(error: unknown): Response {
  if (isPermissionRefusal(error)) return json(403, { error: "the Redis token refused this write" });
  if (error instanceof EdgelockError) {
    return json(error.name === "LockInputError" ? 400 : 502, { error: error.message });
  }
  return json(500, { error: "the inspector failed" });
}

async function readAction(request: Request): Promise<Record<string, unknown>> {
  const type = request.headers.get("content-type") ?? "";
  // A custom header makes a cross-site form or fetch need a preflight, which nothing answers.
  if (request.headers.get("x-edgelock-inspector") !== "1" || !type.startsWith("application/json")) {
    throw new ForbiddenAction();
  }
  const body: unknown = await request.json();
  if (typeof body !== "object" || body === null) throw new ForbiddenAction();
  return body as Record<string, unknown>;
}

class ForbiddenAction extends Error {}

/**
 * The kind of lock a force-release names (none: a lock). Semaphores and latches have no action
 * (docs/inspector.md says why): another kind must not release the lock of the same name.
 */
function lockKind(kind: unknown): "lock" | "read-write" {
  if (kind === undefined || kind === "lock" || kind === "read-write") return kind ?? "lock";
  throw new LockInputError(
    'kind must be "lock" or "read-write": the inspector force-releases locks only (a ' +
      "semaphore's permits come back by release or lease end, a latch opens by countDown() or " +
      "its TTL).",
  );
}

/**
 * The inspector as a fetch handler (`(request) => Response`) for any router: the page, its JSON
 * and its actions. See docs/inspector.md.
 */
export function inspectorHandler(
  options: InspectorHandlerOptions,
): (request: Request) => Promise<Response> {
  const { client, access } = options;
  const runtime = runtimeOf(client);
  const redis = checkExec(runtime.ctx.redis);
  const maxLocks = options.maxLocks ?? DEFAULT_BUDGET.maxLocks;
  const names = namesWithinBudget(
    (options.names ?? []).map((name) => checkLockName(name)),
    maxLocks,
    "The inspector's `names` option",
  );

  return async function handleInspectorRequest(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const path = url.pathname;
    const allowed = await access(request);
    if (allowed !== "read" && allowed !== "write") return json(403, { error: "forbidden" });
    try {
      if (request.method === "GET" || request.method === "HEAD") {
        if (path.endsWith("/app.js")) return asset(PAGE_JS, "text/javascript; charset=utf-8");
        if (path.endsWith("/app.css")) return asset(PAGE_CSS, "text/css; charset=utf-8");
        if (path.endsWith("/api/waits")) {
          return json(200, options.recentWaits?.inspect() ?? NOT_RECORDING);
        }
        if (path.endsWith("/api/snapshot")) {
          const given = url.searchParams.getAll("name");
          // Refused before each name is even checked: 1 200 names cost nothing but the 400.
          if (given.length > maxLocks) namesWithinBudget(given, maxLocks, "This request");
          const asked = given.map((name) => checkLockName(name));
          const snapshot = await takeSnapshot(redis, {
            ...options,
            prefix: runtime.prefix,
            cursor: url.searchParams.get("cursor") ?? "0",
            names: [...names, ...asked],
            canWrite: allowed === "write",
            readOnlyReason: allowed === "write" ? null : "your access is read-only",
            lagNote: options.globalDatabase === true ? GLOBAL_DATABASE_NOTE : null,
          });
          return json(200, snapshot);
        }
        if (path.endsWith("/")) return asset(PAGE_HTML, "text/html; charset=utf-8");
        if (!path.includes("/api/")) {
          return new Response(null, {
            status: 308,
            headers: { location: `${path}/${url.search}` },
          });
        }
        return json(404, { error: "no such inspector route" });
      }
      if (request.method !== "POST") return json(405, { error: "method not allowed" });
      if (allowed !== "write") return json(403, { error: "your access is read-only" });
      const body = await readAction(request);
      const name = checkLockName(body.name);
      if (path.endsWith("/api/force-release")) {
        return json(200, await forceReleaseLock(client, name, lockKind(body.kind)));
      }
      if (path.endsWith("/api/remove-waiter")) {
        if (typeof body.waiter !== "string") return json(400, { error: "waiter is missing" });
        return json(200, await removeWaiter(client, redis, name, body.waiter));
      }
      return json(404, { error: "no such inspector route" });
    } catch (error) {
      if (error instanceof ForbiddenAction) {
        return json(403, { error: "actions need JSON and the x-edgelock-inspector header" });
      }
      return errorResponse(error);
    }
  };
}

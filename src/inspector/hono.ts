/** The inspector as Hono middleware, behind your own authentication; Hono is only a type here. */
import type { Context, MiddlewareHandler } from "hono";
import type { PlainLockClient as LockClient } from "../plain-lock-client.js";
import { inspectorHandler } from "./handler.js";
import type { RecentWaitsRecorder } from "./recent-waits.js";
import type { RefreshBudget } from "./snapshot.js";
import type { InspectorAccess } from "./types.js";

/** Options of `inspector()`, the inspector as Hono routes: the client to inspect, who may act, and each refresh's budget. */
export interface InspectorOptions extends RefreshBudget {
  /**
   * The LockClient to inspect (its Redis and prefix); a read-write lock's force-release needs
   * the root entry's client. Required.
   */
  client: LockClient;
  /**
   * Each request's access, after your own authentication: `"write"` (also force-release and
   * remove waiters), `"read"` or `"none"` (403). Required: the inspector shows every lock.
   * @example auth: (c) => (c.get("user")?.admin ? "write" : "read")
   */
  auth: (c: Context) => InspectorAccess | Promise<InspectorAccess>;
  /**
   * Locks always read, even where SCAN is refused (Upstash's read-only token).
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
   * The recent waits to show (`…/api/waits`, the page's "Recent waits"): a recorder of
   * `recordRecentWaits(client)`. Without one the section is left out.
   * @default undefined
   */
  recentWaits?: RecentWaitsRecorder;
}

/**
 * The inspector page and its JSON API (`…/api/snapshot`, `…/api/waits`), for `app.all(path, …)`.
 * @example
 * app.use("/_edgelock/*", basicAuth({ username: "ops", password: env.PASSWORD }));
 * app.all("/_edgelock/*", inspector({ client, auth: () => "write" }));
 */
export function inspector(options: InspectorOptions): MiddlewareHandler {
  const { auth, ...rest } = options;
  const contexts = new WeakMap<Request, Context>();
  const handle = inspectorHandler({
    ...rest,
    access: (request) => {
      const c = contexts.get(request);
      return c === undefined ? "none" : auth(c);
    },
  });
  return async function inspectorMiddleware(c) {
    contexts.set(c.req.raw, c);
    try {
      return await handle(c.req.raw);
    } finally {
      contexts.delete(c.req.raw);
    }
  };
}

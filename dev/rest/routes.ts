/**
 * Maps an HTTP method and path to what the request asks for. The routes `@upstash/redis` uses are
 * `POST /` (one command as a JSON array), `POST /pipeline` and `POST /multi-exec`; path-style
 * commands (`GET /set/foo/bar?EX=100`) are Upstash's documented curl-friendly form.
 */

export type RouteKind =
  | "command"
  | "pipeline"
  | "multi-exec"
  | "path"
  | "monitor"
  | "stats"
  | "unknown";

/** The local server's own counters (not an Upstash route): `GET /_edgelock/stats`. */
export const STATS_PATH = "/_edgelock/stats";

/** The inspector's page and JSON API (`/_edgelock/`, `/_edgelock/api/…`): not an Upstash route. */
export const INSPECTOR_PATH = "/_edgelock/";

export type Route =
  | { readonly kind: "command" | "pipeline" | "multi-exec" }
  /** The inspector (dev/inspect/): served without the REST token, to loopback host names only. */
  | { readonly kind: "inspector" }
  /** `/monitor`: every command as server-sent events, like Redis MONITOR. */
  | { readonly kind: "monitor" }
  | { readonly kind: "stats" }
  /** Path-style: the command's words from the path, and extra arguments from the query string. */
  | { readonly kind: "path"; readonly segments: readonly string[]; readonly query: URLSearchParams }
  | { readonly kind: "unknown"; readonly status: 404 | 405; readonly message: string };

/** Methods Upstash accepts; anything else is 405. */
const ALLOWED_METHODS = new Set(["GET", "HEAD", "POST", "PUT"]);
const BODY_METHODS = new Set(["POST", "PUT"]);
/** A plausible command name; other first segments (favicon.ico, …) are 404s. */
const COMMAND_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;

export function resolveRoute(method: string, url: URL): Route {
  if (!ALLOWED_METHODS.has(method)) {
    return { kind: "unknown", status: 405, message: `method ${method} is not allowed` };
  }
  const path = url.pathname.replace(/\/+$/, "");
  if (path === STATS_PATH) return { kind: "stats" };
  if (path === "/_edgelock" || url.pathname.startsWith(INSPECTOR_PATH))
    return { kind: "inspector" };
  if (path.toLowerCase() === "/monitor") return { kind: "monitor" };
  if (path === "" || path === "/pipeline" || path === "/multi-exec") {
    if (!BODY_METHODS.has(method)) {
      return {
        kind: "unknown",
        status: 405,
        message: `${path || "/"} expects POST with a JSON body`,
      };
    }
    return { kind: path === "" ? "command" : path === "/pipeline" ? "pipeline" : "multi-exec" };
  }

  let segments: string[];
  try {
    segments = path.slice(1).split("/").map(decodeURIComponent);
  } catch {
    return { kind: "unknown", status: 404, message: "malformed percent-encoding in the path" };
  }
  const name = segments[0] ?? "";
  if (!COMMAND_NAME.test(name) || name === "pipeline") {
    return { kind: "unknown", status: 404, message: `no route for ${url.pathname}` };
  }
  return { kind: "path", segments, query: url.searchParams };
}

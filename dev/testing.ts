/**
 * `edgelock/testing`: run your Worker's tests against the local REST server. A vitest global
 * setup starts one server for the test run (embedded engine unless you choose a backend), and
 * `upstashBindings(inject)` hands its URL and token to `@cloudflare/vitest-plugin` as the
 * `UPSTASH_REDIS_REST_URL` / `UPSTASH_REDIS_REST_TOKEN` bindings. See docs/testing.md.
 * @module
 */
// Brings vitest's types into the program, so the augmentation below has a module to extend.
import type {} from "vitest";
import {
  type BackendKind,
  type DevServerOptions,
  type ServerProfile,
  startDevServer,
} from "./index.js";

/** What the global setup hands to the test projects (vitest's `provide` / `inject`). */
export interface ProvidedDevServer {
  readonly url: string;
  readonly token: string;
  /** Reads only: writes are refused with NOPERM, as with Upstash's read-only token. */
  readonly readOnlyToken: string;
  readonly backendKind: BackendKind;
  readonly profile: ServerProfile;
}

declare module "vitest" {
  interface ProvidedContext {
    /** The local REST server started by `edgelock/testing`'s global setup. */
    edgelockDevServer: ProvidedDevServer;
  }
}

/** The part of vitest's `TestProject` a global setup uses. */
export interface ProvidingProject {
  provide(key: "edgelockDevServer", value: ProvidedDevServer): void;
}

/** A vitest global setup: starts the server, returns its teardown. */
export type EdgelockGlobalSetup = (project: ProvidingProject) => Promise<() => Promise<void>>;

/**
 * A vitest global setup that starts the local REST server once per test run and stops it after.
 * Use it as a `globalSetup` file's default export, or name `"edgelock/testing"` there directly
 * for the defaults.
 *
 * @param options Passed to `startDevServer`. Default `{ backend: "embedded" }`: in-memory, no
 * Redis needed; `"auto"` prefers a real Redis (`REDIS_URL`, then a `redis-server` binary).
 * `profile: "upstash"` (or `EDGELOCK_DEV_PROFILE=upstash` in the environment of the test run)
 * makes the server behave as production Upstash: see docs/upstash.md. Read the global-lock script
 * count from `GET <url>/_edgelock/stats` (`scripts.globalLock`).
 */
export function edgelockGlobalSetup(options: DevServerOptions = {}): EdgelockGlobalSetup {
  return async function startForTests(project) {
    const server = await startDevServer({ backend: "embedded", ...options });
    project.provide("edgelockDevServer", {
      url: server.url,
      token: server.token,
      readOnlyToken: server.readOnlyToken,
      backendKind: server.backendKind,
      profile: server.profile,
    });
    return () => server.close();
  };
}

/** The global setup with its defaults, for `globalSetup: ["edgelock/testing"]`. */
export default edgelockGlobalSetup();

/** The Upstash connection bindings a Worker reads. */
export interface UpstashBindings {
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
}

/**
 * The bindings that point `@upstash/redis` at the server the global setup started, for
 * `cloudflareTest(({ inject }) => ({ miniflare: { bindings: upstashBindings(inject) } }))`.
 * Throws when the global setup is missing from the project.
 */
export function upstashBindings(
  inject: (key: "edgelockDevServer") => ProvidedDevServer | undefined,
): UpstashBindings {
  const server = inject("edgelockDevServer");
  if (server === undefined) {
    throw new Error(
      'edgelock/testing: no server was provided; add globalSetup: ["edgelock/testing"] (or your ' +
        "file exporting edgelockGlobalSetup()) to the same vitest project",
    );
  }
  return { UPSTASH_REDIS_REST_URL: server.url, UPSTASH_REDIS_REST_TOKEN: server.token };
}

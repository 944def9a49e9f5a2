/**
 * `edgelock/dev`: a local server that speaks the Upstash Redis REST protocol, for development and
 * tests. Point `@upstash/redis` (on its defaults) at `url` with `token`.
 *
 * Behind it runs a real Redis (one you name, or a throwaway `redis-server` it spawns) or the
 * embedded in-memory engine. Faults (latency, lost responses, refused requests) can be injected to
 * exercise retry paths, and request counters make "this took exactly N requests" testable.
 */
import { randomBytes } from "node:crypto";
import type { Backend } from "./backend.js";
import { isLoopbackInterface } from "./inspect/node-fetch.js";
import {
  type BlockingMode,
  DEFAULT_BLOCKING_MODE,
  resolveProfile,
  type ServerProfile,
} from "./profile/settings.js";
import { findRedisServerBinary, startRedisServer } from "./redis-server.js";
import { type ReplicaOptions, ReplicatedBackend } from "./replica/index.js";
import { createRedisUrlBackend } from "./resp/redis-backend.js";
import { FaultController, type FaultOptions } from "./rest/faults.js";
import { startRestServer } from "./rest/server.js";
import { ServerStats } from "./rest/stats.js";

export type { Backend } from "./backend.js";
export type { ScriptLock } from "./profile/backend.js";
export type { BlockingMode, ServerProfile } from "./profile/settings.js";
export type { ReplicaOptions } from "./replica/index.js";
export type { FaultCounts, FaultOptions } from "./rest/faults.js";
export type { RouteKind } from "./rest/routes.js";
export { ServerStats, type StatsSnapshot } from "./rest/stats.js";

/**
 * The fault injection of a running server (`DevServer.faults`): change it, stop it, read what was
 * injected.
 */
export type DevServerFaults = Pick<
  FaultController,
  "options" | "seed" | "active" | "configure" | "disable" | "counts" | "resetCounts" | "endStreams"
>;

/** Which store serves the commands. */
export type BackendChoice = "auto" | "redis-server" | "embedded" | { readonly url: string };

/** The store a started server uses: `BackendChoice` resolved ("auto" chose one). */
export type BackendKind = "redis-url" | "redis-server" | "embedded";

/** Options of `startDevServer()`, each with its default. */
export interface DevServerOptions {
  /** TCP port of the REST API. Default 0: a free port (the CLI defaults to 8079). */
  port?: number;
  /** Interface to listen on. Default `"127.0.0.1"` (loopback only). */
  host?: string;
  /** Bearer token clients must send. Default: 32 random hex characters, new for each start. */
  token?: string;
  /**
   * A token that may only read, as Upstash's "Read Only" token (writes, KEYS and SCAN are refused
   * with NOPERM). Default: 32 random hex characters, new for each start.
   */
  readOnlyToken?: string;
  /**
   * Which server to behave like: `"upstash"` (production Upstash as documented: blocking commands
   * answer at once, `allow-key-locking` enforced, Upstash's limits) or `"redis"` (a Redis behind a
   * REST proxy). Default: the `EDGELOCK_DEV_PROFILE` environment variable, else
   * `DEFAULT_PROFILE` (`"upstash"`). See docs/upstash.md.
   */
  profile?: ServerProfile;
  /**
   * Under `"upstash"`: blocking commands answer as if timed out at once (`"immediate"`, the
   * default) or fail with Upstash's "not available" error (`"error"`).
   */
  blocking?: BlockingMode;
  /**
   * Where commands run. Default `"auto"`: the `REDIS_URL` environment variable if set, else a
   * spawned `redis-server` if the binary is found (PATH or `REDIS_SERVER_BIN`), else the embedded
   * engine. `"redis-server"` always spawns one (fails if missing); `"embedded"` uses the
   * in-memory engine; `{ url: "redis://…" }` connects to that Redis.
   */
  backend?: BackendChoice;
  /** Faults to inject from the start; change them later through `DevServer.faults`. Default none. */
  faults?: FaultOptions;
  /** Receives human-readable lines (backend in use, listening address, failures). Default: silent. */
  log?: (line: string) => void;
  /** Request bodies larger than this get HTTP 413. Default 10 MiB. */
  maxBodyBytes?: number;
  /** Counters to record into (a subclass can observe each request). Default: fresh ServerStats. */
  stats?: ServerStats;
  /** Blocking requests (BLPOP…) allowed to wait at once; more get an error. Default 1000. */
  maxBlockedRequests?: number;
  /**
   * Serve the inspector page at `<url>/_edgelock/` (locks under `inspectorPrefix`), with the
   * server's own token kept server-side. It answers without a token, to loopback host names
   * only. Default: on when `host` is a loopback interface, else off.
   */
  inspector?: boolean;
  /** Key prefix the inspector page shows. Default "edgelock", LockClient's default. */
  inspectorPrefix?: string;
  /**
   * Replica mode: behave as an Upstash global database seen from a read region. Writes and
   * EVAL/EVALSHA run on a primary; reads (GET, SCAN, EVAL_RO…) on a replica that applies each
   * write `lagMs` late, unless the request's `upstash-sync-token` asks for a newer state (then
   * the read waits for the replica). Needs a backend the server starts twice: `"embedded"` or
   * `"redis-server"` (`"auto"` picks one of these, ignoring `REDIS_URL`). Default: off.
   * See docs/dev-server.md.
   */
  replica?: ReplicaOptions;
}

/** A started server: its URL and tokens, its faults and counters, and `close()`. */
export interface DevServer {
  /** Base URL for `UPSTASH_REDIS_REST_URL`, e.g. `http://127.0.0.1:8079`. */
  readonly url: string;
  /** Token for `UPSTASH_REDIS_REST_TOKEN`. */
  readonly token: string;
  /** The read-only token: reads pass, writes get `NOPERM`. */
  readonly readOnlyToken: string;
  readonly profile: ServerProfile;
  readonly blocking: BlockingMode;
  readonly backendKind: BackendKind;
  /** Replica mode's lag in ms, or undefined when the server has no replica. */
  readonly replicaLagMs: number | undefined;
  /** e.g. `redis-server 7.0.15 at 127.0.0.1:41234 (spawned, not persisted)`. */
  readonly backendDescription: string;
  /** Change fault injection at runtime; read what was injected with `counts()`. */
  readonly faults: DevServerFaults;
  /**
   * Request and command counters; `snapshot()` and `reset()`. `snapshot().scripts.globalLock`
   * counts the script runs Upstash would serialise under its database-wide lock (also served as
   * JSON at `GET <url>/_edgelock/stats`).
   */
  readonly stats: ServerStats;
  /** The inspector page's URL (`<url>/_edgelock/`), or undefined when it is off. */
  readonly inspectorUrl: string | undefined;
  /** The backend behind the server, for tests that need to inspect state directly. */
  readonly backend: Backend;
  /** Stops the HTTP server, then the backend (and any redis-server it spawned). Idempotent. */
  close(): Promise<void>;
}

interface ChosenBackend {
  readonly kind: BackendKind;
  readonly backend: Backend;
}

/** The engine (and its Lua runtime) is loaded only when chosen, so Redis setups never pay for it. */
async function loadEmbeddedBackend(): Promise<Backend> {
  const { createEmbeddedBackend } = await import("./engine/index.js");
  return createEmbeddedBackend();
}

async function spawnRedisServerBackend(): Promise<Backend> {
  const server = await startRedisServer();
  try {
    return await createRedisUrlBackend(server.url, {
      description: `redis-server ${server.version} at 127.0.0.1:${server.port} (spawned, not persisted)`,
      onClose: () => server.close(),
    });
  } catch (error) {
    await server.close();
    throw error;
  }
}

async function chooseBackend(choice: BackendChoice): Promise<ChosenBackend> {
  if (typeof choice === "object") {
    return { kind: "redis-url", backend: await createRedisUrlBackend(choice.url) };
  }
  switch (choice) {
    case "redis-server":
      return { kind: "redis-server", backend: await spawnRedisServerBackend() };
    case "embedded":
      return { kind: "embedded", backend: await loadEmbeddedBackend() };
    case "auto": {
      const redisUrl = process.env.REDIS_URL;
      if (redisUrl !== undefined && redisUrl !== "") return chooseBackend({ url: redisUrl });
      if (findRedisServerBinary() !== undefined) return chooseBackend("redis-server");
      return chooseBackend("embedded");
    }
    default:
      throw new Error(`unknown backend choice ${JSON.stringify(choice)}`);
  }
}

/** A primary and its lagging replica, of the kind `choice` names. */
async function chooseReplicatedBackend(
  choice: BackendChoice,
  { lagMs }: ReplicaOptions,
): Promise<ChosenBackend> {
  if (!Number.isFinite(lagMs) || lagMs < 0) {
    throw new Error(`replica.lagMs must be a number of ms ≥ 0, not ${String(lagMs)}`);
  }
  if (typeof choice === "object") {
    throw new Error(
      'replica mode starts its own primary and replica: use backend "embedded" or "redis-server", not a Redis URL',
    );
  }
  const kind =
    choice === "auto"
      ? findRedisServerBinary() === undefined
        ? "embedded"
        : "redis-server"
      : choice;
  const { primary, replica, link } =
    kind === "redis-server"
      ? await (await import("./replica/redis.js")).startRedisServerReplica(lagMs)
      : await (await import("./replica/embedded.js")).startEmbeddedReplica(lagMs);
  return { kind, backend: new ReplicatedBackend(primary, replica, link, lagMs) };
}

/** Starts the backend, then the REST server; resolves once both are ready. */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const token = options.token ?? randomBytes(16).toString("hex");
  if (token === "" || /\s/.test(token)) throw new Error("token must be non-empty, without spaces");
  const readOnlyToken = options.readOnlyToken ?? randomBytes(16).toString("hex");
  if (readOnlyToken === "" || /\s/.test(readOnlyToken) || readOnlyToken === token) {
    throw new Error("readOnlyToken must be non-empty, without spaces, and differ from token");
  }
  const profile = resolveProfile(options.profile);
  const blocking = options.blocking ?? DEFAULT_BLOCKING_MODE;
  const log = options.log ?? (() => undefined);
  const faults = new FaultController(options.faults);
  const stats = options.stats ?? new ServerStats();

  const host = options.host ?? "127.0.0.1";
  const inspector: { handler?: (request: Request) => Promise<Response> } = {};
  const inspectorOn = options.inspector ?? isLoopbackInterface(host);
  const { kind, backend } =
    options.replica === undefined
      ? await chooseBackend(options.backend ?? "auto")
      : await chooseReplicatedBackend(options.backend ?? "auto", options.replica);
  log(`backend: ${backend.description}`);
  let rest: Awaited<ReturnType<typeof startRestServer>>;
  try {
    rest = await startRestServer({
      backend,
      token,
      readOnlyToken,
      profile,
      blocking,
      faults,
      stats,
      host,
      port: options.port ?? 0,
      log,
      inspector,
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
      ...(options.maxBlockedRequests === undefined
        ? {}
        : { maxBlockedRequests: options.maxBlockedRequests }),
    });
  } catch (error) {
    await backend.close();
    throw error;
  }
  log(`listening on ${rest.url} (profile ${profile})`);
  if (inspectorOn) {
    // Loaded on start, not per request; the library is only needed when the page is on.
    const { inspectorFor } = await import("./inspect/client.js");
    inspector.handler = inspectorFor({
      url: rest.url,
      token,
      ...(options.inspectorPrefix === undefined ? {} : { prefix: options.inspectorPrefix }),
      ...(options.replica === undefined ? {} : { globalDatabase: true }),
    });
  }

  let closing: Promise<void> | undefined;
  return {
    url: rest.url,
    token,
    readOnlyToken,
    profile,
    blocking,
    backendKind: kind,
    replicaLagMs: options.replica?.lagMs,
    backendDescription: backend.description,
    faults,
    stats,
    backend,
    inspectorUrl: inspectorOn ? `${rest.url}/_edgelock/` : undefined,
    close() {
      closing ??= (async () => {
        await rest.close();
        await backend.close();
      })();
      return closing;
    },
  };
}

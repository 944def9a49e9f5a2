/**
 * The HTTP server speaking the Upstash REST protocol (node:http). Every response is JSON and
 * carries an `upstash-sync-token` header, errors included: `@upstash/redis` cannot parse anything
 * else and reads the sync token from every response.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Backend } from "../backend.js";
import { serveFetch } from "../inspect/node-fetch.js";
import { ProfileBackend } from "../profile/backend.js";
import { readOnlyRefusal } from "../profile/read-only.js";
import {
  type BlockingMode,
  DEFAULT_BLOCKING_MODE,
  DEFAULT_PROFILE,
  type ServerProfile,
  upstashErrors,
} from "../profile/settings.js";
import { commandName, isBlockingCommand } from "../resp/command-policy.js";
import { RequestShapeError } from "./arguments.js";
import { AUTH_ERROR_MESSAGE, createTokenCheck, presentedToken } from "./auth.js";
import { readBody } from "./body.js";
import { encodeError, type ResponseEncoding } from "./encode.js";
import { executePlan, type RestOutcome } from "./execute.js";
import type { FaultController, FaultDecision } from "./faults.js";
import { MonitorHub } from "./monitor.js";
import { planCommands, planRequest, type RequestPlan } from "./request-plan.js";
import { resolveRoute } from "./routes.js";
import type { ServerStats } from "./stats.js";
import { streamSubscription, subscriptionOf } from "./subscribe.js";

export interface RestServerOptions {
  readonly backend: Backend;
  /** The bearer token clients must present. */
  readonly token: string;
  /** A second token that may only read (Upstash's "Read Only" token). Default: none. */
  readonly readOnlyToken?: string;
  /** Which server to behave like (profile/settings.ts). Default DEFAULT_PROFILE (`upstash`). */
  readonly profile?: ServerProfile;
  /** How the `upstash` profile answers blocking commands. Default `"immediate"`. */
  readonly blocking?: BlockingMode;
  readonly faults: FaultController;
  readonly stats: ServerStats;
  /** Interface to listen on. */
  readonly host: string;
  /** Port to listen on; 0 picks a free one. */
  readonly port: number;
  /**
   * Larger request bodies get HTTP 413 (`upstash` profile: HTTP 400 "ERR max request size
   * exceeded", Upstash's answer). Default 10 MiB.
   */
  readonly maxBodyBytes?: number;
  /**
   * Requests holding a blocking command (BLPOP…) that may wait at once; one more is answered
   * with an error instead of waiting. Default 1000.
   */
  readonly maxBlockedRequests?: number;
  /** Receives one line per notable event (backend failures). Default: silent. */
  readonly log?: (line: string) => void;
  /**
   * Serves the inspector page at `/_edgelock/` (dev/inspect/), without the REST token and to
   * loopback host names only; its commands come back through the REST API with the token, so
   * the stats count them. `handler` is set once the server listens. Default: no inspector (404).
   */
  readonly inspector?: { handler?: (request: Request) => Promise<Response> };
}

export interface RestServer {
  /** Base URL, e.g. `http://127.0.0.1:8079`. */
  readonly url: string;
  readonly port: number;
  /** Stops listening and drops open connections. Idempotent. */
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;
const DEFAULT_MAX_BLOCKED_REQUESTS = 1000;

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

function urlHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}

export async function startRestServer(options: RestServerOptions): Promise<RestServer> {
  const { faults, stats } = options;
  const profile = options.profile ?? DEFAULT_PROFILE;
  const backend = new ProfileBackend(
    options.backend,
    { profile, blocking: options.blocking ?? DEFAULT_BLOCKING_MODE },
    {
      script: (lock, sha, command) => stats.recordScript(lock, sha, command),
      dynamicKeyRejection: (sha, message) => stats.recordDynamicKeyRejection(sha, message),
      blocking: (outcome, command) => stats.recordBlocking(outcome, command),
    },
  );
  // Under `upstash` nothing blocks, so the blocked-request limit never applies.
  const blocks = profile !== "upstash";
  const monitor = new MonitorHub();
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const isValidToken = createTokenCheck(options.token);
  const isReadOnlyToken =
    options.readOnlyToken === undefined ? () => false : createTokenCheck(options.readOnlyToken);
  const log = options.log ?? (() => undefined);
  const maxBlockedRequests = options.maxBlockedRequests ?? DEFAULT_MAX_BLOCKED_REQUESTS;
  let blockedRequests = 0;
  let syncToken = 0;

  function send(
    request: http.IncomingMessage,
    response: http.ServerResponse,
    status: number,
    body: string,
    replicatedToken?: string,
  ): void {
    const bytes = Buffer.from(body, "utf8");
    syncToken += 1;
    response.writeHead(status, {
      "content-type": "application/json",
      "content-length": bytes.byteLength,
      // Read-your-writes: the client sends back the latest token. One node has nothing to sync
      // (any token does); in replica mode the backend names the position the answer reflects.
      "upstash-sync-token": replicatedToken ?? String(syncToken),
    });
    response.end(request.method === "HEAD" ? undefined : bytes);
    stats.recordResponse(status, bytes.byteLength);
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse) {
    const method = request.method ?? "GET";
    const url = new URL(request.url ?? "/", "http://localhost");
    const route = resolveRoute(method, url);
    const bodyResult = await readBody(request, maxBodyBytes);
    if (route.kind === "inspector") {
      const handler = options.inspector?.handler;
      if (handler === undefined || bodyResult.kind !== "ok") {
        send(request, response, 404, encodeError("the inspector is off on this server"));
      } else {
        await serveFetch(handler, request, response, bodyResult.body);
      }
      return;
    }
    stats.recordRequest(
      route.kind,
      bodyResult.kind === "ok" ? bodyResult.body.byteLength : bodyResult.received,
    );

    const presented = presentedToken(request.headers, url);
    const readOnly = !isValidToken(presented) && isReadOnlyToken(presented);
    if (!readOnly && !isValidToken(presented)) {
      send(request, response, 401, encodeError(AUTH_ERROR_MESSAGE));
      return;
    }
    if (route.kind === "unknown") {
      send(request, response, route.status, encodeError(route.message));
      return;
    }
    if (bodyResult.kind === "too-large") {
      if (profile === "upstash")
        send(request, response, 400, encodeError(upstashErrors.requestSize));
      else send(request, response, 413, encodeError(`request body exceeds ${maxBodyBytes} bytes`));
      return;
    }
    if (route.kind === "stats") {
      send(request, response, 200, JSON.stringify({ profile, ...stats.snapshot() }));
      return;
    }
    if (route.kind === "monitor") {
      if (readOnly) {
        send(request, response, 400, encodeError(upstashErrors.readOnly("monitor")));
        return;
      }
      syncToken += 1;
      monitor.stream(response, String(syncToken));
      stats.recordResponse(200, 0);
      return;
    }
    if (request.headers["upstash-response-format"] !== undefined) {
      send(request, response, 400, encodeError("Upstash-Response-Format is not supported here"));
      return;
    }
    const subscription = subscriptionOf(route);
    if (subscription !== undefined) {
      syncToken += 1;
      stats.recordSubscription();
      const untrack = faults.trackStream(() => response.end());
      response.once("close", () => {
        untrack();
        stats.recordSubscriptionEnd();
      });
      await streamSubscription(
        subscription,
        backend,
        request,
        response,
        String(syncToken),
        () => faults.pushDelayMs(),
        () => stats.recordPushedMessage(),
      );
      stats.recordResponse(200, 0);
      return;
    }
    const encodingHeader = request.headers["upstash-encoding"];
    const encoding: ResponseEncoding =
      typeof encodingHeader === "string" && encodingHeader.toLowerCase() === "base64"
        ? "base64"
        : "text";

    let plan: RequestPlan;
    try {
      plan = planRequest(route, bodyResult.body);
    } catch (error) {
      if (!(error instanceof RequestShapeError)) throw error;
      send(request, response, 400, encodeError(`ERR ${error.message}`));
      return;
    }

    const decision: FaultDecision = faults.decide(route.kind, planCommands(plan).map(commandName));
    if (decision.failBeforeExecute) {
      await sleep(decision.delayMs);
      send(request, response, 503, encodeError("injected fault: failBeforeExecute"));
      return;
    }

    const blocking = blocks && planCommands(plan).some(isBlockingCommand);
    if (blocking && blockedRequests >= maxBlockedRequests) {
      send(
        request,
        response,
        503,
        encodeError(`ERR too many blocked requests: the limit is ${maxBlockedRequests}`),
      );
      return;
    }
    // A client that goes away releases its blocked command (its waiter or its connection).
    const clientGone = new AbortController();
    response.on("close", () => {
      if (!response.writableFinished) clientGone.abort();
    });
    let outcome: RestOutcome;
    let answeredToken: string | undefined;
    const presentedSyncToken = request.headers["upstash-sync-token"];
    if (blocking) blockedRequests += 1;
    try {
      outcome = await executePlan(
        plan,
        backend,
        encoding,
        {
          signal: clientGone.signal,
          ...(typeof presentedSyncToken === "string" && presentedSyncToken !== ""
            ? { syncToken: presentedSyncToken }
            : {}),
          onSyncToken: (token) => {
            answeredToken = token;
          },
        },
        readOnly ? readOnlyRefusal : undefined,
      );
    } catch (error) {
      if (clientGone.signal.aborted) return;
      // The backend itself failed (connection lost…): the command may or may not have run.
      const message = error instanceof Error ? error.message : String(error);
      log(`backend failure: ${message}`);
      send(request, response, 500, encodeError(`ERR backend failure: ${message}`));
      return;
    } finally {
      if (blocking) blockedRequests -= 1;
    }
    stats.recordCommands(outcome.executed, outcome.scriptCommands);
    if (monitor.active && outcome.executed.length > 0) {
      const socket = request.socket;
      monitor.publish(
        planCommands(plan).filter((command) => outcome.executed.includes(commandName(command))),
        `${socket.remoteAddress ?? "0.0.0.0"}:${socket.remotePort ?? 0}`,
      );
    }

    await sleep(decision.delayMs);
    if (decision.dropAfterExecute) {
      // The work is done but the client never hears about it, as when a reply is lost in transit.
      request.socket.destroy();
      return;
    }
    send(request, response, outcome.status, outcome.body, answeredToken);
  }

  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      log(`request failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!response.headersSent && !response.destroyed) {
        send(request, response, 500, encodeError("ERR internal server error"));
      } else {
        response.destroy();
      }
    });
  });
  // Outlive the client's keep-alive (undici: 4 s) so it never reuses a socket we just closed.
  server.keepAliveTimeout = 10_000;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost(options.host)}:${port}`,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/**
 * Hangs for chaos runs: an HTTP proxy in front of a dev server that, for a seeded fraction of
 * requests, never answers until the client gives up (its request timeout aborts the fetch). Half
 * of the hung requests are never forwarded (nothing ran), half are forwarded and their answer is
 * withheld (the command ran). The dev server itself is not changed: its faults (refusals, lost
 * answers, latency) apply behind this proxy. A subscription's stream (`text/event-stream`) is
 * piped event by event, unbuffered, and ends upstream when its client leaves; a hung subscribe
 * is one never confirmed (before: never subscribed; after: subscribed, nothing passed on).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createPrng } from "../../dev/rest/faults.js";

export interface HangCounts {
  /** Requests the proxy received. */
  readonly requests: number;
  /** Hung and never forwarded. */
  readonly hungBeforeExecute: number;
  /** Forwarded (the command ran), answer withheld. */
  readonly hungAfterExecute: number;
}

/**
 * One request through the proxy, for a harness that times each database's requests itself:
 * `settledAt` is set once nothing more of it can run on the server (its answer or failure came
 * back from the dev server, or it was never forwarded: then it never is set, as nothing ran).
 */
export interface ProxiedRequest {
  readonly body: string;
  readonly arrivedAt: number;
  /** Undefined while the command may still run (forwarded, no answer yet) or if it never ran. */
  settledAt: number | undefined;
  /** False for a request hung before forwarding: it never runs. */
  readonly forwarded: boolean;
}

export interface HangProxy {
  readonly url: string;
  /** Calls `listener` with every request once its body has arrived (settledAt filled later). */
  onRequest(listener: (request: ProxiedRequest) => void): void;
  counts(): HangCounts;
  /**
   * Calls `listener` with the path of every subscription stream the proxy ended on the server's
   * behalf (see HangProxyOptions.endStreams), as it ends it.
   */
  onStreamEnded(listener: (path: string) => void): void;
  /** Stops hanging new requests (requests already hung stay so until their client gives up). */
  disable(): void;
  close(): Promise<void>;
}

export interface HangProxyOptions {
  /** The dev server's URL. */
  readonly target: string;
  /** Fraction of requests hung (0..1). */
  readonly hangRate: number;
  readonly seed: number;
  /** A hung request is dropped (socket destroyed) after this long even if its client waits on. */
  readonly maxHangMs: number;
  /**
   * Subscription streams the server ends: a fraction `rate` of them is ended cleanly (the body
   * ends, as a proxy or the server closing a long-lived SSE stream would), at a uniform moment
   * within `withinMs` of its answer. Default: none.
   */
  readonly endStreams?: { readonly rate: number; readonly withinMs: number };
}

export async function startHangProxy(options: HangProxyOptions): Promise<HangProxy> {
  const target = new URL(options.target);
  const random = createPrng(options.seed ^ 0x5a5a5a5a);
  // Apart from the hangs' draws, so that turning stream ends on changes no seed's hangs.
  const streamEnds = createPrng(options.seed ^ 0x0e5d0e5d);
  const streamEndListeners: ((path: string) => void)[] = [];
  let enabled = options.hangRate > 0;
  let requests = 0;
  let hungBeforeExecute = 0;
  let hungAfterExecute = 0;
  const hung = new Set<IncomingMessage>();
  const listeners: ((request: ProxiedRequest) => void)[] = [];
  /** Tells the listeners about a request whose body has fully arrived. */
  const observe = (incoming: IncomingMessage, forwarded: boolean): ProxiedRequest | undefined => {
    if (listeners.length === 0) return undefined;
    const chunks: Buffer[] = [];
    const record = { body: "", arrivedAt: Date.now(), settledAt: undefined, forwarded };
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      (record as { body: string }).body = Buffer.concat(chunks).toString("utf8");
      for (const listener of listeners) listener(record);
    });
    return record;
  };

  const server: Server = createServer((incoming, outgoing) => {
    requests += 1;
    // Two draws per request whatever the rates, so a seed replays the same hangs.
    const hangs = enabled && random() < options.hangRate;
    const beforeExecute = random() < 0.5;
    const hang = () => {
      hung.add(incoming);
      const timer = setTimeout(() => outgoing.destroy(), options.maxHangMs);
      incoming.socket.once("close", () => {
        clearTimeout(timer);
        hung.delete(incoming);
      });
    };
    const record = observe(incoming, !(hangs && beforeExecute));
    const settled = () => {
      if (record) record.settledAt ??= Date.now();
    };
    if (hangs && beforeExecute) {
      hungBeforeExecute += 1;
      incoming.resume();
      hang();
      return;
    }
    const forwarded = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: incoming.url,
        method: incoming.method,
        headers: incoming.headers,
      },
      (answer) => {
        settled();
        if (isEventStream(answer)) {
          // A subscription's stream lasts until its client leaves: then the stream to the dev
          // server ends too (else the server would keep the subscription, and push to it, for
          // as long as the proxy runs). Its events are piped as they come (no buffering).
          outgoing.once("close", () => {
            if (!answer.complete) forwarded.destroy();
          });
        }
        if (hangs) {
          hungAfterExecute += 1;
          answer.resume();
          hang();
          return;
        }
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
        if (isEventStream(answer) && options.endStreams !== undefined) {
          // Two draws per stream whatever the rate, so that a seed replays the same ends.
          const ends = streamEnds() < options.endStreams.rate;
          const afterMs = streamEnds() * options.endStreams.withinMs;
          if (ends) {
            const timer = setTimeout(() => {
              if (outgoing.writableEnded || outgoing.destroyed) return;
              answer.unpipe(outgoing);
              outgoing.end();
              forwarded.destroy();
              for (const listener of streamEndListeners) listener(incoming.url ?? "");
            }, afterMs);
            outgoing.once("close", () => clearTimeout(timer));
          }
        }
      },
    );
    forwarded.on("error", () => {
      settled();
      outgoing.destroy();
    });
    incoming.pipe(forwarded);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts: () => ({ requests, hungBeforeExecute, hungAfterExecute }),
    onRequest(listener) {
      listeners.push(listener);
    },
    onStreamEnded(listener) {
      streamEndListeners.push(listener);
    },
    disable() {
      enabled = false;
    },
    async close() {
      for (const request of hung) request.socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A `text/event-stream` answer: a subscription's server-sent events (`POST /subscribe/…`). */
function isEventStream(answer: IncomingMessage): boolean {
  return String(answer.headers["content-type"] ?? "").startsWith("text/event-stream");
}

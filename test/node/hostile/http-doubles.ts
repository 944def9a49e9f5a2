/**
 * Misbehaving HTTP Redis endpoints, written with node:http: a server that answers garbage without
 * running anything, a proxy that runs each request on the real server and then mangles the answer
 * (the worst case: the script ran, the client cannot know), and a closed port.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** What to send back: a status and a raw body, or a connection reset. */
export type Answer = { readonly status: number; readonly body: string } | "reset";

export interface HttpDouble {
  readonly url: string;
  /** Requests received so far. */
  readonly requests: number;
  close(): Promise<void>;
}

interface Received {
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

async function serve(respond: (request: Received) => Promise<Answer>): Promise<HttpDouble> {
  let requests = 0;
  const server = http.createServer((request, response) => {
    requests += 1;
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const received = {
        path: request.url ?? "/",
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      respond(received).then(
        (answer) => {
          if (answer === "reset") {
            request.socket.destroy();
            return;
          }
          response.writeHead(answer.status, { "content-type": "application/json" });
          response.end(answer.body);
        },
        () => request.socket.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A server that runs nothing and answers every request with `answer`. */
export function startGarbageServer(answer: Answer): Promise<HttpDouble> {
  return serve(async () => answer);
}

/**
 * A proxy in front of the REST server at `target`: each request runs there, then `mangle` may
 * replace the real answer (return null to pass it through).
 */
export function startManglingProxy(
  target: string,
  mangle: (real: { status: number; body: string }) => Answer | null,
): Promise<HttpDouble> {
  return serve(async (request) => {
    const headers: Record<string, string> = {};
    for (const name of ["authorization", "content-type", "upstash-encoding"]) {
      const value = request.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    const response = await fetch(`${target}${request.path}`, {
      method: "POST",
      headers,
      body: request.body,
    });
    const real = { status: response.status, body: await response.text() };
    return mangle(real) ?? real;
  });
}

/** A port on 127.0.0.1 that nothing listens on (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A server that accepts every connection and request and never answers. */
export function startHangingServer(): Promise<HttpDouble> {
  return serve(() => new Promise<Answer>(() => {}));
}

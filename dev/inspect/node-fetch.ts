/**
 * Serves a fetch handler (`(request) => Response`) from node:http, for the inspector on the
 * local REST server and on `edgelock inspect`'s local proxy. Only loopback host names are
 * answered: a page another site loads by DNS rebinding reaches this port under its own name.
 */
import type http from "node:http";

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

/** Whether the request's Host header names this machine's loopback interface. */
export function isLoopbackHost(hostHeader: string | undefined): boolean {
  if (hostHeader === undefined) return false;
  try {
    return LOOPBACK_HOSTS.has(new URL(`http://${hostHeader}`).hostname);
  } catch {
    return false;
  }
}

/** Whether `host` (a listening interface) is loopback only. */
export function isLoopbackInterface(host: string): boolean {
  return host === "127.0.0.1" || host === "localhost" || host === "::1" || host.startsWith("127.");
}

export async function serveFetch(
  handler: (request: Request) => Promise<Response>,
  request: http.IncomingMessage,
  response: http.ServerResponse,
  body: Uint8Array,
): Promise<void> {
  if (!isLoopbackHost(request.headers.host)) {
    response.writeHead(421, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: "the inspector answers loopback host names only" }));
    return;
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (typeof value === "string") headers.set(name, value);
    else if (Array.isArray(value)) for (const item of value) headers.append(name, item);
  }
  const method = request.method ?? "GET";
  const fetchRequest = new Request(`http://${request.headers.host}${request.url ?? "/"}`, {
    method,
    headers,
    ...(method === "GET" || method === "HEAD"
      ? {}
      : { body: new Uint8Array(body) as Uint8Array<ArrayBuffer> }),
  });
  const answer = await handler(fetchRequest);
  const outgoing: Record<string, string> = {};
  answer.headers.forEach((value, name) => {
    outgoing[name] = value;
  });
  const bytes = new Uint8Array(await answer.arrayBuffer());
  response.writeHead(answer.status, { ...outgoing, "content-length": String(bytes.byteLength) });
  response.end(method === "HEAD" ? undefined : bytes);
}

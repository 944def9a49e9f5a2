/**
 * Pub/sub as server-sent events, the way Upstash streams it and `@upstash/redis`'s `subscribe()`
 * and `psubscribe()` read it: `POST /subscribe/<channel>` (or `/psubscribe/<pattern>`) answers
 * `text/event-stream` and sends one `data:` line per event, comma-separated:
 * `subscribe,<channel>,<count>`, `message,<channel>,<message>`,
 * `pmessage,<pattern>,<channel>,<message>`. The stream lasts until the client disconnects,
 * which ends the subscription (on redis-server: closes its connection), or until the server's
 * fault controls end it (`faults.endStreams()`). Each event is held back by
 * the latency model of the server's faults, as a reply would be, in order.
 */
import type http from "node:http";
import type { Backend, PubSubMessage, SubscriptionKind } from "../backend.js";
import type { Route } from "./routes.js";

export interface SubscriptionRequest {
  readonly kind: SubscriptionKind;
  readonly targets: readonly string[];
}

/** The subscription a path-style route asks for, if it is `/subscribe/…` or `/psubscribe/…`. */
export function subscriptionOf(route: Route): SubscriptionRequest | undefined {
  if (route.kind !== "path") return undefined;
  const [name, ...targets] = route.segments;
  const lower = name?.toLowerCase();
  if ((lower !== "subscribe" && lower !== "psubscribe") || targets.length === 0) return undefined;
  return { kind: lower === "subscribe" ? "channel" : "pattern", targets };
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

/** One SSE event; line breaks inside a message would end the `data:` line, so they are escaped. */
function event(fields: readonly string[]): string {
  return `data: ${fields.join(",").replace(/\r?\n/g, "\\n")}\n\n`;
}

function messageEvent(message: PubSubMessage): string {
  return message.pattern === undefined
    ? event(["message", text(message.channel), text(message.message)])
    : event(["pmessage", text(message.pattern), text(message.channel), text(message.message)]);
}

/** Writes events after their delays, never out of order (a later one waits for the earlier). */
function delayedWriter(response: http.ServerResponse, delayMs: () => number) {
  let lastDue = 0;
  return (text: string) => {
    const due = Math.max(performance.now() + delayMs(), lastDue);
    lastDue = due;
    const wait = due - performance.now();
    // A stream the server ended (FaultController.endStreams) takes no more events.
    if (wait <= 0) response.writableEnded || response.write(text);
    else setTimeout(() => response.writableEnded || response.write(text), wait);
  };
}

export async function streamSubscription(
  subscription: SubscriptionRequest,
  backend: Backend,
  request: http.IncomingMessage,
  response: http.ServerResponse,
  syncToken: string,
  delayMs: () => number = () => 0,
  pushed: () => void = () => {},
): Promise<void> {
  const clientGone = new AbortController();
  response.on("close", () => clientGone.abort());
  const write = delayedWriter(response, delayMs);
  response.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "upstash-sync-token": syncToken,
  });
  // Headers go out now: the client's fetch resolves while no message has arrived yet.
  response.flushHeaders();
  try {
    await backend.subscribe(
      subscription.kind,
      subscription.targets,
      (message) => {
        pushed();
        write(messageEvent(message));
      },
      clientGone.signal,
    );
  } catch {
    response.end();
    return;
  }
  const confirmation = subscription.kind === "channel" ? "subscribe" : "psubscribe";
  subscription.targets.forEach((target, index) => {
    write(event([confirmation, target, String(index + 1)]));
  });
  request.resume();
}

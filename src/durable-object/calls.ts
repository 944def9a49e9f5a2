/** One call from a holder to a LockWatchdog: a JSON message, answered by the lease's status. */
import { LockBackendError } from "../errors.js";
import { settleBy } from "../transport/call.js";
import { parseStatus, WATCHDOG_ROUTES, type WatchdogStatus } from "./messages.js";
import type { WatchdogNamespace } from "./platform.js";

export type WatchdogRoute = Exclude<keyof typeof WATCHDOG_ROUTES, "list">;

/** The answer: a status, or a refusal (a 4xx: the message is wrong and re-sending won't help). */
export type CallOutcome =
  | { readonly kind: "status"; readonly status: WatchdogStatus }
  | { readonly kind: "refused"; readonly message: string };

/** Any URL does: a stub routes by object id, and the object by path. */
const ORIGIN = "https://lock-watchdog.edgelock";

/**
 * Sends `body` to the object named `objectName`; throws LockBackendError when it cannot tell,
 * also when no whole answer came within `timeoutMs` (the object may still act on the message).
 */
export async function callWatchdog(
  namespace: WatchdogNamespace,
  objectName: string,
  route: WatchdogRoute,
  body: unknown,
  timeoutMs: number,
): Promise<CallOutcome> {
  let response: { readonly status: number; readonly ok: boolean; readonly text: string };
  try {
    const stub = namespace.get(namespace.idFromName(objectName));
    const answered = stub
      .fetch(`${ORIGIN}${WATCHDOG_ROUTES[route]}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
      .then(async (answer) => ({
        status: answer.status,
        ok: answer.ok,
        text: await answer.text(),
      }));
    response = await settleBy(
      answered,
      Date.now() + timeoutMs,
      timeoutMs,
      undefined,
      "the durableObjectWatchdog option requestTimeoutMs",
    );
  } catch (error) {
    throw new LockBackendError(
      `The Durable Object watchdog could not be reached (${route}): ${String(error)}`,
      { cause: error },
    );
  }
  const { text } = response;
  if (response.status >= 400 && response.status < 500) {
    return { kind: "refused", message: errorOf(text) ?? `HTTP ${response.status}` };
  }
  if (!response.ok) {
    throw new LockBackendError(
      `The Durable Object watchdog failed (${route}): HTTP ${response.status} ${errorOf(text) ?? ""}`.trim(),
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new LockBackendError(`The Durable Object watchdog answered ${route} with non-JSON.`);
  }
  return { kind: "status", status: parseStatus(parsed) };
}

function errorOf(text: string): string | undefined {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    return typeof parsed.error === "string" ? parsed.error : undefined;
  } catch {
    return text.slice(0, 200) || undefined;
  }
}

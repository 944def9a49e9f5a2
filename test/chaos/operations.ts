/**
 * Runs one lock operation for the workload and files how it ended: a result, an edgelock error
 * (typed, with a stable name), something else (a violation), or nothing at all (hung). Errors and
 * events are searched for the REST token on the way.
 */
import { EdgelockError } from "../../src/index.js";
import type { Journal, OperationKind } from "./journal.js";

export type Settled<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: unknown; readonly hung: boolean };

export class OperationRunner {
  /** Errors and events searched for the token so far. */
  inspected = 0;

  constructor(
    private readonly journal: Journal,
    private readonly secret: string,
    private readonly hangAfterMs: number,
  ) {}

  async run<T>(kind: OperationKind, operation: () => Promise<T>): Promise<Settled<T>> {
    this.journal.operations[kind] += 1;
    const pending = operation().then(
      (value): Settled<T> => ({ ok: true, value }),
      (error: unknown): Settled<T> => ({ ok: false, error, hung: false }),
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hang = new Promise<"hung">((resolve) => {
      timer = setTimeout(() => resolve("hung"), this.hangAfterMs);
    });
    const settled = await Promise.race([pending, hang]);
    clearTimeout(timer);
    if (settled === "hung") {
      this.journal.hung += 1;
      return { ok: false, error: new Error(`${kind} hung`), hung: true };
    }
    this.file(kind, settled);
    return settled;
  }

  /** Searches an event for the REST token. */
  inspectEvent(event: unknown): void {
    this.journal.count(this.journal.events, typeOf(event));
    this.inspect("event", event);
  }

  private file<T>(kind: OperationKind, settled: Settled<T>): void {
    const { journal } = this;
    if (settled.ok) {
      journal.count(journal.outcomes, settled.value === null ? `${kind}: busy` : `${kind}: ok`);
      return;
    }
    const { error } = settled;
    this.inspect(kind, error);
    if (error instanceof EdgelockError && error.name !== "EdgelockError") {
      journal.count(journal.outcomes, `${kind}: ${error.name}`);
    } else {
      journal.count(journal.outcomes, `${kind}: untyped`);
      journal.untypedErrors.push(`${kind}: ${String(error)}`);
    }
  }

  private inspect(where: string, value: unknown): void {
    this.inspected += 1;
    const text = textOf(value);
    if (text.includes(this.secret)) {
      this.journal.secretLeaks.push(`${where}: ${text.slice(0, 200)}`);
    }
  }
}

function typeOf(event: unknown): string {
  return typeof event === "object" && event !== null && "type" in event
    ? String(event.type)
    : "unknown";
}

/** Everything a log line could show of a value: messages, stacks and causes, recursively. */
export function textOf(value: unknown, depth = 0): string {
  if (depth > 6) return "";
  if (value instanceof Error) {
    return [String(value), value.stack ?? "", textOf(value.cause, depth + 1)].join("\n");
  }
  if (typeof value === "object" && value !== null) {
    return Object.entries(value)
      .map(([key, item]) => `${key}=${textOf(item, depth + 1)}`)
      .join("\n");
  }
  return String(value);
}

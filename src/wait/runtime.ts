import type { LockEvents } from "../events.js";
import type { OperationContext } from "../hold/context.js";
import type { WatchdogRegistry } from "../watchdog/renewer.js";
import type { WaitPolicy } from "./policy.js";
import type {
  BlockingPops,
  HandOffSubscriptions,
  ParkedSiblings,
  RecentContention,
} from "./push/client-state.js";

/** What a LockClient shares with the primitives it creates. */
export interface LockRuntime {
  readonly ctx: OperationContext;
  readonly prefix: string;
  readonly watchdogTimeoutMs: number;
  readonly waitPolicy: WaitPolicy;
  /** Push mode parks sooner where the client recently waited. */
  readonly contention: RecentContention;
  readonly parkedSiblings: ParkedSiblings;
  readonly blockingPops: BlockingPops;
  readonly subscriptions: HandOffSubscriptions;
  readonly watchdogs: WatchdogRegistry;
  readonly events: LockEvents;
  /** The explicit owner if given (validated), else the scope's, else a fresh token. */
  resolveOwner(explicit: unknown): string;
  resolveOwnerIfScoped(): string | undefined;
}

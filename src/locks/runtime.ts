import type { LockEvents } from "../events.js";
import type { BlockingPops, ParkedSiblings, RecentContention } from "../wait/client-state.js";
import type { WaitPolicy } from "../wait/policy.js";
import type { WatchdogRegistry } from "../watchdog/registry.js";
import type { OperationContext } from "./context.js";

/** What a LockClient shares with the primitives it creates. */
export interface LockRuntime {
  readonly ctx: OperationContext;
  readonly prefix: string;
  readonly watchdogTimeoutMs: number;
  readonly waitPolicy: WaitPolicy;
  /** Lock keys this client recently had to wait on (push mode parks sooner there). */
  readonly contention: RecentContention;
  /** This client's parked acquisitions per lock and owner (push mode). */
  readonly parkedSiblings: ParkedSiblings;
  /** Whether this client's backend serves blocking pops (push mode polls where it does not). */
  readonly blockingPops: BlockingPops;
  readonly watchdogs: WatchdogRegistry;
  readonly events: LockEvents;
  /** The explicit owner if given (validated), else the scope's, else a fresh token. */
  resolveOwner(explicit: unknown): string;
  /** The enclosing scope's owner, if any. */
  resolveOwnerIfScoped(): string | undefined;
}

/**
 * The contract between the local REST server and whatever executes Redis commands behind it:
 * a real `redis-server` over TCP, or the embedded in-memory engine.
 *
 * Replies keep the RESP distinctions the REST encoding needs (a status "OK" is not a bulk "OK",
 * integers are 64-bit), so the server can encode them exactly as Upstash does.
 */

/** One argument of a command: text (sent as UTF-8) or raw bytes. */
export type CommandArg = string | Uint8Array;

/** A command: its name first, then its arguments, e.g. `["SET", "k", "v", "PX", "1000"]`. */
export type Command = readonly CommandArg[];

/** A Redis reply, as RESP2 types it. */
export type Reply =
  | { readonly type: "status"; readonly value: string }
  | { readonly type: "error"; readonly message: string }
  | { readonly type: "integer"; readonly value: bigint }
  | { readonly type: "bulk"; readonly value: Uint8Array | null }
  | { readonly type: "array"; readonly value: readonly Reply[] | null };

/** Per-call options of `command`, `pipeline` and `transaction` (which never blocks: no `signal`). */
export interface CallOptions {
  /**
   * Aborted when the HTTP client goes away: a blocked command (BLPOP…) stops waiting and its
   * connection or waiter is released. The call then rejects. Default: never aborted.
   */
  readonly signal?: AbortSignal;
  /**
   * Told how many commands the call's scripts ran (each `redis.call`/`redis.pcall` that reached a
   * command, as Redis's INFO commandstats counts `calls`), when there were any: Upstash bills each
   * one besides the EVAL/EVALSHA itself. A call may report in parts; the counts add up.
   */
  readonly onScriptCommands?: (count: number) => void;
  /**
   * The request's `upstash-sync-token` header (read-your-writes), when it sent a non-empty one.
   * Only a replicated backend (replica mode) reads it: a read waits until the replica has what
   * the token names.
   */
  readonly syncToken?: string;
  /** Told the sync token to answer with, by a replicated backend; others leave it uncalled. */
  readonly onSyncToken?: (token: string) => void;
}

/** A message delivered to a subscriber; `pattern` is set for pattern subscriptions. */
export interface PubSubMessage {
  readonly channel: Uint8Array;
  readonly message: Uint8Array;
  readonly pattern?: Uint8Array;
}

export type SubscriptionKind = "channel" | "pattern";

/** Executes Redis commands. Implementations must be safe under concurrent calls. */
export interface Backend {
  /** Human-readable description for logs, e.g. `redis-server 7.0.15 at 127.0.0.1:6380`. */
  readonly description: string;
  /**
   * Runs one command. A command error is an `error` reply, not a rejection. Blocking commands
   * (BLPOP…) wait for data up to their timeout without holding up other calls.
   */
  command(command: Command, options?: CallOptions): Promise<Reply>;
  /** Runs commands in order, not atomically; one reply per command. */
  pipeline(commands: readonly Command[], options?: CallOptions): Promise<Reply[]>;
  /**
   * Runs commands atomically (MULTI/EXEC): no other client's command runs in between.
   * Resolves to the EXEC reply (an array with one reply per command), or to an `error` reply
   * when the transaction was discarded (e.g. a command that does not exist: EXECABORT).
   */
  transaction(commands: readonly Command[], options?: CallOptions): Promise<Reply>;
  /**
   * Subscribes to channels (SUBSCRIBE) or patterns (PSUBSCRIBE) until `signal` aborts. Resolves
   * once the subscription is in place; `onMessage` then receives every message published.
   */
  subscribe(
    kind: SubscriptionKind,
    targets: readonly CommandArg[],
    onMessage: (message: PubSubMessage) => void,
    signal: AbortSignal,
  ): Promise<void>;
  /** Releases connections and stops any process the backend started. Idempotent. */
  close(): Promise<void>;
}

/** Reply constructors, so backends and tests build replies the same way. */
export const reply = {
  ok: (): Reply => ({ type: "status", value: "OK" }),
  status: (value: string): Reply => ({ type: "status", value }),
  error: (message: string): Reply => ({ type: "error", message }),
  integer: (value: bigint | number): Reply => ({ type: "integer", value: BigInt(value) }),
  bulk: (value: Uint8Array | string | null): Reply => ({
    type: "bulk",
    value: typeof value === "string" ? new TextEncoder().encode(value) : value,
  }),
  nil: (): Reply => ({ type: "bulk", value: null }),
  array: (value: readonly Reply[] | null): Reply => ({ type: "array", value }),
} as const;

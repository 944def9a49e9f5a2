/**
 * Replica mode: the local server behaves as an Upstash global database seen from a read region.
 * Writes (and EVAL/EVALSHA, whatever their script does) run on the primary; reads (GET, SCAN,
 * EVAL_RO…) are answered by a replica that copies the primary `lagMs` late, unless the request's
 * `upstash-sync-token` names a primary state the replica has not reached: then the read waits
 * until it has (Upstash: "the read replica syncs up to that token before serving the read",
 * redis/howto/readyourwrites.mdx). Every answer carries a token: after a write, the primary's
 * position; after a read, the position the replica had reached. See docs/dev-server.md.
 */
import type {
  Backend,
  CallOptions,
  Command,
  CommandArg,
  PubSubMessage,
  Reply,
  SubscriptionKind,
} from "../backend.js";
import { isReadCommand } from "../profile/read-only.js";
import { isBlockingCommand } from "../resp/command-policy.js";

/** Options of replica mode (`DevServerOptions.replica`, `edgelock dev --replica-lag-ms`). */
export interface ReplicaOptions {
  /** How late the replica applies each write of the primary, in ms (≥ 0). */
  readonly lagMs: number;
}

/**
 * How the replica follows the primary: positions are numbers that only grow, comparable between
 * `written()` and `applied()`.
 */
export interface ReplicationLink {
  /** Called after each command that ran on the primary; resolves to the primary's position. */
  written(): Promise<number>;
  /** The primary's position now (a bound for tokens a client may present). */
  primaryPosition(): Promise<number>;
  /** The position the replica has applied up to. */
  applied(): Promise<number>;
  /** Resolves once the replica has applied `position` (or when `signal` aborts). */
  caughtUp(position: number, signal: AbortSignal | undefined): Promise<void>;
  close(): Promise<void>;
}

/** A token this server issued: a decimal position. Anything else names no state. */
function positionOf(token: string | undefined): number | undefined {
  if (token === undefined || !/^\d{1,15}$/.test(token)) return undefined;
  return Number(token);
}

function isReplicaRead(command: Command): boolean {
  return isReadCommand(command) && !isBlockingCommand(command);
}

/** A Backend that sends writes to `primary` and reads to `replica`, as a global database does. */
export class ReplicatedBackend implements Backend {
  readonly description: string;

  constructor(
    private readonly primary: Backend,
    private readonly replica: Backend,
    private readonly link: ReplicationLink,
    lagMs: number,
  ) {
    this.description = `${primary.description}, with a replica ${lagMs} ms behind`;
  }

  command(command: Command, options?: CallOptions): Promise<Reply> {
    if (isReplicaRead(command))
      return this.#read(() => this.replica.command(command, options), options);
    return this.#write(() => this.primary.command(command, options), options);
  }

  /** A pipeline of reads only is a replica's; one write sends the whole pipeline to the primary. */
  pipeline(commands: readonly Command[], options?: CallOptions): Promise<Reply[]> {
    if (commands.every(isReplicaRead)) {
      return this.#read(() => this.replica.pipeline(commands, options), options);
    }
    return this.#write(() => this.primary.pipeline(commands, options), options);
  }

  transaction(commands: readonly Command[], options?: CallOptions): Promise<Reply> {
    return this.#write(() => this.primary.transaction(commands, options), options);
  }

  /** Messages are published by scripts on the primary; subscribers listen there. */
  subscribe(
    kind: SubscriptionKind,
    targets: readonly CommandArg[],
    onMessage: (message: PubSubMessage) => void,
    signal: AbortSignal,
  ): Promise<void> {
    return this.primary.subscribe(kind, targets, onMessage, signal);
  }

  async close(): Promise<void> {
    await this.link.close();
    await Promise.all([this.primary.close(), this.replica.close()]);
  }

  async #write<T>(run: () => Promise<T>, options: CallOptions | undefined): Promise<T> {
    const result = await run();
    options?.onSyncToken?.(String(await this.link.written()));
    return result;
  }

  async #read<T>(run: () => Promise<T>, options: CallOptions | undefined): Promise<T> {
    const asked = positionOf(options?.syncToken);
    let floor = 0;
    if (asked !== undefined) {
      // A token from elsewhere (a restarted server) may name a state that never comes.
      floor = Math.min(asked, await this.link.primaryPosition());
      await this.link.caughtUp(floor, options?.signal);
    }
    const seen = await this.link.applied();
    const result = await run();
    options?.onSyncToken?.(String(Math.max(seen, floor)));
    return result;
  }
}

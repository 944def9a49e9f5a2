/**
 * A Backend in front of another that gives it a server profile (settings.ts): under `upstash`,
 * blocking commands answer at once or fail, `allow-key-locking` scripts are rewritten and
 * checked, and Upstash's key-size limit applies. Under both profiles it reports every script run
 * by the lock Upstash would take for it (the global lock unless the flag is set).
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
import { reply } from "../backend.js";
import { commandName, isBlockingCommand } from "../resp/command-policy.js";
import {
  clientErrorText,
  isDynamicKeyError,
  rewriteKeyLockingScript,
  sha1hex,
} from "./key-locking.js";
import { commandKeys } from "./key-specs.js";
import {
  type BlockingMode,
  type ServerProfile,
  UPSTASH_LIMITS,
  upstashErrors,
} from "./settings.js";

/** The lock Upstash takes for a script run. */
export type ScriptLock = "global" | "key";

/** What the profile tells the counters about. */
export interface ProfileEvents {
  /** A script ran (a NOSCRIPT or shebang refusal is not a run). `sha` is the client's. */
  script(lock: ScriptLock, sha: string, command: string): void;
  /** An `allow-key-locking` script touched a key it had not declared. */
  dynamicKeyRejection(sha: string, message: string): void;
  /** A blocking command answered at once (`immediate`) or refused (`error`). */
  blocking(outcome: "immediate" | "refused", command: string): void;
}

export interface ProfileSettings {
  readonly profile: ServerProfile;
  readonly blocking: BlockingMode;
  /** Keys longer than this are refused under `upstash`. Default 32 KiB, Upstash's limit. */
  readonly maxKeyBytes?: number;
}

interface ScriptRun {
  readonly lock: ScriptLock;
  readonly clientSha: string;
  /** The SHA the backend knows the script by, when it differs (a rewritten script). */
  readonly backendSha?: string;
}

/** A command made ready for the backend, or answered without it. */
type Prepared =
  | { readonly kind: "answer"; readonly reply: Reply }
  | {
      readonly kind: "run";
      readonly command: Command;
      readonly name: string;
      /** Run as a one-command transaction: Redis answers a blocking command at once there. */
      readonly atOnce: boolean;
      readonly script?: ScriptRun;
      /** SCRIPT LOAD of a rewritten script: answer the client's SHA. */
      readonly loadedAs?: string;
    };

const SCRIPT_RUNS = new Set(["eval", "evalsha", "eval_ro", "evalsha_ro"]);
const FUNCTION_RUNS = new Set(["fcall", "fcall_ro"]);

const text = (arg: CommandArg | undefined) =>
  arg === undefined ? "" : typeof arg === "string" ? arg : Buffer.from(arg).toString("utf8");
const byteLength = (arg: CommandArg) =>
  typeof arg === "string" ? Buffer.byteLength(arg, "utf8") : arg.byteLength;

/** Errors that mean the script never started: nothing to count. */
function scriptDidNotRun(result: Reply): boolean {
  if (result.type !== "error") return false;
  return /^(NOSCRIPT|ERR (Unexpected flag|Unexpected engine|Unknown lua shebang|Invalid script shebang|Error compiling script|Function not found|Number of keys))/.test(
    result.message,
  );
}

export class ProfileBackend implements Backend {
  readonly description: string;
  /** Client SHA of an `allow-key-locking` script → SHA of the text the backend runs. */
  private readonly rewritten = new Map<string, string>();
  private readonly maxKeyBytes: number;

  constructor(
    private readonly inner: Backend,
    private readonly settings: ProfileSettings,
    private readonly events: ProfileEvents,
  ) {
    this.description = inner.description;
    this.maxKeyBytes = settings.maxKeyBytes ?? UPSTASH_LIMITS.maxKeyBytes;
  }

  get upstash(): boolean {
    return this.settings.profile === "upstash";
  }

  async command(command: Command, options?: CallOptions): Promise<Reply> {
    const prepared = this.prepare(command, false);
    if (prepared.kind === "answer") return prepared.reply;
    const result = prepared.atOnce
      ? await this.runAtOnce(prepared.command, options)
      : await this.inner.command(prepared.command, options);
    return this.finish(prepared, result);
  }

  async pipeline(commands: readonly Command[], options?: CallOptions): Promise<Reply[]> {
    const prepared = commands.map((command) => this.prepare(command, false));
    const replies: Reply[] = new Array(commands.length);
    // Runs of ordinary commands go as one pipeline; an at-once blocking command goes alone, in
    // order, so the pipeline keeps its sequence.
    let batch: number[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const indices = batch;
      batch = [];
      const results = await this.inner.pipeline(
        indices.map((index) => (prepared[index] as Extract<Prepared, { kind: "run" }>).command),
        options,
      );
      indices.forEach((index, at) => {
        replies[index] = this.finish(prepared[index]!, results[at] ?? reply.error("ERR no reply"));
      });
    };
    for (const [index, item] of prepared.entries()) {
      if (item.kind === "answer") replies[index] = item.reply;
      else if (item.atOnce) {
        await flush();
        replies[index] = this.finish(item, await this.runAtOnce(item.command, options));
      } else batch.push(index);
    }
    await flush();
    return replies;
  }

  async transaction(commands: readonly Command[], options?: CallOptions): Promise<Reply> {
    const prepared = commands.map((command) => this.prepare(command, true));
    const refused = prepared.find((item) => item.kind === "answer" && item.reply.type === "error");
    if (refused?.kind === "answer" && refused.reply.type === "error") {
      return reply.error(`EXECABORT Transaction discarded: ${refused.reply.message}`);
    }
    const runnable = prepared.filter((item) => item.kind === "run");
    const result = await this.inner.transaction(
      runnable.map((item) => item.command),
      options,
    );
    if (result.type !== "array" || result.value === null) return result;
    const replies = result.value;
    return reply.array(runnable.map((item, index) => this.finish(item, replies[index]!)));
  }

  subscribe(
    kind: SubscriptionKind,
    targets: readonly CommandArg[],
    onMessage: (message: PubSubMessage) => void,
    signal: AbortSignal,
  ): Promise<void> {
    return this.inner.subscribe(kind, targets, onMessage, signal);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** Applies the profile to one command; `inTransaction` for /multi-exec. */
  private prepare(command: Command, inTransaction: boolean): Prepared {
    const name = commandName(command);
    if (this.upstash) {
      const tooLong = (commandKeys(command) ?? []).find(
        (key) => byteLength(key) > this.maxKeyBytes,
      );
      if (tooLong !== undefined) {
        return {
          kind: "answer",
          reply: reply.error(upstashErrors.keySize(this.maxKeyBytes, byteLength(tooLong))),
        };
      }
    }
    let atOnce = false;
    if (this.upstash && isBlockingCommand(command)) {
      if (this.settings.blocking === "error") {
        this.events.blocking("refused", name);
        return { kind: "answer", reply: reply.error(upstashErrors.notAvailable(name)) };
      }
      this.events.blocking("immediate", name);
      // Inside MULTI (a transaction already) Redis never blocks.
      atOnce = !inTransaction;
    }
    if (SCRIPT_RUNS.has(name)) return this.prepareScript(command, name, inTransaction);
    if (FUNCTION_RUNS.has(name)) {
      // Functions' own allow-key-locking flag is not emulated: FCALL counts as global.
      const script: ScriptRun = { lock: "global", clientSha: `function:${text(command[1])}` };
      return { kind: "run", command, name, atOnce, script };
    }
    if (this.upstash && name === "script") return this.prepareScriptCommand(command, name);
    return { kind: "run", command, name, atOnce };
  }

  private prepareScript(command: Command, name: string, inTransaction: boolean): Prepared {
    const bySha = name.startsWith("evalsha");
    const source = text(command[1]);
    // Upstash: scripts queued inside MULTI/EXEC always run under the global lock.
    const keyLock: ScriptLock = inTransaction ? "global" : "key";
    if (bySha) {
      const clientSha = source.toLowerCase();
      const backendSha = this.upstash ? this.rewritten.get(clientSha) : undefined;
      if (backendSha === undefined) {
        return { kind: "run", command, name, atOnce: false, script: { lock: "global", clientSha } };
      }
      return {
        kind: "run",
        command: [command[0]!, backendSha, ...command.slice(2)],
        name,
        atOnce: false,
        script: { lock: keyLock, clientSha, backendSha },
      };
    }
    const clientSha = sha1hex(source);
    const body = this.upstash ? rewriteKeyLockingScript(source) : undefined;
    if (body === undefined) {
      return { kind: "run", command, name, atOnce: false, script: { lock: "global", clientSha } };
    }
    const backendSha = sha1hex(body);
    this.rewritten.set(clientSha, backendSha);
    return {
      kind: "run",
      command: [command[0]!, body, ...command.slice(2)],
      name,
      atOnce: false,
      script: { lock: keyLock, clientSha, backendSha },
    };
  }

  /** SCRIPT LOAD / EXISTS speak the client's SHAs; the backend knows rewritten scripts by theirs. */
  private prepareScriptCommand(command: Command, name: string): Prepared {
    const sub = text(command[1]).toLowerCase();
    if (sub === "load" && command.length === 3) {
      const source = text(command[2]);
      const body = rewriteKeyLockingScript(source);
      if (body === undefined) return { kind: "run", command, name, atOnce: false };
      const clientSha = sha1hex(source);
      this.rewritten.set(clientSha, sha1hex(body));
      return {
        kind: "run",
        command: [command[0]!, command[1]!, body],
        name,
        atOnce: false,
        loadedAs: clientSha,
      };
    }
    if (sub === "exists") {
      const shas = command
        .slice(2)
        .map((sha) => this.rewritten.get(text(sha).toLowerCase()) ?? sha);
      return { kind: "run", command: [command[0]!, command[1]!, ...shas], name, atOnce: false };
    }
    return { kind: "run", command, name, atOnce: false };
  }

  /** A blocking command answered as if its timeout had passed: MULTI never blocks. */
  private async runAtOnce(command: Command, options: CallOptions | undefined): Promise<Reply> {
    // The options carry the sync token of replica mode; a blocking command never blocks here.
    const result = await this.inner.transaction([command], options);
    if (result.type === "array" && result.value !== null && result.value[0] !== undefined) {
      return result.value[0];
    }
    // Discarded (a malformed command): run it alone for its own error, which comes at once.
    return this.inner.command(command, options);
  }

  private finish(prepared: Prepared, result: Reply): Reply {
    if (prepared.kind === "answer") return prepared.reply;
    const { script } = prepared;
    if (prepared.loadedAs !== undefined && result.type === "bulk") {
      return reply.bulk(prepared.loadedAs);
    }
    if (script === undefined || scriptDidNotRun(result)) return result;
    this.events.script(script.lock, script.clientSha, prepared.name);
    if (result.type !== "error") return result;
    const message =
      script.backendSha === undefined
        ? result.message
        : clientErrorText(result.message, script.backendSha, script.clientSha);
    if (isDynamicKeyError(message)) this.events.dynamicKeyRejection(script.clientSha, message);
    return message === result.message ? result : reply.error(message);
  }
}

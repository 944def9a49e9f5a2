/** Runs a request plan on the backend and encodes the outcome as an Upstash REST response. */
import type { Backend, CallOptions, Command, Reply } from "../backend.js";
import { reply } from "../backend.js";
import { commandName, sharedConnectionRefusal } from "../resp/command-policy.js";
import {
  encodeError,
  encodeReplyList,
  encodeReplyObject,
  type ResponseEncoding,
} from "./encode.js";
import type { RequestPlan } from "./request-plan.js";

export interface RestOutcome {
  readonly status: number;
  readonly body: string;
  /** Lower-case names of the commands handed to the backend. */
  readonly executed: readonly string[];
  /** Commands the request's scripts ran (redis.call/pcall), which Upstash bills too. */
  readonly scriptCommands: number;
}

/**
 * The REST API is stateless, so commands that only make sense on a connection of one's own
 * (MULTI, SELECT, SUBSCRIBE…) are refused for every backend alike.
 */
function sharedRefusal(command: Command): Reply | undefined {
  const reason = sharedConnectionRefusal(command);
  return reason === undefined ? undefined : reply.error(reason);
}

/** Why this request may not run a command (e.g. its token is read-only), or undefined. */
export type CommandGate = (command: Command) => string | undefined;

export async function executePlan(
  plan: RequestPlan,
  backend: Backend,
  encoding: ResponseEncoding,
  options: CallOptions = {},
  gate?: CommandGate,
): Promise<RestOutcome> {
  let scriptCommands = 0;
  const metered: CallOptions = {
    ...options,
    onScriptCommands: (count) => {
      scriptCommands += count;
      options.onScriptCommands?.(count);
    },
  };
  const outcome = await runPlan(plan, backend, encoding, metered, gate);
  return { ...outcome, scriptCommands };
}

async function runPlan(
  plan: RequestPlan,
  backend: Backend,
  encoding: ResponseEncoding,
  options: CallOptions,
  gate: CommandGate | undefined,
): Promise<Omit<RestOutcome, "scriptCommands">> {
  const refusal = (command: Command): Reply | undefined => {
    const reason = gate?.(command);
    return reason === undefined ? sharedRefusal(command) : reply.error(reason);
  };
  switch (plan.kind) {
    case "single": {
      const refused = refusal(plan.command);
      if (refused?.type === "error")
        return { status: 400, body: encodeError(refused.message), executed: [] };
      const result = await backend.command(plan.command, options);
      return {
        // A failed command is HTTP 400 on Upstash; @upstash/redis throws the message.
        status: result.type === "error" ? 400 : 200,
        body: encodeReplyObject(result, encoding),
        executed: [commandName(plan.command)],
      };
    }
    case "pipeline": {
      const refused = plan.commands.map(refusal);
      const runnable = plan.commands.filter((_, index) => refused[index] === undefined);
      const results = runnable.length > 0 ? await backend.pipeline(runnable, options) : [];
      let next = 0;
      const replies = refused.map(
        (early) => early ?? results[next++] ?? reply.error("ERR no reply"),
      );
      return {
        status: 200,
        body: encodeReplyList(replies, encoding),
        executed: runnable.map(commandName),
      };
    }
    case "multi-exec": {
      for (const command of plan.commands) {
        const refused = refusal(command);
        if (refused?.type === "error") {
          return {
            status: 400,
            body: encodeError(`EXECABORT Transaction discarded: ${refused.message}`),
            executed: [],
          };
        }
      }
      const result = await backend.transaction(plan.commands, options);
      const executed = plan.commands.map(commandName);
      if (result.type === "array" && result.value !== null) {
        return { status: 200, body: encodeReplyList(result.value, encoding), executed };
      }
      // Discarded as a whole: a single {"error"}. 400 so the client throws the message instead of
      // failing to map a non-array body.
      const message = result.type === "error" ? result.message : "EXECABORT Transaction discarded";
      return { status: 400, body: encodeError(message), executed };
    }
  }
}

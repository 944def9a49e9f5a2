/**
 * Counting the commands a script runs on a real Redis, per script run, for the billed-commands
 * figure (Upstash bills every `redis.call` besides the EVAL/EVALSHA).
 *
 * Redis keeps no per-client count of the commands its scripts ran (7.0 has no `tot-cmds` in
 * CLIENT INFO), and its counters are server-wide: a delta read around a script from outside
 * would count every other client's commands too. So each script run goes in its own
 * `MULTI / INFO stats / <script> / INFO stats / EXEC`: EXEC runs the five atomically, nothing
 * else runs between the two readings, and their difference in `total_commands_processed` is
 * exactly the first INFO, the script and the commands it ran (counted as INFO commandstats
 * counts `calls`: a command that failed while running counts, one refused before it does not).
 * `INFO stats` rather than `INFO commandstats`: one number, and its cost does not grow with the
 * number of distinct commands the server has seen. The script text and SHA are
 * untouched; the only difference a script could see is that its clock is frozen at EXEC's start,
 * a few microseconds earlier than its own.
 */
import type { Command, Reply } from "../backend.js";
import { reply } from "../backend.js";
import { commandName } from "./command-policy.js";

const SCRIPT_RUNS = new Set(["eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"]);

const READING: Command = ["INFO", "stats"];

/** Commands sent for one script run: MULTI, INFO, the script, INFO, EXEC. */
const BRACKET_LENGTH = 5;

export function isScriptRun(command: Command): boolean {
  return SCRIPT_RUNS.has(commandName(command));
}

/** `total_commands_processed` out of INFO stats, or undefined when the reply is not that. */
export function totalCalls(info: Reply | undefined): number | undefined {
  if (info?.type !== "bulk" || info.value === null) return undefined;
  const text = Buffer.from(info.value).toString("latin1");
  const match = /^total_commands_processed:(\d+)/m.exec(text);
  return match === null ? undefined : Number(match[1]);
}

/** The commands to write for `commands`: each script run in its bracket, the rest as they are. */
export function bracketScripts(commands: readonly Command[]): Command[] {
  return commands.flatMap((command) =>
    isScriptRun(command) ? [["MULTI"], READING, command, READING, ["EXEC"]] : [command],
  );
}

/**
 * The replies to `commands` out of the replies to `bracketScripts(commands)`, and how many
 * commands the scripts ran.
 */
export function unbracketReplies(
  commands: readonly Command[],
  sent: readonly Reply[],
): { replies: Reply[]; scriptCommands: number } {
  const replies: Reply[] = [];
  let scriptCommands = 0;
  let at = 0;
  for (const command of commands) {
    if (!isScriptRun(command)) {
      replies.push(sent[at] ?? reply.error("ERR no reply"));
      at += 1;
      continue;
    }
    const [multi, , queued, , exec] = sent.slice(at, at + BRACKET_LENGTH);
    at += BRACKET_LENGTH;
    const ran = exec?.type === "array" ? exec.value : null;
    if (ran !== null && ran.length === 3) {
      replies.push(ran[1]!);
      const before = totalCalls(ran[0]);
      const after = totalCalls(ran[2]);
      // The difference holds the first INFO and the script itself besides what the script ran.
      if (before !== undefined && after !== undefined) {
        scriptCommands += Math.max(0, after - before - 2);
      }
      continue;
    }
    // Refused while queuing (wrong arity…): the error Redis gives the command on its own.
    const refusal = [queued, multi, exec].find((item) => item?.type === "error");
    replies.push(refusal ?? reply.error("ERR no reply to the script's EXEC"));
  }
  return { replies, scriptCommands };
}

/** A transaction's commands with a reading before and after, when one of them is a script. */
export function bracketTransaction(commands: readonly Command[]): {
  readonly sent: Command[];
  readonly metered: boolean;
} {
  const metered = commands.some(isScriptRun);
  return { sent: metered ? [READING, ...commands, READING] : [...commands], metered };
}

/**
 * The EXEC reply to `commands` out of the EXEC reply to a metered transaction, and how many
 * commands its scripts ran (every command counts once in the difference, besides the first INFO).
 */
export function unbracketTransaction(
  commands: readonly Command[],
  exec: Reply,
): { exec: Reply; scriptCommands: number } {
  if (exec.type !== "array" || exec.value === null || exec.value.length !== commands.length + 2) {
    return { exec, scriptCommands: 0 };
  }
  const before = totalCalls(exec.value[0]);
  const after = totalCalls(exec.value[exec.value.length - 1]);
  const scriptCommands =
    before === undefined || after === undefined
      ? 0
      : Math.max(0, after - before - 1 - commands.length);
  return { exec: reply.array(exec.value.slice(1, -1)), scriptCommands };
}

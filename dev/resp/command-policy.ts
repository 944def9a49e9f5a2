/**
 * Which commands a pooled, shared connection can safely run. Some commands change the state of
 * the connection itself (MULTI, SELECT, SUBSCRIBE…): run on a shared connection they would leak
 * into other requests, so they are refused. Blocking commands would stall every request queued
 * behind them, so they get a connection of their own.
 */
import type { Command, CommandArg } from "../backend.js";

const CONNECTION_STATE_COMMANDS = new Set([
  "auth",
  "discard",
  "exec",
  "hello",
  "monitor",
  "multi",
  "psubscribe",
  "psync",
  "punsubscribe",
  "quit",
  "replconf",
  "reset",
  "select",
  "ssubscribe",
  "subscribe",
  "sunsubscribe",
  "sync",
  "unsubscribe",
  "unwatch",
  "watch",
]);

const BLOCKING_COMMANDS = new Set([
  "blmove",
  "blmpop",
  "blpop",
  "brpop",
  "brpoplpush",
  "bzmpop",
  "bzpopmax",
  "bzpopmin",
  "wait",
  "waitaof",
]);

function text(arg: CommandArg | undefined): string {
  if (arg === undefined) return "";
  return (typeof arg === "string" ? arg : Buffer.from(arg).toString("utf8")).toLowerCase();
}

/** Lower-case command name, e.g. `"evalsha"`. */
export function commandName(command: Command): string {
  return text(command[0]);
}

/** A reason to refuse the command on a shared connection, or undefined when it is safe. */
export function sharedConnectionRefusal(command: Command): string | undefined {
  const name = commandName(command);
  const changesState =
    CONNECTION_STATE_COMMANDS.has(name) || (name === "client" && text(command[1]) === "reply");
  if (!changesState) return undefined;
  return `ERR '${name}' is not supported: it would change the state of a shared connection`;
}

/** True when the command may block its connection waiting for data (BLPOP, XREAD BLOCK…). */
export function isBlockingCommand(command: Command): boolean {
  const name = commandName(command);
  if (BLOCKING_COMMANDS.has(name)) return true;
  if (name === "xread" || name === "xreadgroup")
    return command.some((arg) => text(arg) === "block");
  return false;
}

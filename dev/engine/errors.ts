/** Error replies. Handlers throw `CommandError`; the dispatcher turns it into an `error` reply. */

export class CommandError extends Error {
  /** `message` is the full reply text including its code, e.g. `ERR syntax error`. */
}

export const Errors = {
  syntax: "ERR syntax error",
  wrongType: "WRONGTYPE Operation against a key holding the wrong kind of value",
  notInteger: "ERR value is not an integer or out of range",
  notFloat: "ERR value is not a valid float",
  overflow: "ERR increment or decrement would overflow",
  nanOrInfinity: "ERR increment would produce NaN or Infinity",
  noSuchKey: "ERR no such key",
  noScript: "NOSCRIPT No matching script. Please use EVAL.",
  execAbort: "EXECABORT Transaction discarded because of previous errors.",
  hashNotInteger: "ERR hash value is not an integer",
  hashNotFloat: "ERR hash value is not a float",
  minMaxNotFloat: "ERR min or max is not a float",
  positiveOutOfRange: "ERR value is out of range, must be positive",
} as const;

export function wrongArity(name: string): string {
  return `ERR wrong number of arguments for '${name}' command`;
}

export function invalidExpireTime(name: string): string {
  return `ERR invalid expire time in '${name}' command`;
}

/** Redis quotes the first arguments of an unknown command, each followed by a space. */
export function unknownCommand(name: string, args: readonly string[]): string {
  const shown = args
    .slice(0, 100)
    .map((a) => `'${a.slice(0, 128)}' `)
    .join("");
  return `ERR unknown command '${name.slice(0, 128)}', with args beginning with: ${shown}`;
}

export function fail(message: string): never {
  throw new CommandError(message);
}

/**
 * RESP2 wire encoding: commands out (always arrays of bulk strings) and replies (used by tests and
 * by the REST server's optional raw-RESP response format).
 */
import type { Command, CommandArg, Reply } from "../backend.js";

const CRLF = Buffer.from("\r\n");

function argBytes(arg: CommandArg): Buffer {
  return typeof arg === "string"
    ? Buffer.from(arg, "utf8")
    : Buffer.from(arg.buffer, arg.byteOffset, arg.byteLength);
}

function pushCommand(parts: Buffer[], command: Command): void {
  parts.push(Buffer.from(`*${command.length}\r\n`));
  for (const arg of command) {
    const bytes = argBytes(arg);
    parts.push(Buffer.from(`$${bytes.byteLength}\r\n`), bytes, CRLF);
  }
}

/** Encodes commands back to back into one buffer, so they can go out in a single socket write. */
export function encodeCommands(commands: readonly Command[]): Buffer {
  const parts: Buffer[] = [];
  for (const command of commands) pushCommand(parts, command);
  return Buffer.concat(parts);
}

function pushReply(parts: Buffer[], reply: Reply): void {
  switch (reply.type) {
    case "status":
      parts.push(Buffer.from(`+${reply.value}\r\n`));
      return;
    case "error":
      parts.push(Buffer.from(`-${reply.message}\r\n`));
      return;
    case "integer":
      parts.push(Buffer.from(`:${reply.value}\r\n`));
      return;
    case "bulk":
      if (reply.value === null) {
        parts.push(Buffer.from("$-1\r\n"));
        return;
      }
      parts.push(
        Buffer.from(`$${reply.value.byteLength}\r\n`),
        Buffer.from(reply.value.buffer, reply.value.byteOffset, reply.value.byteLength),
        CRLF,
      );
      return;
    case "array":
      if (reply.value === null) {
        parts.push(Buffer.from("*-1\r\n"));
        return;
      }
      parts.push(Buffer.from(`*${reply.value.length}\r\n`));
      for (const item of reply.value) pushReply(parts, item);
      return;
  }
}

/** Encodes one reply as RESP2 bytes. */
export function encodeReply(reply: Reply): Buffer {
  const parts: Buffer[] = [];
  pushReply(parts, reply);
  return Buffer.concat(parts);
}

/**
 * Byte strings. Inside the engine every key, value and argument is a "binary string": a JS string
 * whose char codes are the bytes (0..255), i.e. latin1. That keeps values binary-safe while letting
 * the engine use plain string comparison (which then orders like memcmp), Map keys and concatenation.
 */
import { Buffer } from "node:buffer";
import type { CommandArg } from "../backend.js";

const NON_ASCII = /[^\p{ASCII}]/u;

/** Converts a command argument (UTF-8 text or raw bytes) to a binary string. */
export function argToBinary(arg: CommandArg): string {
  if (typeof arg === "string") {
    // ASCII text is already its own binary string; skip the encode/decode round trip.
    return NON_ASCII.test(arg) ? Buffer.from(arg, "utf8").toString("latin1") : arg;
  }
  return Buffer.from(arg.buffer, arg.byteOffset, arg.byteLength).toString("latin1");
}

/** Converts a binary string to bytes (a plain Uint8Array view, not a Buffer subclass instance). */
export function binaryToBytes(value: string): Uint8Array {
  const buf = Buffer.from(value, "latin1");
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** Decodes a binary string as UTF-8 text, for status and error messages. */
export function binaryToText(value: string): string {
  return NON_ASCII.test(value) ? Buffer.from(value, "latin1").toString("utf8") : value;
}

/** Encodes text as UTF-8 and returns it as a binary string. */
export function textToBinary(text: string): string {
  return NON_ASCII.test(text) ? Buffer.from(text, "utf8").toString("latin1") : text;
}

/**
 * Lower-casing for command names and options. On binary strings the built-in only changes A-Z
 * and latin1 letters (to other non-ASCII chars), so it never makes a non-keyword match a keyword.
 */
export function asciiLower(value: string): string {
  return value.toLowerCase();
}

/** Case-insensitive comparison of an argument against an ASCII keyword (keyword in lower case). */
export function isKeyword(arg: string | undefined, keyword: string): boolean {
  return arg !== undefined && arg.length === keyword.length && asciiLower(arg) === keyword;
}

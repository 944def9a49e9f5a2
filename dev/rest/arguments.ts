/**
 * Turns decoded request JSON into Redis commands.
 *
 * Conversion rules (how `@upstash/redis` sends values):
 * - strings: as UTF-8;
 * - numbers: plain decimal digits, never exponent notation (`3600000`, not `3.6e6`); integers keep
 *   every digit, even beyond 2^53; non-integers keep their exact written decimal (`1.5e-7` →
 *   `0.00000015`, trailing zeros dropped: `1.50` → `1.5`);
 * - booleans: `"true"` / `"false"` — the text `JSON.stringify` would give, so a value written with
 *   `redis.set(k, true)` reads back as `true` through the client's JSON deserialization;
 * - null, arrays and objects: refused with a 400 (the client stringifies objects itself).
 */
import type { Command } from "../backend.js";
import { JsonNumber, type JsonValue } from "./json.js";

/** The request is malformed; the message is safe to send back to the caller. */
export class RequestShapeError extends Error {
  override readonly name = "RequestShapeError";
}

/** Exponents beyond this would expand into absurdly long digit strings. */
const MAX_EXPONENT = 400;

/** Formats a JSON number literal as plain decimal text, exactly, without going through a float. */
export function formatJsonNumber(source: string): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(source);
  if (match === null) throw new RequestShapeError(`invalid number ${source}`);
  const [, sign = "", integerPart = "", fractionPart = "", exponentText = "0"] = match;
  const exponent = Number(exponentText);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > MAX_EXPONENT) {
    throw new RequestShapeError(`number ${source} is out of the supported range`);
  }
  const digits = integerPart + fractionPart;
  const pointAt = integerPart.length + exponent;
  let whole: string;
  let fraction: string;
  if (pointAt <= 0) {
    whole = "0";
    fraction = "0".repeat(-pointAt) + digits;
  } else if (pointAt >= digits.length) {
    whole = digits + "0".repeat(pointAt - digits.length);
    fraction = "";
  } else {
    whole = digits.slice(0, pointAt);
    fraction = digits.slice(pointAt);
  }
  whole = whole.replace(/^0+(?=\d)/, "");
  fraction = fraction.replace(/0+$/, "");
  const isZero = /^0*$/.test(whole) && fraction === "";
  const text = fraction === "" ? whole : `${whole}.${fraction}`;
  return sign === "-" && !isZero ? `-${text}` : text;
}

function toArgument(value: JsonValue, where: string): string {
  if (typeof value === "string") return value;
  if (value instanceof JsonNumber) return formatJsonNumber(value.source);
  if (typeof value === "boolean") return value ? "true" : "false";
  if (value === null) throw new RequestShapeError(`${where} is null; send a string or a number`);
  throw new RequestShapeError(
    `${where} is ${Array.isArray(value) ? "an array" : "an object"}; send a string or a number (JSON-encode structured values)`,
  );
}

/** `["SET","k","v"]` → a command. `label` prefixes error messages (e.g. "command 2"). */
export function toCommand(value: JsonValue, label = "command"): Command {
  if (!Array.isArray(value)) {
    throw new RequestShapeError(`${label} must be a JSON array like ["GET","key"]`);
  }
  if (value.length === 0) throw new RequestShapeError(`${label} is empty`);
  return value.map((item, index) =>
    toArgument(item, index === 0 ? `${label}: the command name` : `${label}: argument ${index}`),
  );
}

/** `[["GET","a"],["SET","b","1"]]` → commands (for /pipeline and /multi-exec). */
export function toCommandList(value: JsonValue): Command[] {
  if (!Array.isArray(value)) {
    throw new RequestShapeError('body must be a JSON array of commands like [["GET","key"]]');
  }
  if (value.length === 0) throw new RequestShapeError("body is an empty list of commands");
  return value.map((item, index) => toCommand(item, `command ${index + 1}`));
}

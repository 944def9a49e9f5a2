/**
 * Encodes Redis replies as Upstash REST JSON.
 *
 * With `Upstash-Encoding: base64` (the `@upstash/redis` default) every string is sent as base64 of
 * its raw bytes, at every depth, because the client base64-decodes every string it receives —
 * except a top-level `"OK"`, which it keeps as is, so a top-level OK status goes out raw, as
 * Upstash does. Without the header strings go out as UTF-8 text. Integers are written from their
 * exact digits (never through a JS number); errors are never encoded.
 */
import type { Reply } from "../backend.js";

export type ResponseEncoding = "base64" | "text";

const utf8 = new TextDecoder("utf-8");

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

function encodeString(bytes: Uint8Array, encoding: ResponseEncoding): string {
  return JSON.stringify(encoding === "base64" ? base64(bytes) : utf8.decode(bytes));
}

/** JSON text of a successful reply's value (the part that goes under `"result"`). */
export function encodeResultValue(reply: Reply, encoding: ResponseEncoding, depth = 0): string {
  switch (reply.type) {
    case "status":
      if (encoding === "base64" && !(depth === 0 && reply.value === "OK")) {
        return encodeString(Buffer.from(reply.value, "utf8"), encoding);
      }
      return JSON.stringify(reply.value);
    case "bulk":
      return reply.value === null ? "null" : encodeString(reply.value, encoding);
    case "integer":
      return reply.value.toString();
    case "array":
      if (reply.value === null) return "null";
      return `[${reply.value.map((item) => encodeResultValue(item, encoding, depth + 1)).join(",")}]`;
    case "error":
      // Only reachable nested inside an array (e.g. a Lua table holding an error reply): there is
      // no Upstash convention for it, so it keeps the same shape as a pipeline error element.
      return encodeError(reply.message);
  }
}

/** `{"error":"…"}` */
export function encodeError(message: string): string {
  return `{"error":${JSON.stringify(message)}}`;
}

/** `{"result":…}` or `{"error":…}` for one reply (a single command or one pipeline element). */
export function encodeReplyObject(reply: Reply, encoding: ResponseEncoding): string {
  if (reply.type === "error") return encodeError(reply.message);
  return `{"result":${encodeResultValue(reply, encoding)}}`;
}

/** `[{"result":…},{"error":…},…]` for /pipeline and /multi-exec. */
export function encodeReplyList(replies: readonly Reply[], encoding: ResponseEncoding): string {
  return `[${replies.map((reply) => encodeReplyObject(reply, encoding)).join(",")}]`;
}

/** Reads a request body into memory, up to a size limit. */
import type { IncomingMessage } from "node:http";

export type BodyResult =
  | { readonly kind: "ok"; readonly body: Buffer }
  | { readonly kind: "too-large"; readonly received: number };

/**
 * Collects the body. Past `limitBytes` the rest is read and discarded rather than refused
 * mid-upload, so the client gets the 413 answer instead of a broken connection (which
 * `@upstash/redis` would retry).
 */
export function readBody(request: IncomingMessage, limitBytes: number): Promise<BodyResult> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    request.on("data", (chunk: Buffer) => {
      received += chunk.byteLength;
      if (received <= limitBytes) chunks.push(chunk);
      else chunks.length = 0;
    });
    let ended = false;
    request.once("end", () => {
      ended = true;
      resolve(
        received > limitBytes
          ? { kind: "too-large", received }
          : { kind: "ok", body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) },
      );
    });
    request.once("error", reject);
    // A client that disconnects mid-upload may produce neither 'end' nor 'error'.
    request.once("close", () => {
      if (!ended) reject(new Error("client closed the connection before sending the whole body"));
    });
  });
}

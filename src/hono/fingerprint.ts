/** The Idempotency-Key draft's request fingerprint: a key reused with another one is a 422. */
import type { Context } from "hono";

/**
 * SHA-256 (hex) of the method, the path with its query, and the body. Not the headers: providers
 * re-sign each retry. The body is read through Hono's cache, so the handler can still call
 * `c.req.json()` / `c.req.text()` (not `c.req.raw.text()`).
 */
export async function requestFingerprint(c: Context): Promise<string> {
  const url = new URL(c.req.url);
  const head = new TextEncoder().encode(`${c.req.method}\n${url.pathname}${url.search}\n`);
  const body = new Uint8Array(await c.req.arrayBuffer());
  const message = new Uint8Array(head.byteLength + body.byteLength);
  message.set(head, 0);
  message.set(body, head.byteLength);
  const digest = await crypto.subtle.digest("SHA-256", message);
  let hex = "";
  for (const byte of new Uint8Array(digest)) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/**
 * The request fingerprint of the Idempotency-Key draft: a digest of what makes two requests "the
 * same". A key reused with a different fingerprint is a client error (422), not a retry.
 */
import type { Context } from "hono";

/**
 * SHA-256 (hex) of the method, the path with its query, and the body bytes. Headers are left out
 * on purpose: providers re-sign each retry (a new timestamp), so headers differ between
 * deliveries of the same event. Reads the body through Hono's cache, so the handler can still
 * call `c.req.json()` / `c.req.text()` (not `c.req.raw.text()`).
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

/**
 * Signed webhooks the way the big providers sign them (Stripe's scheme): the sender sends
 *
 *   Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">
 *
 * and the receiver recomputes the HMAC over the raw body, compares in constant time
 * (`crypto.subtle.verify`), and refuses timestamps outside a tolerance, so that a captured
 * delivery cannot be replayed days later. Several `v1=` entries are accepted (secret rotation).
 */

export const SIGNATURE_HEADER = "webhook-signature";
/** How far the signed timestamp may be from now, in seconds (Stripe's default). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

const encoder = new TextEncoder();

function hmacKey(secret: string, usage: "sign" | "verify"): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    [usage],
  );
}

function toHex(bytes: ArrayBuffer): string {
  let hex = "";
  for (const byte of new Uint8Array(bytes)) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

function fromHex(hex: string): Uint8Array<ArrayBuffer> | null {
  if (!/^(?:[0-9a-f]{2})+$/i.test(hex)) return null;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++)
    bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/** The header value a sender attaches to `body` (used by the demo and `send.ts`). */
export async function signPayload(
  secret: string,
  body: string,
  timestampSeconds = Math.floor(Date.now() / 1000),
): Promise<string> {
  const key = await hmacKey(secret, "sign");
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(`${timestampSeconds}.${body}`));
  return `t=${timestampSeconds},v1=${toHex(mac)}`;
}

export type SignatureCheck =
  | { readonly valid: true }
  | { readonly valid: false; readonly reason: string };

/** Checks `header` against the raw `body`. */
export async function verifySignature(
  secret: string,
  header: string | undefined,
  body: string,
  options: { nowSeconds?: number; toleranceSeconds?: number } = {},
): Promise<SignatureCheck> {
  if (!header) return { valid: false, reason: "no signature header" };
  let timestamp: number | undefined;
  const signatures: Uint8Array<ArrayBuffer>[] = [];
  for (const part of header.split(",")) {
    const [name, value = ""] = part.trim().split("=", 2);
    if (name === "t" && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    if (name === "v1") {
      const bytes = fromHex(value);
      if (bytes) signatures.push(bytes);
    }
  }
  if (timestamp === undefined || signatures.length === 0) {
    return { valid: false, reason: "malformed signature header" };
  }
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) {
    return { valid: false, reason: "timestamp outside the tolerance" };
  }
  const key = await hmacKey(secret, "verify");
  const signed = encoder.encode(`${timestamp}.${body}`);
  for (const signature of signatures) {
    // verify() compares in constant time; a plain string compare would leak timing.
    if (await crypto.subtle.verify("HMAC", key, signature, signed)) return { valid: true };
  }
  return { valid: false, reason: "no signature matches" };
}

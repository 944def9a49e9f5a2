/** Unguessable identifiers from the runtime's CSPRNG (Web Crypto: Workers, Node, Deno, Bun). */

function randomHex(bytes: number): string {
  const buffer = crypto.getRandomValues(new Uint8Array(bytes));
  let hex = "";
  for (const byte of buffer) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/** A new owner token: 128 random bits, 32 hex characters. */
export function newOwnerToken(): string {
  return randomHex(16);
}

/** A new operation id (96 random bits): names one mutating call and all its re-sends. */
export function newOperationId(): string {
  return randomHex(12);
}

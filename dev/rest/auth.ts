/** Bearer-token check, in constant time, from the Authorization header or the `_token` query. */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

export const AUTH_ERROR_MESSAGE = "WRONGPASS invalid or missing auth token";

/** The token the request presents, if any. */
export function presentedToken(headers: IncomingHttpHeaders, url: URL): string | undefined {
  const header = headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match?.[1];
  }
  return url.searchParams.get("_token") ?? undefined;
}

function digest(value: string): Buffer {
  // Hashing first makes both sides the same length, so the comparison leaks nothing about length.
  return createHash("sha256").update(value, "utf8").digest();
}

export function createTokenCheck(
  expectedToken: string,
): (presented: string | undefined) => boolean {
  const expected = digest(expectedToken);
  return (presented) => presented !== undefined && timingSafeEqual(digest(presented), expected);
}

/** The middleware's own answers: RFC 9457 problem details, and Retry-After from a holder's pttl. */

/** Whole seconds until a holder's lease ends, at least 1 (Retry-After has no fractions). */
export function retryAfterSeconds(holderTtlMs: number | null): number {
  if (holderTtlMs === null || holderTtlMs <= 0) return 1;
  return Math.max(1, Math.ceil(holderTtlMs / 1000));
}

/** An `application/problem+json` response. */
export function problem(
  status: number,
  title: string,
  detail: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify({ type: "about:blank", title, status, detail }), {
    status,
    headers: { "content-type": "application/problem+json", ...headers },
  });
}

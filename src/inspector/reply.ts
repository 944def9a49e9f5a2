/**
 * What the read scripts answer, made fit to show: their JSON decoded, their numbers read, and
 * owner tokens digested (whoever knows one may release its holds, so none leaves the server).
 */

/** First 12 hex digits of SHA-256: the owner shown without its token. */
export async function digest(text: string): Promise<string> {
  const bytes = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  let hex = "";
  for (const byte of new Uint8Array(bytes).subarray(0, 6))
    hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/** A queue member `<owner> <operation id>` (src/hold/queue/lua.ts) split in two. */
export function splitMember(member: string): { owner: string; operationId: string } {
  const space = member.lastIndexOf(" ");
  return space < 0
    ? { owner: member, operationId: "" }
    : { owner: member.slice(0, space), operationId: member.slice(space + 1) };
}

/** The owner token a member starts with (owner tokens have no spaces: src/validate.ts). */
export function ownerOf(member: string): string {
  const space = member.indexOf(" ");
  return space < 0 ? member : member.slice(0, space);
}

/** cjson writes an empty Lua table as `{}`: that is an empty list here. */
export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function numberOrNull(value: unknown): number | null {
  if (value === "" || value === false || value === null || value === undefined) return null;
  const number = Number(value);
  return Number.isFinite(number) ? number : null;
}

/** ms from `now` until `at` (server times), never below 0. */
export function msUntil(at: unknown, now: number): number {
  return Math.max(0, Math.round(Number(at) - now));
}

/** A read script's JSON object (with the server time `now`), or an Error naming `what`. */
export function decodeState(
  reply: unknown,
  what: string,
): Record<string, unknown> & { now: number } {
  // @upstash/redis parses a JSON reply itself; another RedisLike may hand over the text.
  const value: unknown = typeof reply === "string" ? JSON.parse(reply) : reply;
  if (typeof value !== "object" || value === null || !("now" in value)) {
    throw new Error(`the ${what} read returned something that is not its state`);
  }
  return { ...(value as Record<string, unknown>), now: Number(value.now) };
}

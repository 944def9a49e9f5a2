/**
 * Recognises a script in the requests a client sends: by its EVAL source or its EVALSHA SHA-1,
 * as sent with or without Upstash's key-locking flag (which changes both; see
 * src/transport/call.ts).
 */
import type { Script } from "../../src/transport/call.js";

export type SentScriptMatcher = (
  source: string | null | undefined,
  sha: string | null | undefined,
) => boolean;

export async function sentScript(script: Script): Promise<SentScriptMatcher> {
  const variants = [script, script.keyLocking];
  const sources = new Set(variants.map((variant) => variant.source));
  const shas = new Set(await Promise.all(variants.map((variant) => variant.sha1())));
  return (source, sha) =>
    (typeof source === "string" && sources.has(source)) ||
    (typeof sha === "string" && shas.has(sha));
}

/** The `#!lua flags=...` first line of a Redis 7 script. */

/** Flags Redis 7.0 accepts in a script shebang. */
const KNOWN_FLAGS = new Set([
  "no-writes",
  "allow-oom",
  "allow-stale",
  "no-cluster",
  "allow-cross-slot-keys",
]);

export interface ScriptFlags {
  /** True when the script had a shebang (no EVAL compatibility mode). */
  readonly shebang: boolean;
  readonly noWrites: boolean;
}

export type ShebangResult =
  | { readonly ok: true; readonly flags: ScriptFlags; readonly code: string }
  | { readonly ok: false; readonly error: string };

/**
 * Parses the shebang (if any). On success `code` is the script with the shebang line blanked
 * but its newline kept, so error line numbers match what the user wrote.
 */
export function parseShebang(body: string): ShebangResult {
  if (!body.startsWith("#!"))
    return { ok: true, flags: { shebang: false, noWrites: false }, code: body };
  const end = body.indexOf("\n");
  if (end < 0) return { ok: false, error: "ERR Invalid script shebang" };
  const parts = body
    .slice(0, end)
    .split(/[ \t\r\v\f]+/)
    .filter((part) => part !== "");
  if (parts[0] !== "#!lua") {
    return { ok: false, error: `ERR Unexpected engine in script shebang: ${parts[0] ?? ""}` };
  }
  let noWrites = false;
  for (const part of parts.slice(1)) {
    if (!part.startsWith("flags="))
      return { ok: false, error: `ERR Unknown lua shebang option: ${part}` };
    const list = part.slice("flags=".length);
    if (list === "") continue;
    for (const flag of list.split(",")) {
      if (!KNOWN_FLAGS.has(flag))
        return { ok: false, error: `ERR Unexpected flag in script shebang: ${flag}` };
      if (flag === "no-writes") noWrites = true;
    }
  }
  return { ok: true, flags: { shebang: true, noWrites }, code: body.slice(end) };
}

/**
 * Writes the connection variables into a `.dev.vars` file (dotenv syntax, read by `wrangler dev`),
 * replacing earlier values of the same variables and keeping every other line.
 */
import { readFile, writeFile } from "node:fs/promises";

/** Sets `vars` in the dotenv file at `path`, creating it when missing. */
export async function writeDevVars(
  path: string,
  vars: Readonly<Record<string, string>>,
): Promise<void> {
  let previous = "";
  try {
    previous = await readFile(path, "utf8");
  } catch (error) {
    if (!(error instanceof Error && "code" in error && error.code === "ENOENT")) throw error;
  }
  const names = new Set(Object.keys(vars));
  const kept = previous
    .split(/\r?\n/)
    .filter((line) => !names.has(/^\s*(?:export\s+)?([\w.-]+)\s*=/.exec(line)?.[1] ?? ""));
  while (kept.length > 0 && kept[kept.length - 1] === "") kept.pop();
  const written = Object.entries(vars).map(([name, value]) => `${name}=${JSON.stringify(value)}`);
  await writeFile(path, `${[...kept, ...written].join("\n")}\n`, { mode: 0o600 });
}

/** The variables of the dotenv file at `path` (values unquoted), or none when it is missing. */
export async function readDevVars(path: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ENOENT") return {};
    throw error;
  }
  const vars: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([\w.-]+)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match?.[1]) continue;
    const raw = match[2] ?? "";
    let value = raw;
    if (raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2) {
      try {
        value = JSON.parse(raw) as string;
      } catch {
        value = raw.slice(1, -1);
      }
    } else if (raw.startsWith("'") && raw.endsWith("'") && raw.length >= 2) {
      value = raw.slice(1, -1);
    }
    vars[match[1]] = value;
  }
  return vars;
}

/**
 * The token an earlier `edgelock dev` wrote into the dotenv file at `path`, to serve again: a
 * restart then keeps a running `wrangler dev` (which read the file at its start) working. Only
 * when the file's URL is a loopback one, so that a real Upstash token kept there is never taken
 * (and printed) as the local server's.
 */
export async function previousDevToken(path: string): Promise<string | undefined> {
  const vars = await readDevVars(path);
  const token = vars.UPSTASH_REDIS_REST_TOKEN;
  const url = vars.UPSTASH_REDIS_REST_URL;
  if (token === undefined || token === "" || /\s/.test(token) || url === undefined)
    return undefined;
  try {
    const host = new URL(url).hostname;
    return ["127.0.0.1", "localhost", "[::1]", "::1"].includes(host) ? token : undefined;
  } catch {
    return undefined;
  }
}

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

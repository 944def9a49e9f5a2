/**
 * `edgelock inspect`: the inspector against any database. `--json` and `--table` print one
 * snapshot; otherwise a local page is served on loopback (the token stays in this process, the
 * page calls this process's API) and its URL printed. `edgelock inspect waits` reads the recent
 * waits from a running inspector (they live in the process that waits, not in Redis).
 */
import { spawn } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import type { InspectedWaits, InspectorSnapshot } from "../../src/inspector/types.js";
import { inspectorFor } from "./client.js";
import { serveFetch } from "./node-fetch.js";
import { formatTable, formatWaits } from "./table.js";

export const INSPECT_HELP = `edgelock inspect — see the locks edgelock keeps in a database

Usage: edgelock inspect [options]
       edgelock inspect waits --url INSPECTOR_URL [--json] [--steps]

Options:
  --url URL           the REST URL (default: $UPSTASH_REDIS_REST_URL)
  --token T           the REST token (default: $UPSTASH_REDIS_REST_TOKEN; the variable keeps it
                      out of your shell history and the process list). A read-only token gives
                      a read-only view: it may not SCAN, so name the locks with --name
  --prefix P          key prefix of the locks (default edgelock)
  --name N            a lock to read whether or not SCAN finds it (repeatable)
  --json              print one snapshot as JSON and exit
  --table             print one snapshot as a table and exit
  --cursor C          with --json/--table: continue the key walk from this SCAN cursor
  --port N            port of the local page (default 0: any free port)
  --no-open           do not try to open the page in a browser
  --scan-count N      SCAN's COUNT hint (default 1000)
  --max-scan-calls N  SCAN calls per refresh at most (default 10)
  --max-locks N       active locks read per refresh at most, one command each (default 50)
  -h, --help          show this help

Every refresh costs commands, which Upstash bills: 1 SCAN per ~scan-count keys (at most
max-scan-calls) and 1 per lock read. The page refreshes only while it is visible.

"waits": the recent waits a running inspector shows (inspector() given recentWaits, see
docs/inspector.md#recent-waits); they are kept in the process that waits, so no Redis command:
  --url URL           the inspector's page URL (https://app.example/_edgelock/)
  --json              print the answer of its api/waits as JSON
  --steps             print each wait's steps after the table (the sleep of each and why)
  $EDGELOCK_INSPECTOR_AUTHORIZATION, if set, is sent as the Authorization header (for the
  inspector's own authentication; a variable keeps it out of the process list)
`;

export interface InspectIo {
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly stopSignal?: Promise<unknown>;
  /** Called with the page's URL once it is served (tests use it). */
  readonly onReady?: (pageUrl: string) => void;
}

const OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  prefix: { type: "string" },
  name: { type: "string", multiple: true },
  json: { type: "boolean" },
  table: { type: "boolean" },
  cursor: { type: "string" },
  port: { type: "string" },
  "no-open": { type: "boolean" },
  "scan-count": { type: "string" },
  "max-scan-calls": { type: "string" },
  "max-locks": { type: "string" },
} as const;

export class InspectUsageError extends Error {
  override readonly name = "UsageError";
}

function count(text: string | undefined, what: string, max: number): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new InspectUsageError(`--${what} must be an integer from 1 to ${max}`);
  }
  return value;
}

function openInBrowser(url: string): void {
  const [command, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["cmd", ["/c", "start", "", url]]
        : ["xdg-open", [url]];
  try {
    const child = spawn(command, args, { stdio: "ignore", detached: true });
    child.on("error", () => undefined);
    child.unref();
  } catch {
    // Best effort: the URL is printed.
  }
}

const WAITS_OPTIONS = {
  url: { type: "string" },
  json: { type: "boolean" },
  steps: { type: "boolean" },
} as const;

/** `edgelock inspect waits`: a running inspector's `api/waits`, as a table or JSON. */
async function runInspectWaits(args: readonly string[], io: InspectIo): Promise<number> {
  let values: ReturnType<typeof parseArgs<{ options: typeof WAITS_OPTIONS }>>["values"];
  try {
    values = parseArgs({ args: [...args], options: WAITS_OPTIONS, strict: true }).values;
  } catch (error) {
    throw new InspectUsageError(error instanceof Error ? error.message : String(error));
  }
  if (!values.url) throw new InspectUsageError("no inspector URL: --url");
  if (values.json && values.steps) throw new InspectUsageError("--json has the steps already");
  // The page's URL ends in "/": "api/waits" resolves beside it.
  const page = values.url.endsWith("/") ? values.url : `${values.url}/`;
  const authorization = io.env?.EDGELOCK_INSPECTOR_AUTHORIZATION;
  const response = await fetch(new URL("api/waits", page), {
    headers: {
      accept: "application/json",
      ...(authorization ? { authorization } : {}),
    },
  });
  const body = (await response.json().catch(() => ({ error: response.statusText }))) as
    | InspectedWaits
    | { error: string };
  if (!response.ok || "error" in body) {
    const error = "error" in body ? body.error : response.statusText;
    io.err(`edgelock inspect waits: ${response.status} ${error}`);
    return 1;
  }
  if (values.json) {
    io.out(JSON.stringify(body, null, 2));
    return 0;
  }
  if (!body.recording) {
    io.err(
      "edgelock inspect waits: this inspector records no waits: give inspector() a recorder, " +
        "recentWaits: recordRecentWaits(client) (docs/inspector.md#recent-waits)",
    );
    return 1;
  }
  io.out(formatWaits(body, values.steps === true));
  return 0;
}

export async function runInspect(args: readonly string[], io: InspectIo): Promise<number> {
  if (args[0] === "waits") return runInspectWaits(args.slice(1), io);
  let values: ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>["values"];
  try {
    values = parseArgs({ args: [...args], options: OPTIONS, strict: true }).values;
  } catch (error) {
    throw new InspectUsageError(error instanceof Error ? error.message : String(error));
  }
  const env = io.env ?? {};
  const url = values.url ?? env.UPSTASH_REDIS_REST_URL;
  const token = values.token ?? env.UPSTASH_REDIS_REST_TOKEN;
  if (!url) throw new InspectUsageError("no REST URL: --url or UPSTASH_REDIS_REST_URL");
  if (!token) throw new InspectUsageError("no REST token: --token or UPSTASH_REDIS_REST_TOKEN");
  if (values.json && values.table) throw new InspectUsageError("use --json or --table, not both");
  const scanCount = count(values["scan-count"], "scan-count", 100_000);
  const maxScanCalls = count(values["max-scan-calls"], "max-scan-calls", 1000);
  const maxLocks = count(values["max-locks"], "max-locks", 10_000);
  const handler = inspectorFor({
    url,
    token,
    ...(values.prefix === undefined ? {} : { prefix: values.prefix }),
    ...(values.name === undefined ? {} : { names: values.name }),
    ...(scanCount === undefined ? {} : { scanCount }),
    ...(maxScanCalls === undefined ? {} : { maxScanCalls }),
    ...(maxLocks === undefined ? {} : { maxLocks }),
  });

  if (values.json || values.table) {
    const query = new URLSearchParams();
    if (values.cursor !== undefined) query.set("cursor", values.cursor);
    const response = await handler(new Request(`http://127.0.0.1/_edgelock/api/snapshot?${query}`));
    const body = (await response.json()) as InspectorSnapshot | { error: string };
    if ("error" in body) {
      io.err(`edgelock inspect: ${body.error}`);
      return 1;
    }
    io.out(values.json ? JSON.stringify(body, null, 2) : formatTable(body));
    return 0;
  }

  const port = count(values.port, "port", 65535) ?? 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      serveFetch(handler, request, response, Buffer.concat(chunks)).catch(() => {
        if (!response.headersSent) response.writeHead(500);
        response.end();
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const pageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/_edgelock/`;
  io.out(`edgelock inspector: ${pageUrl}`);
  io.out("(served on loopback only; the token stays in this process; Ctrl-C stops it)");
  if (!values["no-open"] && env.CI !== "true") openInBrowser(pageUrl);
  io.onReady?.(pageUrl);
  try {
    await (io.stopSignal ?? waitForSignal());
  } finally {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
  return 0;
}

function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}

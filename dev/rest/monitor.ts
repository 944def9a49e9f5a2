/**
 * `/monitor` as Upstash serves it (redis/features/restapi.mdx): server-sent events, `data: "OK"`
 * first, then one Redis MONITOR line per command, e.g.
 * `data: 1721284005.242090 [0 127.0.0.1:53122] "GET" "k"`. The lines come from the REST layer,
 * so the commands a Lua script runs are not shown (Redis would show them as `[0 lua]`).
 */
import type http from "node:http";
import type { Command, CommandArg } from "../backend.js";

/** Redis's MONITOR quoting (sdscatrepr): printable ASCII as is, `"` and `\` escaped, else \xHH. */
function quote(arg: CommandArg): string {
  const bytes = typeof arg === "string" ? Buffer.from(arg, "utf8") : arg;
  let out = '"';
  for (const byte of bytes) {
    if (byte === 0x22 || byte === 0x5c) out += `\\${String.fromCharCode(byte)}`;
    else if (byte === 0x0a) out += "\\n";
    else if (byte === 0x0d) out += "\\r";
    else if (byte === 0x09) out += "\\t";
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += `\\x${byte.toString(16).padStart(2, "0")}`;
  }
  return `${out}"`;
}

export class MonitorHub {
  private readonly listeners = new Set<(line: string) => void>();

  get active(): boolean {
    return this.listeners.size > 0;
  }

  /** Sends the commands a request ran to every open `/monitor` stream. */
  publish(commands: readonly Command[], client: string): void {
    if (this.listeners.size === 0) return;
    const now = Date.now();
    const stamp = `${Math.floor(now / 1000)}.${String((now % 1000) * 1000).padStart(6, "0")}`;
    for (const command of commands) {
      const line = `${stamp} [0 ${client}] ${command.map(quote).join(" ")}`;
      for (const listener of this.listeners) listener(line);
    }
  }

  /** Streams until the client disconnects. */
  stream(response: http.ServerResponse, syncToken: string): void {
    response.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "upstash-sync-token": syncToken,
    });
    response.write('data: "OK"\n\n');
    const listener = (line: string) => response.write(`data: ${line}\n\n`);
    this.listeners.add(listener);
    response.on("close", () => this.listeners.delete(listener));
  }
}

/** Parses `redis://[user:password@]host:port[/db]` into connection settings. */

export interface RedisConnectionSettings {
  readonly host: string;
  readonly port: number;
  /** ACL user name; when absent, AUTH is sent with the password only. */
  readonly username?: string;
  readonly password?: string;
  /** Database index selected on connect (SELECT); 0 is Redis's default. */
  readonly db: number;
  /** `rediss://`: connect over TLS. */
  readonly tls: boolean;
}

const DEFAULT_PORT = 6379;

/** Throws an Error with a message that never contains the password. */
export function parseRedisUrl(url: string): RedisConnectionSettings {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error("invalid Redis URL: expected redis://[user:password@]host:port[/db]");
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    throw new Error(
      `unsupported Redis URL scheme "${parsed.protocol}" (use redis:// or rediss://)`,
    );
  }
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (host === "") throw new Error("invalid Redis URL: missing host");

  const port = parsed.port === "" ? DEFAULT_PORT : Number(parsed.port);
  const dbText = parsed.pathname.replace(/^\//, "");
  if (dbText !== "" && !/^\d+$/.test(dbText)) {
    throw new Error(`invalid Redis URL: database "${dbText}" is not a number`);
  }
  const username = parsed.username === "" ? undefined : decodeURIComponent(parsed.username);
  const password = parsed.password === "" ? undefined : decodeURIComponent(parsed.password);
  return {
    host,
    port,
    ...(username === undefined ? {} : { username }),
    ...(password === undefined ? {} : { password }),
    db: dbText === "" ? 0 : Number(dbText),
    tls: parsed.protocol === "rediss:",
  };
}

/** `host:port` for logs and descriptions (never includes credentials). */
export function describeAddress(settings: RedisConnectionSettings): string {
  const host = settings.host.includes(":") ? `[${settings.host}]` : settings.host;
  return `${host}:${settings.port}`;
}

/** Helpers for talking to a dev server: the real @upstash/redis client, or raw HTTP. */
import { Redis, type RedisConfigNodejs } from "@upstash/redis";
import type { DevServer } from "../../dev/index.js";

let keyCounter = 0;

/** A key no other test uses, so tests sharing one server never collide. */
export function uniqueKey(name = "k"): string {
  keyCounter += 1;
  return `${name}:${process.pid}:${Date.now().toString(36)}:${keyCounter}`;
}

/** `@upstash/redis` on its defaults (auto-pipelining, base64 responses), unless overridden. */
export function upstash(server: DevServer, options: Partial<RedisConfigNodejs> = {}): Redis {
  return new Redis({ url: server.url, token: server.token, enableTelemetry: false, ...options });
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The body parsed as JSON (throws if it is not JSON: every response should be). */
  json(): unknown;
}

export interface RawRequestOptions {
  readonly method?: string;
  /** A JSON value (serialized here), or a string/bytes sent as is. */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** Default true: send `Authorization: Bearer <token>`. */
  readonly auth?: boolean;
}

/** One HTTP request to the server, as a hand-written client would send it. */
export async function rawRequest(
  server: DevServer,
  path: string,
  options: RawRequestOptions = {},
): Promise<RawResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.auth !== false) headers.authorization = `Bearer ${server.token}`;
  let body: string | Uint8Array<ArrayBuffer> | undefined;
  if (typeof options.body === "string") body = options.body;
  else if (options.body instanceof Uint8Array) body = new Uint8Array(options.body);
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  const response = await fetch(`${server.url}${path}`, {
    method: options.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    json: () => JSON.parse(text) as unknown,
  };
}

export const base64 = (value: string | Uint8Array) => Buffer.from(value).toString("base64");

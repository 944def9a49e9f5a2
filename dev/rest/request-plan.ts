/** Turns a routed HTTP request (path, query, body) into the Redis commands to run. */
import type { Command } from "../backend.js";
import { RequestShapeError, toCommand, toCommandList } from "./arguments.js";
import { JsonSyntaxError, parseJson } from "./json.js";
import type { Route } from "./routes.js";

export type RequestPlan =
  | { readonly kind: "single"; readonly command: Command }
  | { readonly kind: "pipeline"; readonly commands: readonly Command[] }
  | { readonly kind: "multi-exec"; readonly commands: readonly Command[] };

function parseBodyJson(body: Buffer) {
  const text = body.toString("utf8");
  if (text.trim() === "") throw new RequestShapeError("empty body: send a JSON array");
  try {
    return parseJson(text);
  } catch (error) {
    if (error instanceof JsonSyntaxError) {
      throw new RequestShapeError(`body is not valid JSON (${error.message})`);
    }
    throw error;
  }
}

/**
 * Path-style: `/set/foo/bar` → `SET foo bar`. A POST/PUT body is appended raw (any bytes) as the
 * next argument, then query parameters as `name value` pairs (`?EX=100` → `EX 100`; a parameter
 * without a value adds just its name), as Upstash documents.
 */
function pathCommand(segments: readonly string[], query: URLSearchParams, body: Buffer): Command {
  const command: Array<string | Uint8Array> = [...segments];
  if (body.byteLength > 0) command.push(new Uint8Array(body));
  for (const [name, value] of query) {
    if (name === "_token") continue;
    command.push(name);
    if (value !== "") command.push(value);
  }
  return command;
}

export function planRequest(
  route: Exclude<Route, { kind: "unknown" | "monitor" | "stats" | "inspector" }>,
  body: Buffer,
): RequestPlan {
  switch (route.kind) {
    case "command":
      return { kind: "single", command: toCommand(parseBodyJson(body)) };
    case "pipeline":
      return { kind: "pipeline", commands: toCommandList(parseBodyJson(body)) };
    case "multi-exec":
      return { kind: "multi-exec", commands: toCommandList(parseBodyJson(body)) };
    case "path":
      return { kind: "single", command: pathCommand(route.segments, route.query, body) };
  }
}

export function planCommands(plan: RequestPlan): readonly Command[] {
  return plan.kind === "single" ? [plan.command] : plan.commands;
}

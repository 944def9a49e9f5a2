/**
 * Upstash's `#!lua flags=allow-key-locking` on a server that does not know the flag. The flag is
 * taken out of the shebang (Redis 7 refuses unknown flags) and the rule it carries — every key a
 * `redis.call`/`redis.pcall` touches must be one of the script's KEYS — is enforced by Lua put in
 * front of the script's own code, on its second line, so line numbers in errors stay the user's.
 * The same rewrite serves the real Redis and the embedded engine, so both answer alike.
 */
import { createHash } from "node:crypto";
import { luaKeySpecText } from "./key-specs.js";
import { DYNAMIC_KEY_PREFIX, upstashErrors } from "./settings.js";

export const KEY_LOCKING_FLAG = "allow-key-locking";

const luaString = (value: string) => JSON.stringify(value);

/**
 * Shadows `redis` for the rest of the chunk with a table whose call/pcall check the key arguments
 * first. An undeclared key: `redis.call` raises the error, `redis.pcall` returns it, as Redis does
 * for any failing command. Written without line breaks: it shares the script's second line.
 */
function keyCheckPrologue(): string {
  const [uncheckedBefore, uncheckedAfter] = upstashErrors
    .uncheckedCommand("\u0000")
    .split("\u0000");
  return [
    "local redis = (function(real, declared_list, spec_text)",
    "local declared = {} for i = 1, #declared_list do declared[declared_list[i]] = true end",
    "local lower, fmt, specs = string.lower, string.format, {}",
    // Looked up in the spec string on first use: building a table of every command each run costs.
    "local function spec(name) local s = specs[name] if s ~= nil then return s end",
    'if name:find("[^%w_]") then return false end',
    'local at = spec_text:find(" " .. name .. ":", 1, true)',
    'local found = at and spec_text:match("^[^ ]*", at + #name + 2)',
    "if found == nil then specs[name] = false return false end",
    's = {} for part in found:gmatch("[^:]+") do s[#s + 1] = tonumber(part) or part end',
    "specs[name] = s return s end",
    "local function undeclared(argv, p) local v = argv[p + 1] if v == nil then return nil end",
    'if type(v) == "number" then v = fmt("%.17g", v) else v = tostring(v) end',
    "if declared[v] then return nil end return v end",
    "local function denied(...)",
    'local n = select("#", ...) local argv = {...}',
    'if type(argv[1]) ~= "string" then return nil end',
    "local name = lower(argv[1]) local s = spec(name)",
    `if not s then return ${luaString(uncheckedBefore ?? "")} .. name .. ${luaString(uncheckedAfter ?? "")} end`,
    "local bad = nil",
    'if s[1] == "r" then local last = s[3] if last < 0 then last = n + last end',
    "for p = s[2], math.min(last, n - 1), s[4] do bad = bad or undeclared(argv, p) end",
    'elseif s[1] == "n" then for p = 1, s[3] do bad = bad or undeclared(argv, p) end',
    "local count = tonumber(argv[s[2] + 1]) if count then",
    "for p = s[2] + 1, math.min(s[2] + count, n - 1) do bad = bad or undeclared(argv, p) end end",
    'elseif s[1] == "s" then local at = nil',
    'for p = 1, n - 1 do local v = argv[p + 1] if at == nil and type(v) == "string" and lower(v) == "streams" then at = p end end',
    "if at then for p = at + 1, at + math.floor((n - 1 - at) / 2) do bad = bad or undeclared(argv, p) end end",
    "end",
    `if bad then return ${luaString(DYNAMIC_KEY_PREFIX)} .. bad end return nil end`,
    "local proxy = {}",
    "proxy.call = function(...) local e = denied(...) if e then error(real.error_reply(e)) end return real.call(...) end",
    "proxy.pcall = function(...) local e = denied(...) if e then return real.error_reply(e) end return real.pcall(...) end",
    "return setmetatable(proxy, {__index = real})",
    `end)(redis, KEYS, ${luaString(luaKeySpecText())});`,
  ].join(" ");
}

let prologue: string | undefined;

export function sha1hex(body: string): string {
  return createHash("sha1").update(body, "utf8").digest("hex");
}

/**
 * When `body`'s shebang carries `allow-key-locking`: the script to send instead (flag removed,
 * key check in front). Otherwise undefined: the script goes to the backend unchanged.
 */
export function rewriteKeyLockingScript(body: string): string | undefined {
  if (!body.startsWith("#!")) return undefined;
  const end = body.indexOf("\n");
  if (end < 0) return undefined;
  const parts = body
    .slice(0, end)
    .split(/[ \t\r\v\f]+/)
    .filter((part) => part !== "");
  if (parts[0] !== "#!lua") return undefined;
  let flagged = false;
  const kept = parts.slice(1).flatMap((part) => {
    if (!part.startsWith("flags=")) return [part];
    const flags = part.slice("flags=".length).split(",");
    const others = flags.filter((flag) => flag !== KEY_LOCKING_FLAG);
    if (others.length === flags.length) return [part];
    flagged = true;
    return others.length === 0 || (others.length === 1 && others[0] === "")
      ? []
      : [`flags=${others.join(",")}`];
  });
  if (!flagged) return undefined;
  prologue ??= keyCheckPrologue();
  return `${["#!lua", ...kept].join(" ")}\n${prologue} ${body.slice(end + 1)}`;
}

/** Redis 7 appends where a failing redis.call was; for the dynamic-key error, Upstash's text alone. */
const SCRIPT_ERROR_SUFFIX = / script: [0-9a-f]{40}, on @user_(?:script|function):\d+\.$/;

export function isDynamicKeyError(message: string): boolean {
  return message.startsWith(DYNAMIC_KEY_PREFIX);
}

/**
 * An error reply of a rewritten script, as the client should see it: the SHA Redis names is the
 * client's (not the rewritten text's), and the dynamic-key error is Upstash's documented text.
 */
export function clientErrorText(message: string, backendSha: string, clientSha: string): string {
  const renamed = message.split(backendSha).join(clientSha);
  return isDynamicKeyError(renamed) ? renamed.replace(SCRIPT_ERROR_SUFFIX, "") : renamed;
}

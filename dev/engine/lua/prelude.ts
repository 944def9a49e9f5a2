/**
 * Lua source run once per Lua state, with the real global table. It builds the environment that
 * user scripts see (a read-only sandbox shaped like Redis 7's) and returns the internals the JS
 * side needs. Arguments: the JS-implemented functions (redis.call, redis.pcall, helpers), the
 * cjson module, the kill sentinel, and `cfn`, which wraps a Lua function in a C function (see
 * LuaRuntime.trampoline) so that helpers which raise errors report the script's line even when
 * the script tail-calls them.
 */
export const PRELUDE = String.raw`
local rcall, rpcall, jshelper, cjson, KILLED, cfn = ...

local type, tostring, tonumber, select, error = type, tostring, tonumber, select, error
local next, pairs, ipairs, rawget, rawset, rawequal = next, pairs, ipairs, rawget, rawset, rawequal
local setmetatable, getmetatable, pcall, xpcall, load = setmetatable, getmetatable, pcall, xpcall, load
local string, math, table, coroutine, debug = string, math, table, coroutine, debug
local sformat, sgmatch, mtype, mfloor, mceil = string.format, string.gmatch, math.type, math.floor, math.ceil
local tpack, tunpack = table.pack, table.unpack

-- Lua 5.1 prints every number with "%.14g": 10/2 is "5", not 5.4's "5.0".
local function tostring51(v)
  if mtype(v) then return (sformat("%.14g", v)) end
  return tostring(v)
end

-- Lua 5.1 holds every number as a double. Numbers parsed from text beyond 2^53 (where a double
-- is no longer exact anyway) become floats here too, so that arithmetic on them rounds like
-- Redis instead of wrapping around at 2^63 as 5.4 integers do.
local TWO53 = 9007199254740992
local function tonumber51(...)
  local n = tonumber(...)
  if mtype(n) == "integer" and (n > TWO53 or n < -TWO53) then return n + 0.0 end
  -- "-0" is the double -0 in 5.1 (Redis stores -0 * 1 as "-0"), the integer 0 in 5.4.
  if n == 0 and mtype(n) == "integer" and type((...)) == "string" and string.find((...), "^%s*%-") then
    return -0.0
  end
  return n
end

-- Lua 5.4 implements string-to-number coercion in arithmetic as string metamethods; redo them
-- with tonumber51. A zero integer divisor in % gives nan (5.1) instead of raising.
local function string_arith(op)
  return function(a, b)
    local x, y = tonumber51(a), tonumber51(b)
    if x == nil or y == nil then
      error("attempt to perform arithmetic on a " .. type(x == nil and a or b) .. " value", 2)
    end
    return op(x, y)
  end
end

-- Lua 5.1's string.format truncates floats for integer conversions and prints them like
-- tostring for %s; 5.4 raises "number has no integer representation" and prints "5.0".
local intconv = { d = true, i = true, c = true, o = true, u = true, x = true, X = true }
local function format51(fmt, ...)
  local n = select("#", ...)
  local hasfloat = false
  for i = 1, n do
    if mtype((select(i, ...))) == "float" then hasfloat = true break end
  end
  if not hasfloat or type(fmt) ~= "string" then return sformat(fmt, ...) end
  local args = tpack(...)
  local i = 0
  for conv in sgmatch(fmt, "%%[-+ #0]*%d*%.?%d*([%a%%])") do
    if conv ~= "%" then
      i = i + 1
      local a = args[i]
      if mtype(a) == "float" then
        if intconv[conv] and a == a and a ~= 1/0 and a ~= -1/0 then
          local t = a >= 0 and mfloor(a) or mceil(a)
          args[i] = math.tointeger(t) or t
        elseif conv == "s" then
          args[i] = tostring51(a)
        end
      end
    end
  end
  return sformat(fmt, tunpack(args, 1, args.n))
end

-- Errors from the real string.format name our local and our chunk; restate them as the
-- script's own call (level 3: the script, above the C trampoline).
local function format_checked(fmt, ...)
  local ok, res = pcall(format51, fmt, ...)
  if ok then return res end
  if type(res) == "string" then
    res = (res:gsub("^prelude:%d+: ", ""):gsub("'sformat'", "'format'"))
  end
  error(res, 3)
end

local function readonly_error() error("Attempt to modify a readonly table", 2) end

-- proxy -> the table it exposes; used by rawget/rawset and to spot protected tables.
local protected = {}

local function protect(t)
  local proxy = setmetatable({}, {
    __index = t,
    __newindex = readonly_error,
    __pairs = function() return next, t, nil end,
    __len = function() return #t end,
    __metatable = false,
  })
  protected[proxy] = t
  return proxy
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- Standard libraries, with the Lua 5.1 names Redis scripts may still use.
local lstring = copy(string)
lstring.format = cfn(format_checked)
lstring.gfind = string.gmatch

local lmath = copy(math)
lmath.pow = function(x, y) return x ^ y end
lmath.mod = math.fmod
lmath.atan2 = function(y, x) return math.atan(y, x) end
lmath.log10 = function(x) return math.log(x, 10) end
lmath.ldexp = function(m, e) return m * 2.0 ^ e end
lmath.frexp = function(x)
  if x == 0 or x ~= x or x == 1/0 or x == -1/0 then return x, 0 end
  local e = mfloor(math.log(math.abs(x), 2)) + 1
  local m = x / 2.0 ^ e
  if math.abs(m) >= 1 then m, e = m / 2, e + 1 elseif math.abs(m) < 0.5 then m, e = m * 2, e - 1 end
  return m, e
end
lmath.cosh = function(x) return (math.exp(x) + math.exp(-x)) / 2 end
lmath.sinh = function(x) return (math.exp(x) - math.exp(-x)) / 2 end
lmath.tanh = function(x)
  if x > 20 then return 1.0 elseif x < -20 then return -1.0 end
  local a, b = math.exp(x), math.exp(-x)
  return (a - b) / (a + b)
end

local ltable = copy(table)
ltable.getn = function(t) return #t end
ltable.maxn = function(t)
  local max = 0
  for k in pairs(t) do if type(k) == "number" and k > max then max = k end end
  return max
end
ltable.setn = function() error("'setn' is obsolete", 2) end
ltable.foreach = function(t, f)
  for k, v in pairs(t) do local r = f(k, v) if r ~= nil then return r end end
end
ltable.foreachi = function(t, f)
  for i = 1, #t do local r = f(i, t[i]) if r ~= nil then return r end end
end

-- The string metatable is shared with every string: point method calls at the 5.1-flavoured
-- copy, and hide the metatable so scripts cannot reach the real library through it.
local smeta = getmetatable("")
smeta.__index = lstring
smeta.__add = string_arith(function(x, y) return x + y end)
smeta.__sub = string_arith(function(x, y) return x - y end)
smeta.__mul = string_arith(function(x, y) return x * y end)
smeta.__div = string_arith(function(x, y) return x / y end)
smeta.__pow = string_arith(function(x, y) return x ^ y end)
smeta.__mod = string_arith(function(x, y)
  if y == 0 and mtype(y) == "integer" then return (x + 0.0) % y end
  return x % y
end)
smeta.__unm = string_arith(function(x) return -x end)

-- Errors raised by the kill hook must not be swallowed by the script's own pcall/xpcall.
local function pcall_result(ok, ...)
  if ok then return true, ... end
  local e = ...
  if e == KILLED then error(e, 0) end
  -- Redis 7 turns error tables raised by redis.call into their message for pcall callers.
  if type(e) == "table" then
    local msg = rawget(e, "err")
    if type(msg) == "string" or type(msg) == "number" then return false, msg end
  end
  return false, e
end
local function pcall51(f, ...) return pcall_result(pcall(f, ...)) end

local function xpcall_result(ok, ...)
  if not ok and (...) == KILLED then error(KILLED, 0) end
  return ok, ...
end
local function xpcall51(f, handler, ...)
  return xpcall_result(xpcall(f, function(e)
    if e == KILLED then return e end
    return handler(e)
  end, ...))
end

local lcoroutine = copy(coroutine)
local co_resume = coroutine.resume
lcoroutine.resume = function(co, ...) return xpcall_result(co_resume(co, ...)) end

-- Redis's bit library (LuaBitOp): 32-bit signed results.
local function tobit(x)
  x = tonumber(x)
  local n = math.tointeger(x) or mfloor(x + 0.5)
  n = math.tointeger(n) or 0
  n = n & 0xffffffff
  if n >= 0x80000000 then n = n - 0x100000000 end
  return n
end
local bit = {
  tobit = tobit,
  bnot = function(x) return tobit(~tobit(x)) end,
  band = function(x, ...) local r = tobit(x) for i = 1, select("#", ...) do r = r & tobit((select(i, ...))) end return tobit(r) end,
  bor = function(x, ...) local r = tobit(x) for i = 1, select("#", ...) do r = r | tobit((select(i, ...))) end return tobit(r) end,
  bxor = function(x, ...) local r = tobit(x) for i = 1, select("#", ...) do r = r ~ tobit((select(i, ...))) end return tobit(r) end,
  lshift = function(x, n) return tobit((tobit(x) & 0xffffffff) << (tobit(n) & 31)) end,
  rshift = function(x, n) return tobit((tobit(x) & 0xffffffff) >> (tobit(n) & 31)) end,
  arshift = function(x, n) return tobit(tobit(x) >> (tobit(n) & 31) | (tobit(x) < 0 and ~(0xffffffff >> (tobit(n) & 31)) or 0)) end,
  rol = function(x, n) local v, s = tobit(x) & 0xffffffff, tobit(n) & 31 return tobit((v << s) | (v >> (32 - s))) end,
  ror = function(x, n) local v, s = tobit(x) & 0xffffffff, tobit(n) & 31 return tobit((v >> s) | (v << (32 - s))) end,
  bswap = function(x)
    local v = tobit(x) & 0xffffffff
    return tobit(((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >> 8) & 0xff00) | (v >> 24))
  end,
  tohex = function(x, n)
    n = n or 8
    local upper = n < 0
    if upper then n = -n end
    local s = sformat(upper and "%08X" or "%08x", tobit(x) & 0xffffffff)
    return s:sub(-n)
  end,
}

-- The redis table.
local function one_string_arg(...)
  return select("#", ...) == 1 and type((...)) == "string"
end

local function trim_crlf(s)
  return (s:gsub("^[\r\n]+", ""):gsub("[\r\n]+$", ""))
end

local redis = {
  call = rcall,
  pcall = rpcall,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
  REDIS_VERSION = "7.0.15",
  REDIS_VERSION_NUM = 0x07000f,
}

-- "-CODE message" keeps its code; anything else gets the generic ERR code (luaPushErrorBuff).
function redis.error_reply(...)
  if not one_string_arg(...) then return { err = "ERR wrong number or type of arguments" } end
  local e = ...
  if e:sub(1, 1) ~= "-" then e = "-" .. e end
  local space = e:find(" ", 1, true)
  local code, msg
  if space then code, msg = e:sub(2, space - 1), e:sub(space + 1) else code, msg = "ERR", e:sub(2) end
  return { err = code .. " " .. trim_crlf(msg) }
end

function redis.status_reply(...)
  if not one_string_arg(...) then return { err = "ERR wrong number or type of arguments" } end
  return { ok = (...) }
end

redis.sha1hex = cfn(function(...)
  if select("#", ...) ~= 1 then error({ err = "ERR wrong number of arguments" }) end
  local s = ...
  if mtype(s) then s = tostring51(s) elseif type(s) ~= "string" then s = "" end
  return jshelper("sha1hex", s)
end)

redis.log = cfn(function(...)
  local n = select("#", ...)
  if n < 2 then error({ err = "ERR redis.log() requires two arguments or more." }) end
  local level = tonumber((...))
  if level == nil then error({ err = "ERR First argument must be a number (log level)." }) end
  if level < 0 or level > 3 then error({ err = "ERR Invalid debug level." }) end
end)

redis.setresp = cfn(function(...)
  if select("#", ...) ~= 1 then error({ err = "ERR redis.setresp() requires one argument." }) end
  local v = tonumber((...))
  if v ~= 2 and v ~= 3 then error({ err = "ERR RESP version must be 2 or 3." }) end
  if v == 3 then error({ err = "ERR RESP3 is not supported by the embedded engine" }) end
end)

redis.set_repl = cfn(function(...)
  if select("#", ...) ~= 1 then error({ err = "ERR redis.set_repl() requires one argument." }) end
  local v = tonumber((...))
  if v == nil or v < 0 or v > 3 then
    error({ err = "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE." })
  end
end)

function redis.replicate_commands() return true end
function redis.breakpoint() return false end
function redis.debug() end

redis.acl_check_cmd = cfn(function(...)
  if select("#", ...) < 1 then error({ err = "ERR Please specify at least one argument for this redis lib call" }) end
  if not jshelper("exists", tostring51((...))) then
    error({ err = "ERR Invalid command passed to redis.acl_check_cmd()" })
  end
  return true
end)

-- The sandbox. Scripts see _G = sandbox, an empty proxy over 'base' whose misses raise the
-- Redis 7 error, and whose writes are refused, so nothing leaks from one script to the next.
local base = {}
local sandbox = setmetatable({}, {
  __index = base,
  __newindex = readonly_error,
  __pairs = function() return next, base, nil end,
  __metatable = false,
})
protected[sandbox] = base
setmetatable(base, {
  __index = function(_, k)
    error("Script attempted to access nonexistent global variable '" .. tostring51(k) .. "'", 2)
  end,
  __metatable = false,
})

local function load51(chunk, chunkname)
  if type(chunk) == "string" and chunkname == nil then chunkname = chunk end
  return load(chunk, chunkname, "t", sandbox)
end

base._G = sandbox
base._VERSION = _VERSION
base.assert = assert
base.collectgarbage = collectgarbage
-- Lua 5.1 adds the position to numeric messages too (5.4 only to strings). Levels count from
-- the script: 1 is the function calling error, which is 3 frames up from here (trampoline).
base.error = cfn(function(msg, level)
  if level == nil then level = 1 end
  if mtype(msg) then msg = tostring51(msg) end
  if level > 0 then level = level + 2 end
  error(msg, level)
end)
base.gcinfo = function() return mfloor(collectgarbage("count")) end
base.getmetatable = getmetatable
base.ipairs = ipairs
base.load = load51
base.loadstring = load51
base.next = next
base.pairs = pairs
base.pcall = pcall51
base.rawequal = rawequal
base.rawget = function(t, k)
  local target = protected[t]
  if target ~= nil then return rawget(target, k) end
  return rawget(t, k)
end
base.rawset = cfn(function(t, k, v)
  if protected[t] ~= nil then error("Attempt to modify a readonly table", 0) end
  return rawset(t, k, v)
end)
base.select = select
base.setmetatable = setmetatable
base.tonumber = tonumber51
base.tostring = tostring51
base.type = type
base.unpack = tunpack
base.xpcall = xpcall51
base.string = protect(lstring)
base.math = protect(lmath)
base.table = protect(ltable)
base.coroutine = protect(lcoroutine)
base.bit = protect(bit)
local lcjson = copy(cjson)
lcjson.encode = cfn(cjson.encode)
lcjson.decode = cfn(cjson.decode)
base.cjson = protect(lcjson)
base.redis = protect(redis)
smeta.__metatable = base.string

-- Lua 5.4 words runtime errors as "attempt to index a nil value (local 't')"; Lua 5.1 (Redis)
-- says "attempt to index local 't' (a nil value)". Constants carry no name in 5.1.
local function lua51_message(msg)
  return (msg:gsub("attempt to (.-) a (%w+) value %((%w+) '(.-)'%)", function(verb, vtype, kind, name)
    if kind == "constant" then return "attempt to " .. verb .. " a " .. vtype .. " value" end
    return "attempt to " .. verb .. " " .. kind .. " '" .. name .. "' (a " .. vtype .. " value)"
  end))
end

-- Turns any error into the table Redis's __redis__err__handler produces: {err=..., source, line}
-- pointing at the innermost frame of the user's script.
local getinfo = debug.getinfo
local function handler(e)
  if e == KILLED then return { err = rawget(KILLED, "err") } end
  local out
  if type(e) == "table" then
    local msg = rawget(e, "err")
    if type(msg) == "number" then msg = tostring51(msg) end
    out = { err = type(msg) == "string" and msg or "ERR unknown error" }
  else
    out = { err = "ERR " .. lua51_message(tostring51(e)) }
  end
  for level = 2, 200 do
    local info = getinfo(level, "Sl")
    if info == nil then break end
    if info.source == "@user_script" or info.source == "@user_function" then
      out.source = info.source
      out.line = info.currentline
      break
    end
  end
  return out
end

local function compile(src)
  return load(src, "@user_script", "t", sandbox)
end

local function run(fn, keys, argv)
  rawset(base, "KEYS", keys)
  rawset(base, "ARGV", argv)
  return fn()
end

-- FUNCTION LOAD: a library's code runs once, in its own environment whose 'redis' is the library
-- API (register_function, log) while loading and the full API afterwards, when FCALL runs them.
local FUNCTION_FLAGS = {
  ["no-writes"] = true, ["allow-oom"] = true, ["allow-stale"] = true,
  ["no-cluster"] = true, ["allow-cross-slot-keys"] = true,
}

local function load_library(src)
  local registered, order = {}, {}
  local loading = true
  local function register(...)
    local n = select("#", ...)
    local name, callback, flags, description
    if n == 1 and type((...)) == "table" then
      local t = ...
      for k in pairs(t) do
        if k ~= "function_name" and k ~= "callback" and k ~= "flags" and k ~= "description" then
          error({ err = "ERR unknown argument given to redis.register_function" })
        end
      end
      name, callback, flags = rawget(t, "function_name"), rawget(t, "callback"), rawget(t, "flags")
      description = rawget(t, "description")
      -- lua_isstring: a number is a string too.
      if description ~= nil and type(description) ~= "string" and type(description) ~= "number" then
        error({ err = "ERR description argument given to redis.register_function must be a string" })
      end
    elseif n == 2 then
      name, callback = ...
    else
      error({ err = "ERR wrong number of arguments to redis.register_function" })
    end
    if type(name) ~= "string" then
      error({ err = "ERR function_name argument given to redis.register_function must be a string" })
    end
    if type(callback) ~= "function" then
      error({ err = "ERR callback argument given to redis.register_function must be a function" })
    end
    if not name:match("^[%w_]+$") then
      error({ err = "ERR Function names can only contain letters, numbers, or underscores(_) and must be at least one character long" })
    end
    if registered[name] then error({ err = "ERR Function already exists in the library" }) end
    local list = {}
    if flags ~= nil then
      if type(flags) ~= "table" then
        error({ err = "ERR flags argument to redis.register_function must be a table representing function flags" })
      end
      for _, f in ipairs(flags) do
        if not FUNCTION_FLAGS[f] then error({ err = "ERR unknown flag given" }) end
        list[#list + 1] = f
      end
    end
    registered[name] = true
    order[#order + 1] = {
      name = name, fn = callback, flags = table.concat(list, ","),
      description = description ~= nil and tostring(description) or nil,
    }
  end
  local libapi = protect({
    register_function = cfn(register), log = redis.log,
    LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  })
  local env = setmetatable({}, {
    __index = function(_, k)
      if k == "redis" and loading then return libapi end
      return sandbox[k]
    end,
    __newindex = readonly_error,
    __metatable = false,
  })
  local chunk, message = load(src, "@user_function", "t", env)
  if chunk == nil then return nil, message end
  chunk()
  loading = false
  return order
end

local function call_function(fn, keys, argv)
  return fn(keys, argv)
end

return {
  handler = handler, compile = compile, run = run, killed = KILLED,
  load_library = load_library, call_function = call_function,
}
`;

/**
 * A Lua implementation of the parts of lua-cjson (2.1) that Redis scripts use: encode/decode with
 * the same number formatting (`%.14g`), escaping (`/` → `\/`), sparse-array rule and null
 * sentinel. Called with the null sentinel (a NULL light userdata) as its only argument.
 * encode/decode raise their errors at level 3 because the prelude exposes them through a C
 * trampoline: level 1 is the function itself, 2 the trampoline, 3 the calling script.
 */
export const CJSON = String.raw`
local null = ...
local type, select, error, pairs, tostring, tonumber = type, select, error, pairs, tostring, tonumber
local sformat, sbyte, schar, ssub, sfind = string.format, string.byte, string.char, string.sub, string.find
local mtype, mfloor, concat = math.type, math.floor, table.concat

local cfg = { sparse_convert = false, sparse_ratio = 2, sparse_safe = 10, max_depth = 1000,
              decode_max_depth = 1000, precision = 14 }

local escapes = {
  ['"'] = '\\"', ['\\'] = '\\\\', ['/'] = '\\/',
  ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t',
}
for i = 0, 31 do
  local c = schar(i)
  if escapes[c] == nil then escapes[c] = sformat("\\u%04x", i) end
end
escapes[schar(127)] = "\\u007f"

local function fail(msg) error(msg, 0) end

local function encode_number(n)
  if n ~= n or n == 1/0 or n == -1/0 then fail("Cannot serialise number: must not be NaN or Inf") end
  return sformat("%." .. cfg.precision .. "g", n)
end

local function encode_string(s)
  return '"' .. s:gsub('[%c"\\/]', escapes) .. '"'
end

-- Returns the array length, or -1 when the table must be encoded as an object.
local function array_length(t)
  local max, items = 0, 0
  for k in pairs(t) do
    if mtype(k) and k >= 1 and mfloor(k) == k then
      if k > max then max = k end
      items = items + 1
    else
      return -1
    end
  end
  if cfg.sparse_ratio > 0 and max > items * cfg.sparse_ratio and max > cfg.sparse_safe then
    if not cfg.sparse_convert then fail("Cannot serialise table: excessively sparse array") end
    return -1
  end
  return max
end

local encode_value

local function encode_table(t, depth, out)
  depth = depth + 1
  if depth > cfg.max_depth then fail("Cannot serialise, excessive nesting (" .. depth .. ")") end
  local len = array_length(t)
  if len > 0 then
    out[#out + 1] = "["
    for i = 1, len do
      if i > 1 then out[#out + 1] = "," end
      encode_value(t[i], depth, out)
    end
    out[#out + 1] = "]"
  else
    out[#out + 1] = "{"
    local first = true
    for k, v in pairs(t) do
      if not first then out[#out + 1] = "," end
      first = false
      if type(k) == "string" then
        out[#out + 1] = encode_string(k)
      elseif mtype(k) then
        out[#out + 1] = '"' .. encode_number(k) .. '"'
      else
        fail("Cannot serialise " .. type(k) .. ": table key must be a number or string")
      end
      out[#out + 1] = ":"
      encode_value(v, depth, out)
    end
    out[#out + 1] = "}"
  end
end

function encode_value(v, depth, out)
  local t = type(v)
  if t == "string" then out[#out + 1] = encode_string(v)
  elseif t == "number" then out[#out + 1] = encode_number(v)
  elseif t == "boolean" then out[#out + 1] = v and "true" or "false"
  elseif t == "nil" or v == null then out[#out + 1] = "null"
  elseif t == "table" then encode_table(v, depth, out)
  else fail("Cannot serialise " .. t .. ": type not supported") end
end

local cjson = { null = null, _NAME = "cjson", _VERSION = "2.1.0" }

function cjson.encode(...)
  if select("#", ...) ~= 1 then error("bad argument #1 to 'encode' (expected 1 argument)", 3) end
  local out = {}
  local ok, err = pcall(encode_value, (...), 0, out)
  if not ok then error(err, 3) end
  return concat(out)
end

-- Decoding: a small recursive-descent parser over bytes.
local function utf8_encode(cp)
  if cp < 0x80 then return schar(cp)
  elseif cp < 0x800 then return schar(0xC0 | (cp >> 6), 0x80 | (cp & 0x3F))
  elseif cp < 0x10000 then return schar(0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F))
  end
  return schar(0xF0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3F), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F))
end

local simple_escapes = { ['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f', n = '\n', r = '\r', t = '\t' }

local function decode(str)
  local pos = 1
  local depth = 0

  local function skip()
    pos = sfind(str, "[^ \t\n\r]", pos) or (#str + 1)
  end

  local function expected(what)
    local found
    if pos > #str then found = "T_END" else found = "invalid token" end
    fail("Expected " .. what .. " but found " .. found .. " at character " .. pos)
  end

  local value

  local function parse_string()
    local parts = {}
    pos = pos + 1
    while true do
      local s, e = sfind(str, '["\\%c]', pos)
      if s == nil then fail("Expected value but found unexpected end of string at character " .. pos) end
      parts[#parts + 1] = ssub(str, pos, s - 1)
      local c = ssub(str, s, s)
      if c == '"' then pos = s + 1 break end
      if c ~= "\\" then
        -- lua-cjson accepts raw control bytes except the string terminators.
        parts[#parts + 1] = c
        pos = s + 1
      else
        local esc = ssub(str, s + 1, s + 1)
        if simple_escapes[esc] then
          parts[#parts + 1] = simple_escapes[esc]
          pos = s + 2
        elseif esc == "u" then
          local hex = ssub(str, s + 2, s + 5)
          local cp = #hex == 4 and hex:match("^%x%x%x%x$") and tonumber(hex, 16)
          if not cp then fail("Expected value but found invalid unicode escape code at character " .. s) end
          pos = s + 6
          if cp >= 0xD800 and cp <= 0xDBFF then
            local low = ssub(str, pos, pos + 5):match("^\\u(%x%x%x%x)$")
            local lo = low and tonumber(low, 16)
            if not lo or lo < 0xDC00 or lo > 0xDFFF then
              fail("Expected value but found invalid unicode escape code at character " .. s)
            end
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
            pos = pos + 6
          elseif cp >= 0xDC00 and cp <= 0xDFFF then
            fail("Expected value but found invalid unicode escape code at character " .. s)
          end
          parts[#parts + 1] = utf8_encode(cp)
        else
          fail("Expected value but found invalid escape code at character " .. s)
        end
      end
    end
    return concat(parts)
  end

  local function nest()
    depth = depth + 1
    if depth > cfg.decode_max_depth then
      fail("Found too many nested data structures (" .. depth .. ") at character " .. pos)
    end
  end

  local function parse_array()
    nest()
    local t, n = {}, 0
    pos = pos + 1
    skip()
    if ssub(str, pos, pos) == "]" then pos = pos + 1 depth = depth - 1 return t end
    while true do
      n = n + 1
      t[n] = value()
      skip()
      local c = ssub(str, pos, pos)
      if c == "]" then pos = pos + 1 break end
      if c ~= "," then expected("comma or array end") end
      pos = pos + 1
    end
    depth = depth - 1
    return t
  end

  local function parse_object()
    nest()
    local t = {}
    pos = pos + 1
    skip()
    if ssub(str, pos, pos) == "}" then pos = pos + 1 depth = depth - 1 return t end
    while true do
      skip()
      if ssub(str, pos, pos) ~= '"' then expected("object key string") end
      local k = parse_string()
      skip()
      if ssub(str, pos, pos) ~= ":" then expected("colon") end
      pos = pos + 1
      t[k] = value()
      skip()
      local c = ssub(str, pos, pos)
      if c == "}" then pos = pos + 1 break end
      if c ~= "," then expected("comma or object end") end
      pos = pos + 1
    end
    depth = depth - 1
    return t
  end

  function value()
    skip()
    local c = ssub(str, pos, pos)
    if c == "{" then return parse_object()
    elseif c == "[" then return parse_array()
    elseif c == '"' then return parse_string()
    elseif ssub(str, pos, pos + 3) == "true" then pos = pos + 4 return true
    elseif ssub(str, pos, pos + 4) == "false" then pos = pos + 5 return false
    elseif ssub(str, pos, pos + 3) == "null" then pos = pos + 4 return null
    end
    local num = str:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if num and num ~= "" and num ~= "-" then
      local n = tonumber(num)
      if n ~= nil then
        pos = pos + #num
        -- Keep integers exact (5.1 would hold them as doubles, which prints the same).
        if mtype(n) == "integer" and (n > 9007199254740992 or n < -9007199254740992) then n = n + 0.0 end
        return n
      end
    end
    expected("value")
  end

  local result = value()
  skip()
  if pos <= #str then fail("Expected the end but found invalid token at character " .. pos) end
  return result
end

function cjson.decode(...)
  if select("#", ...) ~= 1 then error("bad argument #1 to 'decode' (expected 1 argument)", 3) end
  local s = ...
  if mtype(s) then s = sformat("%.14g", s) end
  if type(s) ~= "string" then error("bad argument #1 to 'decode' (string expected, got " .. type(s) .. ")", 3) end
  local ok, result = pcall(decode, s)
  if not ok then error(result, 3) end
  return result
end

function cjson.encode_sparse_array(convert, ratio, safe)
  if convert ~= nil then cfg.sparse_convert = convert and true or false end
  if ratio ~= nil then cfg.sparse_ratio = ratio end
  if safe ~= nil then cfg.sparse_safe = safe end
  return cfg.sparse_convert, cfg.sparse_ratio, cfg.sparse_safe
end
function cjson.encode_max_depth(n) if n ~= nil then cfg.max_depth = n end return cfg.max_depth end
function cjson.decode_max_depth(n) if n ~= nil then cfg.decode_max_depth = n end return cfg.decode_max_depth end
function cjson.encode_number_precision(n)
  if n ~= nil then
    if mtype(n) == nil or n < 1 or n > 14 then error("bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)", 2) end
    cfg.precision = mfloor(n)
  end
  return cfg.precision
end
function cjson.encode_keep_buffer() return true end
function cjson.encode_invalid_numbers() return false end
function cjson.decode_invalid_numbers() return true end
function cjson.new() return cjson end

return cjson
`;

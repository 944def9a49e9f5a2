/** Differential coverage of FUNCTION LOAD/LIST/DELETE/FLUSH/STATS and FCALL/FCALL_RO. */
import { describeDifferential } from "./differential-harness.js";

const LIB = `#!lua name=mylib
redis.register_function('echo_keys', function(keys, args) return {keys[1], args[1], #keys, #args} end)
redis.register_function{
  function_name = 'getter',
  callback = function(keys) return redis.call('get', keys[1]) end,
  flags = { 'no-writes' },
}
redis.register_function('setter', function(keys, args) return redis.call('set', keys[1], args[1]) end)
redis.register_function('boom', function() error('bad thing') end)`;

const OTHER = `#!lua name=other
redis.register_function('other_fn', function() return 42 end)`;

describeDifferential("functions", {
  "load, call and list": [
    ["function", "load", LIB],
    ["function", "load", LIB],
    ["function", "load", "REPLACE", LIB],
    ["fcall", "echo_keys", "2", "k1", "k2", "a1"],
    ["fcall", "setter", "1", "k", "v"],
    ["fcall", "getter", "1", "k"],
    ["fcall_ro", "getter", "1", "k"],
    ["fcall_ro", "setter", "1", "k", "v"],
    ["fcall", "nope", "0"],
    ["fcall", "getter", "2", "k"],
    ["fcall", "getter", "-1"],
    ["fcall", "getter", "x"],
    ["fcall", "boom", "0"],
    ["function", "load", OTHER],
    ["function", "list", "LIBRARYNAME", "oth*", "WITHCODE"],
    ["function", "list", "LIBRARYNAME"],
    ["function", "list", "FOO"],
    ["function", "stats"],
    ["fcall", "other_fn", "0"],
    ["function", "delete", "other"],
    ["function", "delete", "other"],
    ["fcall", "other_fn", "0"],
    ["function", "flush", "bad"],
    ["function", "flush"],
    ["fcall", "getter", "1", "k"],
    ["function", "list"],
    ["eval", "return redis.call('fcall', 'x', 0)", "0"],
  ],
  "load errors": [
    ["function", "load", "return 1"],
    ["function", "load", "#!lua\nreturn 1"],
    ["function", "load", "#!lua name=bad-name\nreturn 1"],
    ["function", "load", "#!lua name=x foo=bar\nreturn 1"],
    ["function", "load", "#!js name=x\nreturn 1"],
    ["function", "load", "#!lua name=empty\nlocal a = 1"],
    [
      "function",
      "load",
      "#!lua name=dup\nredis.register_function('f', function() end)\nredis.register_function('f', function() end)",
    ],
    [
      "function",
      "load",
      "#!lua name=a\nredis.register_function('shared', function() return 1 end)",
    ],
    [
      "function",
      "load",
      "#!lua name=b\nredis.register_function('shared', function() return 2 end)",
    ],
    ["fcall", "shared", "0"],
    ["function", "load", "BAD", "#!lua name=c\nredis.register_function('c', function() end)"],
    ["function", "load", "#!lua name=rt\nlocal x = nil; x.y = 1"],
    ["function", "nope"],
  ],
  "descriptions in FUNCTION LIST": [
    [
      "function",
      "load",
      `#!lua name=described
redis.register_function{function_name='echo', callback=function(keys, args) return args[1] end, description='Echoes its first argument'}
redis.register_function{function_name='numbered', callback=function() return 1 end, description=42}
redis.register_function{function_name='plain', callback=function() return 2 end}`,
    ],
    // Redis lists a library's functions in hash order.
    { unordered: ["function", "list", "LIBRARYNAME", "described"] },
    [
      "function",
      "load",
      "#!lua name=baddesc\nredis.register_function{function_name='f', callback=function() end, description={}}",
    ],
  ],
});

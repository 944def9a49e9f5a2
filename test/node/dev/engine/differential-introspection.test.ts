/** Differential coverage of OBJECT ENCODING for values built from scratch. */
import { describeDifferential } from "./differential-harness.js";

const longValue = "x".repeat(65);

describeDifferential("introspection", {
  "object encoding": [
    ["set", "int", "12345"],
    ["set", "neg", "-7"],
    ["set", "padded", "007"],
    ["set", "short", "hello"],
    ["set", "long", "y".repeat(45)],
    ["object", "encoding", "int"],
    ["object", "encoding", "neg"],
    ["object", "encoding", "padded"],
    ["object", "encoding", "short"],
    ["object", "encoding", "long"],
    ["hset", "h", "f", "v"],
    ["hset", "bigh", "f", longValue],
    ["object", "encoding", "h"],
    ["object", "encoding", "bigh"],
    ["rpush", "l", "a"],
    ["object", "encoding", "l"],
    ["sadd", "si", "1", "2"],
    ["sadd", "ss", "a", "b"],
    ["object", "encoding", "si"],
    ["object", "encoding", "ss"],
    ["zadd", "z", "1", "a"],
    ["zadd", "bigz", "1", longValue],
    ["object", "encoding", "z"],
    ["object", "encoding", "bigz"],
    ["xadd", "st", "1-0", "f", "v"],
    ["object", "encoding", "st"],
    ["object", "encoding", "missing"],
    ["object", "encoding"],
    ["object", "nope", "x"],
    ["memory", "usage", "missing"],
    ["memory", "usage", "int", "FOO"],
  ],
});

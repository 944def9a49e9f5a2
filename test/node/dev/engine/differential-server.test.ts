/**
 * Differential coverage of the commands whose normal reply depends on other clients or the clock:
 * PUBLISH and PUBSUB without subscribers, TIME's errors, and blocking pops when data is there
 * (they answer at once), when it is not (a short timeout answers nil) and on bad input.
 * Subscribers and long waits are tested over HTTP (pubsub.test.ts, blocking.test.ts).
 */
import { describeDifferential } from "./differential-harness.js";

describeDifferential("pub/sub, TIME and blocking pops", {
  "publish and pubsub without subscribers": [
    ["publish", "news", "hello"],
    ["publish", "news"],
    ["publish", "news", "a", "b"],
    ["pubsub", "channels"],
    ["pubsub", "channels", "n*"],
    ["pubsub", "numsub"],
    ["pubsub", "numsub", "news", "other"],
    ["pubsub", "numpat"],
    ["pubsub", "numpat", "extra"],
    ["pubsub", "nosuch"],
    ["pubsub"],
  ],
  "time refuses arguments": [["time", "extra"]],
  "blocking list pops with data answer at once": [
    ["rpush", "a", "1", "2", "3"],
    ["rpush", "b", "x"],
    ["blpop", "missing", "a", "b", "1"],
    ["brpop", "a", "1"],
    ["blmove", "a", "b", "LEFT", "RIGHT", "1"],
    ["lrange", "b", "0", "-1"],
    ["brpoplpush", "b", "a", "1"],
    ["lrange", "a", "0", "-1"],
    ["blmpop", "1", "2", "missing", "b", "LEFT", "COUNT", "5"],
    ["exists", "b"],
    ["blmpop", "1", "1", "a", "RIGHT"],
    // Timeouts Redis reads as a long double: hexadecimal, a trailing dot, a huge but valid value.
    ["rpush", "c", "1", "2", "3"],
    ["blpop", "c", "0x10"],
    ["blpop", "c", "5."],
    ["blpop", "c", "9.2e15"],
  ],
  "blocking sorted-set pops with data answer at once": [
    ["zadd", "z", "1", "one", "2", "two", "3", "three"],
    ["bzpopmin", "missing", "z", "1"],
    ["bzpopmax", "z", "1"],
    ["zrange", "z", "0", "-1", "WITHSCORES"],
  ],
  "blocking pops time out with nil": [
    ["blpop", "missing", "0.05"],
    ["brpop", "missing", "other", "0.05"],
    ["blmove", "missing", "dst", "LEFT", "LEFT", "0.05"],
    ["brpoplpush", "missing", "dst", "0.05"],
    ["blmpop", "0.05", "1", "missing", "LEFT"],
    ["bzpopmin", "missing", "0.05"],
    ["bzpopmax", "missing", "0.05"],
    ["exists", "dst"],
  ],
  "blocking pops refuse bad input": [
    ["blpop", "a", "soon"],
    ["blpop", "a", "-1"],
    ["blpop", "a"],
    // Seconds are a long double; × 1000 past the long long range is LLONG_MIN: "negative".
    ["brpop", "a", "1e400"],
    ["brpop", "a", "9.3e15"],
    ["brpop", "a", "inf"],
    ["brpop", "a", "-1e400"],
    ["brpop", "a", "1e4933"],
    ["brpop", "a", "nan"],
    ["brpop", "a", " 1"],
    ["bzpopmin", "z", "nan"],
    ["blmove", "a", "b", "UP", "LEFT", "1"],
    ["blmpop", "1", "0", "a", "LEFT"],
    ["blmpop", "1", "1", "a", "MIDDLE"],
    ["blmpop", "1", "1", "a", "LEFT", "COUNT", "0"],
    ["blmpop", "x", "1", "a", "LEFT"],
    ["set", "s", "v"],
    ["blpop", "s", "1"],
    ["bzpopmax", "s", "1"],
    ["blmove", "s", "b", "LEFT", "LEFT", "1"],
  ],
});

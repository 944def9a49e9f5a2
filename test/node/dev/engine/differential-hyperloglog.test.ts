/** Differential coverage of PFADD/PFCOUNT/PFMERGE: the engine's estimates must equal Redis's. */
import { describeDifferential } from "./differential-harness.js";

const letters = "abcdefghijklmnopqrstuvwxyz".split("");
const many = Array.from({ length: 3000 }, (_, i) => `element:${i}`);

describeDifferential("hyperloglog", {
  "pfadd, pfcount and pfmerge": [
    ["pfadd", "h", "a", "b", "c"],
    ["pfadd", "h", "a"],
    ["pfadd", "h"],
    ["pfadd", "empty"],
    ["pfadd", "empty"],
    ["pfcount", "h"],
    ["pfcount", "empty"],
    ["pfcount", "missing"],
    ["pfadd", "h2", "c", "d", ...letters],
    ["pfcount", "h2"],
    ["pfcount", "h", "h2", "missing"],
    ["pfmerge", "dst", "h", "h2"],
    ["pfcount", "dst"],
    ["pfmerge", "dst"],
    ["pfmerge", "fresh", "missing"],
    ["type", "fresh"],
    ["pfcount", "fresh"],
    ["expire", "h", "100"],
    ["pfadd", "h", "new"],
    ["ttl", "h"],
    ["set", "str", "plain"],
    ["pfadd", "str", "a"],
    ["pfcount", "str"],
    ["pfcount", "h", "str"],
    ["pfmerge", "str", "h"],
    ["pfmerge", "h", "str"],
    ["lpush", "l", "x"],
    ["pfadd", "l", "a"],
    ["pfcount", "l"],
    ["pfadd"],
  ],
  "large sketches estimate like Redis": [
    ["pfadd", "big", ...many],
    ["pfcount", "big"],
    ["pfadd", "big2", ...many.slice(1000), "x", "y\u00e9", "a longer element of many bytes"],
    ["pfcount", "big2"],
    ["pfcount", "big", "big2"],
    ["pfmerge", "both", "big", "big2"],
    ["pfcount", "both"],
    ["pfadd", "big", "element:7"],
  ],
});

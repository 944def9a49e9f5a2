import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { globMatch } from "../../../../dev/engine/glob.js";
import {
  addLongDouble,
  formatLongDoubleHuman,
  parseLongDouble,
} from "../../../../dev/engine/longdouble.js";
import {
  formatG,
  parseDouble,
  parseInt64,
  truncateToInt64,
} from "../../../../dev/engine/numbers.js";

describe("engine number helpers", () => {
  it("formatG matches C's %.17g", () => {
    const cases: [number, string][] = [
      [0.1, "0.10000000000000001"],
      [1.5, "1.5"],
      [5, "5"],
      [-0, "-0"],
      [1e20, "1e+20"],
      [1e16, "10000000000000000"],
      [1.2345678901234568e17, "1.2345678901234568e+17"],
      [1e-5, "1.0000000000000001e-05"],
      [0.0001, "0.0001"],
      [2 ** 53 + 2, "9007199254740994"],
      [Number.POSITIVE_INFINITY, "inf"],
      [Number.NEGATIVE_INFINITY, "-inf"],
      [107786896875601 + 0.125, "107786896875601.12"], // an exact tie: C rounds half to even
      [-(107786896875601 + 0.125), "-107786896875601.12"],
      [0.5, "0.5"],
    ];
    for (const [value, text] of cases) expect(formatG(value, 17), String(value)).toBe(text);
    expect(formatG(1 / 3, 14)).toBe("0.33333333333333");
    expect(formatG(2.5, 1)).toBe("2");
    expect(formatG(3.5, 1)).toBe("4");
    expect(formatG(0.125, 2)).toBe("0.12");
  });

  it("formatG(x, 17) always round-trips", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
        expect(Number(formatG(value, 17))).toBe(value);
      }),
    );
  });

  it("parseInt64 accepts exactly Redis's canonical integers", () => {
    for (const ok of ["0", "-1", "9223372036854775807", "-9223372036854775808"])
      expect(parseInt64(ok)).toBe(BigInt(ok));
    for (const bad of [
      "",
      "-",
      "+1",
      "01",
      "-0",
      " 1",
      "1 ",
      "1.0",
      "9223372036854775808",
      "0x1",
    ]) {
      expect(parseInt64(bad), bad).toBeNull();
    }
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (value) => {
        expect(parseInt64(value.toString())).toBe(value);
      }),
    );
  });

  it("parseDouble follows strtod plus Redis's checks", () => {
    expect(parseDouble("1.5")).toBe(1.5);
    expect(parseDouble(".5")).toBe(0.5);
    expect(parseDouble("5.")).toBe(5);
    expect(parseDouble("-inf")).toBe(Number.NEGATIVE_INFINITY);
    expect(parseDouble("+Infinity")).toBe(Number.POSITIVE_INFINITY);
    expect(parseDouble("0x10")).toBe(16);
    for (const bad of ["", " 1", "1 ", "nan", "1e400", "1e-400", "abc", "1,5"])
      expect(parseDouble(bad), bad).toBeNull();
  });

  it("truncateToInt64 mirrors (long long) on x86-64", () => {
    expect(truncateToInt64(3.99)).toBe(3n);
    expect(truncateToInt64(-2.5)).toBe(-2n);
    expect(truncateToInt64(1e30)).toBe(-(2n ** 63n));
    expect(truncateToInt64(Number.NaN)).toBe(-(2n ** 63n));
  });

  it("long double arithmetic prints like Redis's INCRBYFLOAT", () => {
    const sum = (...values: string[]) =>
      formatLongDoubleHuman(
        values.map((v) => parseLongDouble(v)!).reduce((a, b) => addLongDouble(a, b)),
      );
    expect(sum("10.5", "0.1")).toBe("10.6");
    expect(sum("5005.6")).toBe("5005.60000000000000009");
    expect(sum("1", "-1")).toBe("0");
    expect(sum("-0.00000000000000000001")).toBe("0");
    expect(sum("1e20")).toBe("100000000000000000000");
    expect(parseLongDouble("nan")).toBeNull();
    expect(parseLongDouble(" 1")).toBeNull();
    expect(parseLongDouble("1e5000")).toBeNull();
  });

  it("small integers survive long double round trips", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1e9, max: 1e9 }),
        fc.integer({ min: -1e9, max: 1e9 }),
        (a, b) => {
          const result = addLongDouble(parseLongDouble(String(a))!, parseLongDouble(String(b))!);
          expect(formatLongDoubleHuman(result)).toBe(String(a + b));
        },
      ),
    );
  });

  it("glob matching", () => {
    const cases: [string, string, boolean][] = [
      ["*", "", true],
      ["a*", "abc", true],
      ["a?c", "abc", true],
      ["a?c", "ac", false],
      ["[abc]x", "bx", true],
      ["[^abc]x", "bx", false],
      ["[a-c]x", "cx", true],
      ["[c-a]x", "bx", true],
      ["a\\*", "a*", true],
      ["a\\*", "ab", false],
      ["*b*", "aaabaaa", true],
      ["[abc", "a", true],
      ["h[\\]]", "h]", true],
    ];
    for (const [pattern, subject, expected] of cases) {
      expect(globMatch(pattern, subject), `${pattern} ~ ${subject}`).toBe(expected);
    }
  });
});

/** Number parsing and formatting with the exact rules Redis applies (not JS's looser ones). */

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

const INT64_TEXT = /^(?:0|-?[1-9][0-9]{0,18})$/;

/** Redis `string2ll`: no sign other than '-', no leading zeros or spaces, must fit in 64 bits. */
export function parseInt64(text: string): bigint | null {
  if (!INT64_TEXT.test(text)) return null;
  const value = BigInt(text);
  return value < INT64_MIN || value > INT64_MAX ? null : value;
}

/** True when `value` fits in a signed 64-bit integer. */
export function inInt64Range(value: bigint): boolean {
  return value >= INT64_MIN && value <= INT64_MAX;
}

const DECIMAL = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
const INFINITY_TEXT = /^([+-]?)(?:inf|infinity)$/i;
const HEX = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?[0-9]+))?$/;

/**
 * C `strtod` as Redis uses it for scores and float arguments: the whole string must parse, no
 * leading space, no NaN, and overflow (or underflow of a non-zero mantissa to zero) is an error.
 */
export function parseDouble(text: string): number | null {
  if (text.length === 0) return null;
  if (DECIMAL.test(text)) {
    const value = Number(text);
    if (!Number.isFinite(value)) return null;
    if (value === 0 && /[1-9]/.test(text.split(/[eE]/)[0] ?? "")) return null;
    return value;
  }
  const inf = INFINITY_TEXT.exec(text);
  if (inf) return inf[1] === "-" ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  const hex = HEX.exec(text);
  if (hex && ((hex[2] ?? "") !== "" || (hex[3] ?? "") !== "")) {
    const intPart = hex[2] ?? "";
    const fracPart = hex[3] ?? "";
    let value = 0;
    for (const digit of intPart + fracPart) value = value * 16 + Number.parseInt(digit, 16);
    value *= 2 ** (Number(hex[4] ?? "0") - 4 * fracPart.length);
    if (!Number.isFinite(value)) return null;
    return hex[1] === "-" ? -value : value;
  }
  return null;
}

/** C `printf("%.<precision>g")`, including glibc's round-half-to-even on exact ties. */
export function formatG(value: number, precision: number): string {
  if (Number.isNaN(value)) return isNegativeNaN(value) ? "-nan" : "nan";
  if (value === Number.POSITIVE_INFINITY) return "inf";
  if (value === Number.NEGATIVE_INFINITY) return "-inf";
  if (value === 0) return Object.is(value, -0) ? "-0" : "0";
  // Fast path: exact integers print as themselves whenever they fit the precision.
  if (Number.isSafeInteger(value) && Math.abs(value) < 10 ** precision) return String(value);
  const { digits, exp } = significantDigits(value, precision);
  const sign = value < 0 ? "-" : "";
  if (exp < -4 || exp >= precision) {
    const mantissa =
      digits.length > 1 ? `${digits[0]}.${digits.slice(1)}`.replace(/\.?0+$/, "") : digits;
    const abs = Math.abs(exp);
    return `${sign}${mantissa}e${exp < 0 ? "-" : "+"}${abs < 10 ? "0" : ""}${abs}`;
  }
  const fixed =
    exp >= 0
      ? `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`
      : `0.${"0".repeat(-exp - 1)}${digits}`;
  // %g drops trailing zeros and then a trailing point.
  return sign + fixed.replace(/0+$/, "").replace(/\.$/, "");
}

/** |value| rounded to `precision` significant digits: the digits and the decimal exponent of the first. */
function significantDigits(value: number, precision: number): { digits: string; exp: number } {
  const abs = Math.abs(value);
  // JS rounds ties away from zero; C rounds them to even. A tie is only possible when the value
  // printed with one more digit is exact and ends in 5, so only then do the exact computation.
  const probe = abs.toExponential(precision);
  const probeDigits = probe.slice(0, probe.indexOf("e")).replace(".", "");
  if (!probeDigits.endsWith("5")) {
    const rounded = abs.toExponential(precision - 1);
    const e = rounded.indexOf("e");
    return { digits: rounded.slice(0, e).replace(".", ""), exp: Number(rounded.slice(e + 1)) };
  }
  return roundHalfEven(exactDecimal(abs), precision);
}

/** The exact decimal expansion of a positive finite double: value = digits × 10^exp10. */
function exactDecimal(value: number): { digits: string; exp10: number } {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  let mantissa = bits & ((1n << 52n) - 1n);
  let exp2 = -1074;
  if (biased !== 0) {
    mantissa |= 1n << 52n;
    exp2 = biased - 1075;
  }
  if (exp2 >= 0) return { digits: (mantissa << BigInt(exp2)).toString(), exp10: 0 };
  // m / 2^k = m·5^k / 10^k
  return { digits: (mantissa * 5n ** BigInt(-exp2)).toString(), exp10: exp2 };
}

function roundHalfEven(
  exact: { digits: string; exp10: number },
  precision: number,
): { digits: string; exp: number } {
  const all = exact.digits.replace(/^0+/, "");
  let exp = all.length - 1 + exact.exp10;
  if (all.length <= precision) return { digits: all.padEnd(precision, "0"), exp };
  let kept = BigInt(all.slice(0, precision));
  const rest = all.slice(precision);
  const first = rest.charCodeAt(0) - 48;
  const tail = /[1-9]/.test(rest.slice(1));
  if (first > 5 || (first === 5 && (tail || kept % 2n === 1n))) kept += 1n;
  let digits = kept.toString();
  if (digits.length > precision) {
    digits = digits.slice(0, precision);
    exp += 1;
  }
  return { digits, exp };
}

function isNegativeNaN(value: number): boolean {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  return (view.getUint8(0) & 0x80) !== 0;
}

/** How Redis 7.0 replies with a double (ZSCORE, ZINCRBY, WITHSCORES): `%.17g`, `inf`, `-inf`. */
export function formatScore(value: number): string {
  return formatG(value, 17);
}

/**
 * `(long long)x` for a double, as Redis converts a Lua number reply. Out-of-range values and NaN
 * become INT64_MIN, which is what the x86-64 conversion instruction produces.
 */
export function truncateToInt64(value: number): bigint {
  if (Number.isNaN(value) || value >= 2 ** 63 || value < -(2 ** 63)) return INT64_MIN;
  return BigInt(Math.trunc(value));
}

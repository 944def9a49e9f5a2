/**
 * Just enough x87 80-bit `long double` arithmetic (64-bit significand, round-half-even) to give
 * INCRBYFLOAT and HINCRBYFLOAT Redis's exact output: Redis parses with strtold, adds in long
 * double and prints with "%.17Lf", which shows digits a double would not have (e.g. 5005.6 prints
 * as 5005.60000000000000009). Values are exact binary fractions held in bigints.
 */

export type LongDouble =
  | {
      readonly kind: "finite";
      readonly negative: boolean;
      readonly mantissa: bigint;
      readonly exp: number;
    }
  | { readonly kind: "inf"; readonly negative: boolean }
  | { readonly kind: "nan" };

const SIGNIFICAND_BITS = 64;
const MAX_EXP = 16383;
const MIN_EXP = -16382;
type Finite = Extract<LongDouble, { kind: "finite" }>;

const ZERO: Finite = { kind: "finite", negative: false, mantissa: 0n, exp: 0 };

function bitLength(value: bigint): number {
  return value === 0n ? 0 : value.toString(2).length;
}

/** Rounds the exact positive rational num/den to the nearest long double. */
function fromRational(negative: boolean, num: bigint, den: bigint): LongDouble {
  if (num === 0n) return { ...ZERO, negative };
  // Scale so the integer quotient has at least 66 bits: 64 kept, the rest decide the rounding.
  const shift = bitLength(num) - bitLength(den) - (SIGNIFICAND_BITS + 2);
  const scaledNum = shift < 0 ? num << BigInt(-shift) : num;
  const scaledDen = shift > 0 ? den << BigInt(shift) : den;
  const quotient = scaledNum / scaledDen;
  const sticky = quotient * scaledDen !== scaledNum;
  const extra = bitLength(quotient) - SIGNIFICAND_BITS;
  let mantissa = quotient >> BigInt(extra);
  const rest = quotient & ((1n << BigInt(extra)) - 1n);
  const half = 1n << BigInt(extra - 1);
  if (rest > half || (rest === half && (sticky || (mantissa & 1n) === 1n))) mantissa += 1n;
  let exp = shift + extra;
  if (mantissa === 1n << BigInt(SIGNIFICAND_BITS)) {
    mantissa >>= 1n;
    exp += 1;
  }
  const top = exp + SIGNIFICAND_BITS - 1;
  if (top > MAX_EXP) return { kind: "inf", negative };
  if (top < MIN_EXP) return { ...ZERO, negative };
  return { kind: "finite", negative, mantissa, exp };
}

const DECIMAL = /^([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?$/;
const HEX = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?[0-9]+))?$/;
const INFINITY_TEXT = /^([+-]?)(?:inf|infinity)$/i;

/**
 * strtold with Redis's string2ld checks: the whole text must parse, no leading space, no NaN,
 * no overflow to infinity and no underflow of a non-zero value to zero.
 */
export function parseLongDouble(text: string): LongDouble | null {
  if (text.length === 0 || text.length >= 5 * 1024) return null;
  const inf = INFINITY_TEXT.exec(text);
  if (inf) return { kind: "inf", negative: inf[1] === "-" };
  const hex = HEX.exec(text);
  if (hex) {
    const digits = (hex[2] ?? "") + (hex[3] ?? "");
    if (digits === "") return null;
    const exp2 = Number(hex[4] ?? "0") - 4 * (hex[3] ?? "").length;
    return checked(rationalFromPower(hex[1] === "-", BigInt(`0x${digits}`), 2n, exp2), digits);
  }
  const dec = DECIMAL.exec(text);
  if (!dec || ((dec[2] ?? "") === "" && (dec[3] ?? "") === "")) return null;
  const digits = (dec[2] ?? "") + (dec[3] ?? "");
  const exp10 = Number(dec[4] ?? "0") - (dec[3] ?? "").length;
  const significant = digits.replace(/^0+/, "");
  if (significant === "") return { ...ZERO, negative: dec[1] === "-" };
  // Decide gross overflow/underflow before building huge powers of ten.
  const magnitude = significant.length + exp10;
  if (magnitude > 4940) return null;
  if (magnitude < -4960) return null;
  return checked(rationalFromPower(dec[1] === "-", BigInt(significant), 10n, exp10), significant);
}

function rationalFromPower(
  negative: boolean,
  digits: bigint,
  base: bigint,
  exp: number,
): LongDouble {
  return exp >= 0
    ? fromRational(negative, digits * base ** BigInt(exp), 1n)
    : fromRational(negative, digits, base ** BigInt(-exp));
}

/** Overflow to inf or underflow of non-zero digits to zero is ERANGE, which Redis rejects. */
function checked(value: LongDouble, digits: string): LongDouble | null {
  if (value.kind === "inf") return null;
  if (value.kind === "finite" && value.mantissa === 0n && /[1-9a-fA-F]/.test(digits)) return null;
  return value;
}

export function addLongDouble(a: LongDouble, b: LongDouble): LongDouble {
  if (a.kind === "nan" || b.kind === "nan") return { kind: "nan" };
  if (a.kind === "inf" || b.kind === "inf") {
    if (a.kind === "inf" && b.kind === "inf" && a.negative !== b.negative) return { kind: "nan" };
    return a.kind === "inf" ? a : b;
  }
  const exp = Math.min(a.exp, b.exp);
  const signed = (x: typeof a): bigint =>
    (x.negative ? -1n : 1n) * (x.mantissa << BigInt(x.exp - exp));
  const sum = signed(a) + signed(b);
  if (sum === 0n) return a.negative && b.negative ? { ...ZERO, negative: true } : ZERO;
  const magnitude = sum < 0n ? -sum : sum;
  return exp >= 0
    ? fromRational(sum < 0n, magnitude << BigInt(exp), 1n)
    : fromRational(sum < 0n, magnitude, 1n << BigInt(-exp));
}

export function isFiniteLongDouble(value: LongDouble): boolean {
  return value.kind === "finite";
}

/** Redis's ld2string(..., LD_STR_HUMAN): "%.17Lf", trailing zeros (and a bare '.') removed, "-0" → "0". */
export function formatLongDoubleHuman(value: LongDouble): string {
  if (value.kind === "nan") return "nan";
  if (value.kind === "inf") return value.negative ? "-inf" : "inf";
  const scale = 10n ** 17n;
  let scaled: bigint;
  if (value.exp >= 0) {
    scaled = (value.mantissa << BigInt(value.exp)) * scale;
  } else {
    const num = value.mantissa * scale;
    const shift = BigInt(-value.exp);
    scaled = num >> shift;
    const rest = num - (scaled << shift);
    const half = 1n << (shift - 1n);
    if (rest > half || (rest === half && (scaled & 1n) === 1n)) scaled += 1n;
  }
  const digits = scaled.toString().padStart(18, "0");
  let text = `${value.negative ? "-" : ""}${digits.slice(0, -17)}.${digits.slice(-17)}`;
  text = text.replace(/0+$/, "").replace(/\.$/, "");
  return text === "-0" ? "0" : text;
}

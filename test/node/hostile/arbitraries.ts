/**
 * fast-check generators of hostile input for the public API. Each produces a `Case`: the value,
 * and whether the documented rules accept it (a model written from the README's Limits, not from
 * the code), so that a property can check "rejected exactly when invalid".
 */
import fc from "fast-check";
import { MAX_DURATION_MS, MAX_NAME_BYTES, MIN_LEASE_MS } from "../../../src/validate.js";

export interface Case<T = unknown> {
  readonly value: T;
  readonly valid: boolean;
}

const utf8 = new TextEncoder();
const char = (min: number, max: number) =>
  fc.integer({ min, max }).map((c) => String.fromCharCode(c));

/** Characters that have broken key schemes and scripts elsewhere. */
const NASTY = fc.constantFrom(
  "{",
  "}",
  "'",
  '"',
  "\\",
  "\n",
  "\0",
  ":",
  "*",
  "?",
  "[",
  "]",
  "--",
  "..",
  " ",
  "%s",
  "\u202e",
  "é",
  "😀",
  "\ud800",
  "\udfff",
);

/** Any code point, lone surrogates included, and the nasty ones above. */
const nameUnit = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: NASTY },
  { weight: 1, arbitrary: char(0xd800, 0xdfff) },
);

/** The documented rule: 1 to 1024 UTF-8 bytes, no braces, well-formed Unicode. */
export function isValidName(value: unknown): boolean {
  return (
    typeof value === "string" &&
    value.length > 0 &&
    utf8.encode(value).length <= MAX_NAME_BYTES &&
    !/[{}]/.test(value) &&
    !/\p{Cs}/u.test(value)
  );
}

/** A value that is not a string. */
export const notAString = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.bigInt(),
  fc.object(),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.constant(Symbol("name")),
  fc.constant(() => "name"),
);

/** Lock names: short and hostile, around the byte limit, huge, or not strings at all. */
export const nameCase: fc.Arbitrary<Case> = fc
  .oneof(
    { weight: 6, arbitrary: fc.string({ unit: nameUnit, minLength: 0, maxLength: 24 }) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.integer({ min: 1_015, max: 1_030 }), fc.constantFrom("a", "é", "😀", "{"))
        .map(([bytes, unit]) => unit.repeat(Math.ceil(bytes / utf8.encode(unit).length))),
    },
    { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 400, maxLength: 2_000 }) },
    { weight: 1, arbitrary: fc.constant("x".repeat(1_000_000)) },
    { weight: 2, arbitrary: notAString },
  )
  .map((value) => ({ value, valid: isValidName(value) }));

/** Numbers that are not durations, and some that are. */
export const numberLike = fc.oneof(
  fc.integer({ min: -1_000, max: 5_000 }),
  fc.integer({ min: MAX_DURATION_MS - 5, max: MAX_DURATION_MS + 5 }),
  fc.double({ min: -1e6, max: 1e6 }),
  fc.double(),
  fc.constantFrom(
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    -0,
    0.5,
    99.999,
    100.5,
    Number.MAX_SAFE_INTEGER,
    Number.MAX_VALUE,
    Number.EPSILON,
  ),
);

/** Durations in ms; valid when whole, within [min, MAX_DURATION_MS] (or Infinity if allowed). */
export function durationCase(min: number, allowInfinity = false): fc.Arbitrary<Case> {
  return fc
    .oneof(
      { weight: 5, arbitrary: numberLike },
      { weight: 1, arbitrary: fc.constantFrom("100", "1e3", "", " 100 ") },
      { weight: 1, arbitrary: notAString },
    )
    .map((value) => ({
      value,
      valid:
        typeof value === "number" &&
        ((allowInfinity && value === Number.POSITIVE_INFINITY) ||
          (Number.isInteger(value) && value >= min && value <= MAX_DURATION_MS)),
    }));
}

/** Whole numbers within [min, max] (counts, budgets). */
export function countCase(min: number, max: number): fc.Arbitrary<Case> {
  return fc
    .oneof(numberLike, fc.integer({ min: max - 3, max: max + 3 }), notAString)
    .map((value) => ({
      value,
      valid: typeof value === "number" && Number.isInteger(value) && value >= min && value <= max,
    }));
}

const printable = char(0x21, 0x7e);

/** Owner tokens: 16–256 printable ASCII characters without spaces. */
export const ownerCase: fc.Arbitrary<Case> = fc.oneof(
  fc
    .string({ unit: printable, minLength: 16, maxLength: 256 })
    .map((value) => ({ value, valid: true })),
  fc
    .oneof(
      fc.string({ unit: printable, maxLength: 15 }),
      fc.string({ unit: printable, minLength: 257, maxLength: 300 }),
      fc
        .tuple(
          fc.string({ unit: printable, minLength: 16, maxLength: 40 }),
          fc.constantFrom(" ", "é", "\n", "\0", "\u007f"),
        )
        .map(([token, bad]) => `${token}${bad}`),
      notAString,
    )
    .map((value) => ({ value, valid: false })),
);

/** An AbortSignal (valid when not yet aborted), or things that only look like one. */
export const signalCase: fc.Arbitrary<Case> = fc.oneof(
  fc.constant(null).map(() => ({ value: new AbortController().signal, valid: true })),
  fc
    .constantFrom<unknown>(null, "signal", 1, {}, { aborted: false, addEventListener() {} }, [])
    .map((value) => ({ value, valid: false })),
);

/** A value that is not an options object. */
const notAnObject = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.constant(() => ({})),
);

/** An options object built from optional known fields, maybe with an unknown key (a typo). */
function optionsCase(fields: Record<string, fc.Arbitrary<Case>>): fc.Arbitrary<Case> {
  const record = fc.record(
    Object.fromEntries(
      Object.entries(fields).map(([key, arbitrary]) => [
        key,
        fc.option(arbitrary, { nil: undefined }),
      ]),
    ) as Record<string, fc.Arbitrary<Case | undefined>>,
  );
  const typo = fc.option(
    fc.constantFrom("leaseMS", "wait_ms", "timeout", "__proto__x", "ownerId"),
    {
      nil: undefined,
    },
  );
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.tuple(record, typo).map(([picked, unknownKey]) => {
        const value: Record<string, unknown> = {};
        let valid = true;
        for (const [key, field] of Object.entries(picked)) {
          if (field === undefined) continue;
          value[key] = field.value;
          valid &&= field.valid;
        }
        if (unknownKey !== undefined) {
          value[unknownKey] = 1;
          valid = false;
        }
        return { value, valid };
      }),
    },
    { weight: 1, arbitrary: notAnObject.map((value) => ({ value, valid: false })) },
    { weight: 1, arbitrary: fc.constant({ value: undefined, valid: true }) },
  );
}

/** `wait` options: backoff ceilings (≥ 1 ms) and a poll budget (1 … 1 000 000). */
export const waitOptionsCase = optionsCase({
  initialDelayMs: durationCase(1),
  maxDelayMs: durationCase(1),
  maxPolls: countCase(1, 1_000_000),
});

/** Options of `acquire` / `tryAcquire`. */
export const acquireOptionsCase = optionsCase({
  waitMs: durationCase(0, true),
  leaseMs: durationCase(MIN_LEASE_MS),
  owner: ownerCase,
  signal: signalCase,
  wait: waitOptionsCase,
});

/** Options of `new LockClient()`, except `redis` (added by the test). */
export const clientOptionsCase = optionsCase({
  prefix: nameCase.map(({ value }) => ({
    value,
    valid: isValidName(value) && utf8.encode(String(value)).length <= 128,
  })),
  watchdogTimeoutMs: durationCase(MIN_LEASE_MS),
  wait: waitOptionsCase,
  retries: countCase(0, 10),
  operationTtlMs: durationCase(10_000),
  watchdog: fc.oneof(
    fc.constant({ value: { start: () => ({ stop() {} }) }, valid: true }),
    fc
      .constantFrom<unknown>(null, {}, "timer", { start: 1 })
      .map((value) => ({ value, valid: false })),
  ),
});

/** A sample of invalid inputs of one kind, for tests that run them against a real server. */
export function invalidSample(
  arbitrary: fc.Arbitrary<Case>,
  count: number,
  seed: number,
): unknown[] {
  return fc
    .sample(
      arbitrary.filter((c) => !c.valid),
      { numRuns: count, seed },
    )
    .map((c) => c.value);
}

/**
 * Stands in for `bun:test` (and the two helpers of `bun` the suite uses) so that @upstash/redis's
 * tests run under vitest. Tests named in skips.ts (matched by name) are registered as skipped.
 */
import { expect as vitestExpect, test as vitestTest } from "vitest";

export {
  afterAll,
  afterEach,
  beforeAll,
  beforeEach,
  describe,
  expect,
  mock,
  spyOn,
} from "./vitest-aliases.js";

type TestFn = () => unknown;

const skipped = new Set<string>(JSON.parse(process.env.UPSTASH_SUITE_SKIPPED_TESTS ?? "[]"));

/** `test(name, fn, timeoutMs)` as Bun takes it; `test.skip/only/todo/each` pass through. */
export const test: typeof vitestTest = Object.assign(
  (name: string, fn?: TestFn, timeout?: number | object) => {
    const register = [...skipped].some((entry) => entry.endsWith(` > ${name}`))
      ? vitestTest.skip
      : vitestTest;
    register(name, fn, typeof timeout === "number" ? timeout : undefined);
  },
  {
    skip: vitestTest.skip,
    only: vitestTest.only,
    todo: vitestTest.todo,
    each: vitestTest.each,
    if: (condition: boolean) => (condition ? vitestTest : vitestTest.skip),
    skipIf: (condition: boolean) => (condition ? vitestTest.skip : vitestTest),
  },
  // Bun's test API is a subset of vitest's: expose it under vitest's type.
) as unknown as typeof vitestTest;
export const it: typeof vitestTest = test;

type ThrowExpectation = string | RegExp | Error | (abstract new (...args: never[]) => unknown);

/** Whether a thrown value meets `toThrow(expected)` as Bun (and Jest) read it. */
function thrownMatches(thrown: unknown, expected: ThrowExpectation | undefined): boolean {
  if (expected === undefined) return true;
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  if (typeof expected === "string") return message.includes(expected);
  if (expected instanceof RegExp) return expected.test(message);
  if (expected instanceof Error) return message === expected.message;
  return thrown instanceof expected;
}

// Bun's matchers that vitest lacks, and Bun's `toThrow`, which also awaits a function that
// returns a promise (`expect(async () => …).toThrow()`); vitest's only calls it.
vitestExpect.extend({
  toThrow(this: { promise?: string }, received: unknown, expected?: ThrowExpectation) {
    const verdict = (threw: boolean, thrown?: unknown) => ({
      pass: threw && thrownMatches(thrown, expected),
      message: () =>
        threw
          ? `expected the thrown ${String(thrown)} to match ${String(expected)}`
          : "expected the function to throw an error",
    });
    // `.rejects.toThrow()`: vitest hands over what the promise rejected with.
    if (this.promise === "rejects") return verdict(true, received);
    if (typeof received !== "function") {
      return { pass: false, message: () => `expected a function, got ${typeof received}` };
    }
    try {
      const result: unknown = received();
      if (result instanceof Promise) {
        return result.then(
          () => verdict(false),
          (error: unknown) => verdict(true, error),
        );
      }
      return verdict(false);
    } catch (error) {
      return verdict(true, error);
    }
  },
  toBeTrue: (received: unknown) => ({
    pass: received === true,
    message: () => `expected ${String(received)} to be true`,
  }),
  toBeFalse: (received: unknown) => ({
    pass: received === false,
    message: () => `expected ${String(received)} to be false`,
  }),
});

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function serve(): never {
  throw new Error("bun's serve() is not available under the vitest shim");
}

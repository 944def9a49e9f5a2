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

// Bun's matchers that vitest lacks.
vitestExpect.extend({
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

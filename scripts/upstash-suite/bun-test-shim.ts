/**
 * Stands in for `bun:test` (and the two helpers of `bun` the suite uses) so that @upstash/redis's
 * tests run under vitest. A test listed in skips.ts (by file, describe names and own name, as
 * vitest's `fullName` spells it) is skipped when it starts; with UPSTASH_SUITE_ONLY_SKIPPED=1
 * only the skip-listed tests run, to check that each skip is still needed.
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

const skippedTests = new Set<string>(JSON.parse(process.env.UPSTASH_SUITE_SKIPPED_TESTS ?? "[]"));
const skippedFiles: string[] = JSON.parse(process.env.UPSTASH_SUITE_SKIPPED_FILES ?? "[]");
const onlySkipped = process.env.UPSTASH_SUITE_ONLY_SKIPPED === "1";

/** Whether the skip list names this test or its file (`fullName` starts with the file's path). */
function skipListed(fullName: string): boolean {
  return skippedTests.has(fullName) || skippedFiles.some((prefix) => fullName.startsWith(prefix));
}

/** `test(name, fn, timeoutMs)` as Bun takes it; `test.skip/only/todo/each` pass through. */
export const test: typeof vitestTest = Object.assign(
  (name: string, fn?: TestFn, timeout?: number | object) => {
    const timeoutMs = typeof timeout === "number" ? timeout : undefined;
    if (fn === undefined) return vitestTest(name, fn, timeoutMs);
    // Decided when the test starts: only then is its full name (file and describes) known.
    vitestTest(
      name,
      async (context) => {
        if (skipListed(context.task.fullName) !== onlySkipped) context.skip();
        await fn();
        await settleUnawaitedThrows();
      },
      timeoutMs,
    );
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

interface Verdict {
  pass: boolean;
  message: () => string;
}

/** Async `toThrow` verdicts of the running test, with whether each was negated (`.not`). */
const pendingThrows: { verdict: Promise<Verdict>; negated: boolean }[] = [];

/**
 * A test may leave an async `toThrow` unawaited (`expect(async () => …).toThrow(…)` in a sync
 * test). Under vitest it would settle after the test ended, racing the file's cleanup and failing
 * as an unhandled rejection; the test waits for it instead, and fails if it fails.
 */
async function settleUnawaitedThrows(): Promise<void> {
  const pending = pendingThrows.splice(0);
  for (const { verdict, negated } of pending) {
    const { pass, message } = await verdict;
    if (pass === negated) throw new Error(negated ? `not: ${message()}` : message());
  }
}

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

// Bun's matchers that vitest lacks (toStartWith, toBeTrue, toBeFalse), and Bun's `toThrow`, which
// also awaits a function that returns a promise (`expect(async () => …).toThrow()`); vitest's
// only calls it.
vitestExpect.extend({
  toThrow(
    this: { promise?: string; isNot?: boolean },
    received: unknown,
    expected?: ThrowExpectation,
  ) {
    const verdict = (threw: boolean, thrown?: unknown): Verdict => ({
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
        const settled = result.then(
          () => verdict(false),
          (error: unknown) => verdict(true, error),
        );
        pendingThrows.push({ verdict: settled, negated: this.isNot === true });
        return settled;
      }
      return verdict(false);
    } catch (error) {
      return verdict(true, error);
    }
  },
  toStartWith: (received: unknown, prefix: string) => ({
    pass: typeof received === "string" && received.startsWith(prefix),
    message: () => `expected ${String(received)} to start with ${prefix}`,
  }),
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

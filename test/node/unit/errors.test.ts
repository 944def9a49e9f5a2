import { describe, expect, expectTypeOf, it } from "vitest";
import {
  isEdgelockError,
  LockBackendError,
  LockBudgetExceededError,
  type LockInputError,
  LockScopeUnavailableError,
  LockWaitTimeoutError,
  QuorumUnreachableError,
  QuorumWaitTimeoutError,
  SemaphoreCapacityError,
  SemaphoreNotInitializedError,
} from "../../../src/index.js";

const tally = { databases: 3, quorum: 2, acquired: 0, busy: 3, unreachable: 0, elapsedMs: 5 };

describe("error classes", () => {
  it("types name as a literal, so a name check narrows", () => {
    const caught: unknown = new LockWaitTimeoutError("a", 100, null);
    if (isEdgelockError(caught) && caught.name === "LockWaitTimeoutError") {
      expectTypeOf(caught).toEqualTypeOf<LockWaitTimeoutError>();
      expect(caught.waitMs).toBe(100);
    } else {
      expect.unreachable("a LockWaitTimeoutError by name");
    }
    expectTypeOf<LockInputError["name"]>().toEqualTypeOf<"LockInputError">();
    expectTypeOf<LockBudgetExceededError["name"]>().toEqualTypeOf<"LockBudgetExceededError">();
    expectTypeOf<LockScopeUnavailableError["name"]>().toEqualTypeOf<"LockScopeUnavailableError">();
  });

  it("makes a spent poll budget a kind of wait timeout, so one catch covers both", () => {
    const error = new LockBudgetExceededError("a", 7, 900, 1_234);
    expect(error).toBeInstanceOf(LockWaitTimeoutError);
    expect(error.name).toBe("LockBudgetExceededError");
    expect(error.waitMs).toBe(1_234);
    expect(error.polls).toBe(7);
    expect(error.holderTtlMs).toBe(900);
    expect(error.message).toMatch(/after 7 requests/);
  });

  it("keeps each subclass's own name at run time", () => {
    expect(new QuorumWaitTimeoutError("a", 1, null, tally).name).toBe("QuorumWaitTimeoutError");
    expect(new QuorumUnreachableError("a", tally, []).name).toBe("QuorumUnreachableError");
    expect(new LockBackendError("x").name).toBe("LockBackendError");
    expect(new LockScopeUnavailableError("x").name).toBe("LockScopeUnavailableError");
  });

  it("recognises an edgelock error by name across bundles, and nothing else", () => {
    const foreign = Object.assign(new Error("from another copy"), { name: "LockNotHeldError" });
    expect(isEdgelockError(foreign)).toBe(true);
    expect(isEdgelockError(new Error("plain"))).toBe(false);
    expect(isEdgelockError({ name: "LockNotHeldError" })).toBe(false);
  });

  it("names the semaphore's errors by a stable literal", () => {
    const unset = new SemaphoreNotInitializedError("uploads");
    expectTypeOf(unset.name).toEqualTypeOf<"SemaphoreNotInitializedError">();
    expect(unset.name).toBe("SemaphoreNotInitializedError");
    expect(unset.semaphoreName).toBe("uploads");
    const full = new SemaphoreCapacityError("uploads", 3, "too many");
    expectTypeOf(full.name).toEqualTypeOf<"SemaphoreCapacityError">();
    expect(full.capacity).toBe(3);
    expect(isEdgelockError(unset) && isEdgelockError(full)).toBe(true);
  });
});

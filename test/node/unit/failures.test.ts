import { describe, expect, it } from "vitest";
import { classifyFailure, redisMessageOf } from "../../../src/transport/failures.js";

describe("classifyFailure", () => {
  it("tells NOSCRIPT, refusals and ambiguous failures apart", () => {
    expect(classifyFailure(new Error("Command failed: NOSCRIPT No matching script."))).toBe(
      "noscript",
    );
    expect(
      classifyFailure(new Error("WRONGPASS invalid or missing auth token, command was: [1]")),
    ).toBe("refused");
    expect(classifyFailure(new Error("ERR Error running script (call to f_x): oops"))).toBe(
      "refused",
    );
    expect(classifyFailure(new TypeError("fetch failed"))).toBe("ambiguous");
    expect(classifyFailure(new Error("Unable to parse response body: <html>"))).toBe("ambiguous");
    expect(classifyFailure(new Error("BUSY Redis is busy running a script"))).toBe("ambiguous");
  });

  it("drops the echoed command, which carries owner tokens", () => {
    const message = redisMessageOf(
      new Error('ERR boom, command was: [["evalsha","abc",1,"k","secret-owner"]]'),
    );
    expect(message).toBe("ERR boom");
    expect(message).not.toContain("secret-owner");
  });
});

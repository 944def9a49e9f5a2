import { describe, expect, it } from "vitest";
import {
  classifyFailure,
  redisMessageOf,
  sanitizedFailure,
  shownSafely,
} from "../../../src/transport/failures.js";

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

describe("sanitizedFailure", () => {
  it("keeps the name, code and server message; drops the command, arguments and tokens", () => {
    const owner = "0123456789abcdef0123456789abcdef";
    const restToken = "AYAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefgh";
    const underneath = Object.assign(new Error(`connect ECONNREFUSED (Bearer ${restToken})`), {
      code: "ECONNREFUSED",
    });
    const upstash = new Error(
      `ERR oops for ${owner}, command was: [["eval","local lockKey = KEYS[1]",1,"k","${owner}"]]`,
      { cause: underneath },
    );
    upstash.name = "UpstashError";
    const safe = sanitizedFailure(upstash, [owner, "local lockKey = KEYS[1]"]);
    expect(safe.name).toBe("UpstashError");
    expect(safe.message).toBe("ERR oops for …");
    expect(safe.stack).not.toContain(owner);
    const cause = safe.cause as Error & { code?: string };
    expect(cause.message).toBe("connect ECONNREFUSED (Bearer …)");
    expect(cause.code).toBe("ECONNREFUSED");
    expect(sanitizedFailure("plain text", []).message).toBe("plain text");
  });

  it("shows replies with long strings elided", () => {
    expect(shownSafely([1, "OK"])).toBe('[1,"OK"]');
    expect(shownSafely(["x".repeat(40)])).toBe('["<40 characters>"]');
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Reply } from "../../../dev/backend.js";
import { reply } from "../../../dev/backend.js";
import {
  formatJsonNumber,
  RequestShapeError,
  toCommand,
  toCommandList,
} from "../../../dev/rest/arguments.js";
import { createTokenCheck, presentedToken } from "../../../dev/rest/auth.js";
import { encodeReplyList, encodeReplyObject, encodeResultValue } from "../../../dev/rest/encode.js";
import { JsonNumber, JsonSyntaxError, parseJson } from "../../../dev/rest/json.js";
import { resolveRoute } from "../../../dev/rest/routes.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

describe("request JSON parsing", () => {
  it("keeps numbers as written", () => {
    expect(parseJson('["incrby","k",9007199254740993,3.6e6,-0.5]')).toEqual([
      "incrby",
      "k",
      new JsonNumber("9007199254740993"),
      new JsonNumber("3.6e6"),
      new JsonNumber("-0.5"),
    ]);
  });

  it("agrees with JSON.parse on everything but numbers", () => {
    const withoutNumbers = fc.jsonValue().filter((value) => !JSON.stringify(value).match(/\d/));
    fc.assert(
      fc.property(withoutNumbers, (value) => {
        const text = JSON.stringify(value);
        expect(parseJson(text)).toEqual(JSON.parse(text));
      }),
    );
  });

  it("rejects what JSON.parse rejects", () => {
    for (const bad of [
      "",
      "[",
      "[1,]",
      "{'a':1}",
      '"\u0001"',
      "[01]",
      "nul",
      "[1] x",
      '"abc',
      "-",
    ]) {
      expect(() => parseJson(bad), bad).toThrow(JsonSyntaxError);
    }
  });

  it("does not let __proto__ keys touch prototypes", () => {
    const parsed = parseJson('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("JSON numbers as Redis arguments", () => {
  it.each([
    ["3600000", "3600000"],
    ["3.6e6", "3600000"],
    ["1e21", "1000000000000000000000"],
    ["9007199254740993", "9007199254740993"],
    ["-9223372036854775808", "-9223372036854775808"],
    ["1.5", "1.5"],
    ["1.50", "1.5"],
    ["1.0", "1"],
    ["1.5e-7", "0.00000015"],
    ["-2.5E+2", "-250"],
    ["0", "0"],
    ["-0", "0"],
    ["-0.0e5", "0"],
    ["0.1", "0.1"],
    ["123.456e1", "1234.56"],
  ])("%s → %s", (source, expected) => {
    expect(formatJsonNumber(source)).toBe(expected);
  });

  it("matches the exact value of any double the client can send", () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e300, max: 1e300 }),
        (value) => {
          const text = formatJsonNumber(JSON.stringify(value));
          expect(text).not.toMatch(/e/i);
          expect(Number(text)).toBe(value === 0 ? 0 : value);
        },
      ),
    );
  });

  it("refuses absurd exponents", () => {
    expect(() => formatJsonNumber("1e999999")).toThrow(RequestShapeError);
  });
});

describe("commands from JSON", () => {
  it("converts strings, numbers and booleans", () => {
    expect(toCommand(parseJson('["set","k",true,false,3600000,"x"]'))).toEqual([
      "set",
      "k",
      "true",
      "false",
      "3600000",
      "x",
    ]);
  });

  it("explains what is wrong with a command", () => {
    expect(() => toCommand(parseJson('["set","k",null]'))).toThrow(/argument 2 is null/);
    expect(() => toCommand(parseJson('["set","k",{"a":1}]'))).toThrow(/argument 2 is an object/);
    expect(() => toCommand(parseJson("[]"))).toThrow(/empty/);
    expect(() => toCommand(parseJson('"get"'))).toThrow(/JSON array/);
    expect(() => toCommandList(parseJson('[["get","a"],"get"]'))).toThrow(/command 2/);
    expect(() => toCommandList(parseJson('["get","a"]'))).toThrow(/command 1/);
    expect(() => toCommandList(parseJson("[]"))).toThrow(/empty list/);
  });
});

describe("reply encoding", () => {
  const nested: Reply = reply.array([
    reply.status("OK"),
    reply.bulk("OK"),
    reply.integer(9007199254740993n),
    reply.nil(),
    reply.array([reply.bulk("x"), reply.status("OK"), reply.array(null)]),
  ]);

  it("base64: every string at every depth, except a top-level OK status", () => {
    expect(encodeResultValue(reply.ok(), "base64")).toBe('"OK"');
    expect(encodeResultValue(reply.bulk("OK"), "base64")).toBe(`"${b64("OK")}"`);
    expect(encodeResultValue(reply.status("PONG"), "base64")).toBe(`"${b64("PONG")}"`);
    expect(encodeResultValue(nested, "base64")).toBe(
      `["${b64("OK")}","${b64("OK")}",9007199254740993,null,["${b64("x")}","${b64("OK")}",null]]`,
    );
  });

  it("base64 of raw bytes, not of their UTF-8 reading", () => {
    expect(encodeResultValue(reply.bulk(Uint8Array.of(0xff, 0x00, 0xfe)), "base64")).toBe('"/wD+"');
  });

  it("text: strings as UTF-8", () => {
    expect(encodeResultValue(nested, "text")).toBe(
      '["OK","OK",9007199254740993,null,["x","OK",null]]',
    );
  });

  it("errors are never encoded", () => {
    expect(encodeReplyObject(reply.error("ERR bad"), "base64")).toBe('{"error":"ERR bad"}');
    expect(encodeReplyList([reply.ok(), reply.error("ERR x")], "base64")).toBe(
      '[{"result":"OK"},{"error":"ERR x"}]',
    );
  });
});

describe("routes", () => {
  const route = (method: string, path: string) => resolveRoute(method, new URL(path, "http://h"));

  it("maps the client's routes and path-style commands", () => {
    expect(route("POST", "/").kind).toBe("command");
    expect(route("POST", "/pipeline").kind).toBe("pipeline");
    expect(route("POST", "/multi-exec/").kind).toBe("multi-exec");
    const path = route("GET", "/set/a%2Fb/c?EX=100");
    expect(path.kind === "path" && path.segments).toEqual(["set", "a/b", "c"]);
  });

  it("refuses other methods and unknown paths", () => {
    expect(route("DELETE", "/")).toMatchObject({ kind: "unknown", status: 405 });
    expect(route("GET", "/pipeline")).toMatchObject({ kind: "unknown", status: 405 });
    expect(route("GET", "/favicon.ico")).toMatchObject({ kind: "unknown", status: 404 });
    expect(route("POST", "/pipeline/extra")).toMatchObject({ kind: "unknown", status: 404 });
  });
});

describe("auth", () => {
  const check = createTokenCheck("s3cret");
  const url = new URL("http://h/get/k?_token=s3cret");

  it("accepts the token from the header or the _token parameter", () => {
    expect(check(presentedToken({ authorization: "Bearer s3cret" }, new URL("http://h/")))).toBe(
      true,
    );
    expect(check(presentedToken({}, url))).toBe(true);
  });

  it("refuses a wrong, missing or malformed token", () => {
    expect(check(presentedToken({ authorization: "Bearer s3cret2" }, new URL("http://h/")))).toBe(
      false,
    );
    expect(check(presentedToken({ authorization: "s3cret" }, new URL("http://h/")))).toBe(false);
    expect(check(presentedToken({}, new URL("http://h/")))).toBe(false);
    // The header wins over the query parameter.
    expect(check(presentedToken({ authorization: "Bearer nope" }, url))).toBe(false);
  });
});

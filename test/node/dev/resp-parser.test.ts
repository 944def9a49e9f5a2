import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Reply } from "../../../dev/backend.js";
import { RespParser, RespProtocolError } from "../../../dev/resp/parser.js";
import { encodeCommands, encodeReply } from "../../../dev/resp/protocol.js";

/** Arbitrary RESP2 replies, nested arrays included. Status/error lines never contain CR or LF. */
const lineText = fc.string({ maxLength: 20 }).map((text) => text.replace(/[\r\n]/g, " "));
const { reply: replyArbitrary } = fc.letrec<{ reply: Reply }>((tie) => ({
  reply: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    lineText.map((value): Reply => ({ type: "status", value })),
    lineText.map((message): Reply => ({ type: "error", message })),
    fc
      .bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
      .map((value): Reply => ({ type: "integer", value })),
    fc
      .option(fc.uint8Array({ maxLength: 40 }), { nil: null })
      .map((value): Reply => ({ type: "bulk", value })),
    fc
      .option(fc.array(tie("reply"), { maxLength: 4 }), { nil: null })
      .map((value): Reply => ({ type: "array", value })),
  ),
}));

function parseAll(chunks: readonly Uint8Array[]): Reply[] {
  const replies: Reply[] = [];
  const parser = new RespParser((reply) => replies.push(reply));
  for (const chunk of chunks) parser.push(chunk);
  return replies;
}

function splitAt(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.byteLength + 1)))].sort(
    (a, b) => a - b,
  );
  const chunks: Buffer[] = [];
  let start = 0;
  for (const point of points) {
    chunks.push(bytes.subarray(start, point));
    start = point;
  }
  chunks.push(bytes.subarray(start));
  return chunks;
}

describe("RESP2 parser", () => {
  it("parses any sequence of replies, however the bytes are split into chunks", () => {
    fc.assert(
      fc.property(
        fc.array(replyArbitrary, { minLength: 1, maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (replies, cuts) => {
          const bytes = Buffer.concat(replies.map(encodeReply));
          expect(parseAll(splitAt(bytes, cuts))).toEqual(replies);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("parses byte by byte", () => {
    const reply: Reply = {
      type: "array",
      value: [
        { type: "bulk", value: new TextEncoder().encode("hé\r\nllo") },
        { type: "integer", value: -9223372036854775808n },
        {
          type: "array",
          value: [
            { type: "status", value: "OK" },
            { type: "bulk", value: null },
          ],
        },
        { type: "array", value: null },
        { type: "array", value: [] },
      ],
    };
    const bytes = encodeReply(reply);
    const chunks = [...bytes].map((byte) => Uint8Array.of(byte));
    expect(parseAll(chunks)).toEqual([reply]);
  });

  it("keeps integers beyond 2^53 exact", () => {
    expect(parseAll([Buffer.from(":9007199254740993\r\n")])).toEqual([
      { type: "integer", value: 9007199254740993n },
    ]);
  });

  it("handles a large bulk string arriving in many chunks", () => {
    const value = new Uint8Array(3 * 1024 * 1024).map((_, index) => index % 251);
    const bytes = encodeReply({ type: "bulk", value });
    const chunks: Buffer[] = [];
    for (let offset = 0; offset < bytes.byteLength; offset += 65_536) {
      chunks.push(bytes.subarray(offset, offset + 65_536));
    }
    const [parsed] = parseAll(chunks);
    expect(
      parsed?.type === "bulk" && Buffer.from(parsed.value ?? []).equals(Buffer.from(value)),
    ).toBe(true);
  });

  it("rejects bytes that are not RESP2", () => {
    const parser = new RespParser(() => undefined);
    expect(() => parser.push(Buffer.from("?what\r\n"))).toThrow(RespProtocolError);
    expect(() => new RespParser(() => undefined).push(Buffer.from("$abc\r\n"))).toThrow(
      RespProtocolError,
    );
    expect(() => new RespParser(() => undefined).push(Buffer.from("$3\r\nabcde\r\n"))).toThrow(
      RespProtocolError,
    );
  });
});

describe("RESP2 command encoding", () => {
  it("writes commands as arrays of bulk strings, UTF-8 for text and raw bytes as is", () => {
    const bytes = encodeCommands([
      ["SET", "kë", Uint8Array.of(0, 255)],
      ["GET", "kë"],
    ]);
    expect(bytes.toString("latin1")).toBe(
      "*3\r\n$3\r\nSET\r\n$3\r\nk\u00c3\u00ab\r\n$2\r\n\u0000\u00ff\r\n*2\r\n$3\r\nGET\r\n$3\r\nk\u00c3\u00ab\r\n",
    );
  });
});

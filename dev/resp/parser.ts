/**
 * Streaming RESP2 parser. Feed it socket chunks in order; it calls `onReply` once per complete
 * top-level reply. Partial input is kept until the rest arrives, and arrays under construction
 * live on an explicit stack, so a reply split across any number of chunks parses in linear time.
 */
import type { Reply } from "../backend.js";

/** The bytes are not RESP2: the connection cannot be trusted any more. */
export class RespProtocolError extends Error {
  override readonly name = "RespProtocolError";
}

interface ArrayFrame {
  readonly items: Reply[];
  remaining: number;
}

/** Nesting deeper than this is refused rather than risking unbounded memory per frame. */
const MAX_DEPTH = 1000;
const EMPTY = Buffer.alloc(0);

export class RespParser {
  /** Unparsed bytes: the buffered tail plus chunks not merged yet. */
  private chunks: Buffer[] = [];
  private bufferedLength = 0;
  /**
   * Do not parse again before this many unparsed bytes are buffered, so a big bulk string arriving
   * in many chunks is merged and scanned once.
   */
  private needed = 0;
  private readonly stack: ArrayFrame[] = [];

  constructor(private readonly onReply: (reply: Reply) => void) {}

  /** Adds bytes from the socket; throws RespProtocolError on malformed input. */
  push(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return;
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    this.bufferedLength += chunk.byteLength;
    if (this.bufferedLength < this.needed) return;

    const buffer = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const consumed = this.parse(buffer);
    const rest = consumed === buffer.byteLength ? EMPTY : buffer.subarray(consumed);
    this.chunks = rest.byteLength > 0 ? [rest] : [];
    this.bufferedLength = rest.byteLength;
  }

  /** True when a reply has started but is not complete yet. */
  get hasPartialReply(): boolean {
    return this.bufferedLength > 0 || this.stack.length > 0;
  }

  /** Parses as many items as possible; returns how many bytes were consumed. */
  private parse(buffer: Buffer): number {
    let offset = 0;
    this.needed = 0;
    while (offset < buffer.byteLength) {
      const lineEnd = buffer.indexOf("\r\n", offset + 1);
      if (lineEnd === -1) {
        this.needed = buffer.byteLength - offset + 1;
        return offset;
      }
      const type = buffer[offset];
      const line = buffer.toString("utf8", offset + 1, lineEnd);
      const afterLine = lineEnd + 2;
      switch (type) {
        case 0x2b /* + */:
          offset = afterLine;
          this.emit({ type: "status", value: line });
          break;
        case 0x2d /* - */:
          offset = afterLine;
          this.emit({ type: "error", message: line });
          break;
        case 0x3a /* : */:
          offset = afterLine;
          this.emit({ type: "integer", value: parseInteger(line) });
          break;
        case 0x24 /* $ */:
          {
            const length = parseLength(line);
            if (length === -1) {
              offset = afterLine;
              this.emit({ type: "bulk", value: null });
              break;
            }
            const end = afterLine + length;
            if (end + 2 > buffer.byteLength) {
              this.needed = end + 2 - offset;
              return offset;
            }
            if (buffer[end] !== 0x0d || buffer[end + 1] !== 0x0a) {
              throw new RespProtocolError("bulk string not terminated by CRLF");
            }
            // Copy so the reply does not pin the (possibly large) receive buffer.
            const value = new Uint8Array(buffer.subarray(afterLine, end));
            offset = end + 2;
            this.emit({ type: "bulk", value });
            break;
          }
        case 0x2a /* * */:
          {
            const length = parseLength(line);
            offset = afterLine;
            if (length === -1) this.emit({ type: "array", value: null });
            else if (length === 0) this.emit({ type: "array", value: [] });
            else {
              if (this.stack.length >= MAX_DEPTH)
                throw new RespProtocolError("reply nested too deeply");
              this.stack.push({ items: [], remaining: length });
            }
            break;
          }
        default:
          throw new RespProtocolError(`unexpected RESP type byte 0x${(type ?? 0).toString(16)}`);
      }
    }
    return offset;
  }

  /** Attaches a finished item to the array being built, or hands a finished top-level reply out. */
  private emit(item: Reply): void {
    let current = item;
    for (;;) {
      const frame = this.stack[this.stack.length - 1];
      if (frame === undefined) {
        this.onReply(current);
        return;
      }
      frame.items.push(current);
      frame.remaining -= 1;
      if (frame.remaining > 0) return;
      this.stack.pop();
      current = { type: "array", value: frame.items };
    }
  }
}

function parseInteger(text: string): bigint {
  if (!/^-?\d+$/.test(text)) throw new RespProtocolError(`invalid integer reply "${text}"`);
  return BigInt(text);
}

function parseLength(text: string): number {
  if (!/^(-1|\d+)$/.test(text)) throw new RespProtocolError(`invalid length "${text}"`);
  const length = Number(text);
  if (!Number.isSafeInteger(length)) throw new RespProtocolError(`length out of range "${text}"`);
  return length;
}

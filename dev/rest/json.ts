/**
 * A small JSON parser that keeps every number as its source text. `JSON.parse` would turn
 * 9007199254740993 into 9007199254740992 and 3600000 into a float that some servers print as
 * 3.6e6; Redis arguments need the digits exactly as the client wrote them.
 */

/** A JSON number, kept as written, e.g. `"3600000"`, `"1.5e-7"`. */
export class JsonNumber {
  constructor(readonly source: string) {}
}

export type JsonValue =
  | string
  | boolean
  | null
  | JsonNumber
  | JsonValue[]
  | { readonly [key: string]: JsonValue };

export class JsonSyntaxError extends Error {
  override readonly name = "JsonSyntaxError";
}

/** Deeper nesting than any valid request needs; guards the recursion. */
const MAX_DEPTH = 64;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;

export function parseJson(text: string): JsonValue {
  const parser = new Parser(text);
  const value = parser.value(0);
  parser.skipWhitespace();
  if (!parser.atEnd()) parser.fail("unexpected data after the JSON value");
  return value;
}

class Parser {
  private position = 0;

  constructor(private readonly text: string) {}

  atEnd(): boolean {
    return this.position >= this.text.length;
  }

  fail(message: string): never {
    throw new JsonSyntaxError(`${message} at position ${this.position}`);
  }

  skipWhitespace(): void {
    WHITESPACE.lastIndex = this.position;
    WHITESPACE.exec(this.text);
    this.position = WHITESPACE.lastIndex;
  }

  value(depth: number): JsonValue {
    if (depth > MAX_DEPTH) this.fail("JSON nested too deeply");
    this.skipWhitespace();
    const char = this.text[this.position];
    switch (char) {
      case "[":
        return this.array(depth);
      case "{":
        return this.object(depth);
      case '"':
        return this.string();
      case "t":
        return this.literal("true", true);
      case "f":
        return this.literal("false", false);
      case "n":
        return this.literal("null", null);
      case undefined:
        return this.fail("unexpected end of JSON");
      default:
        return this.number();
    }
  }

  private literal<T extends JsonValue>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.position)) this.fail("invalid JSON literal");
    this.position += word.length;
    return value;
  }

  private number(): JsonNumber {
    NUMBER.lastIndex = this.position;
    const match = NUMBER.exec(this.text);
    if (match === null) this.fail("unexpected character in JSON");
    this.position = NUMBER.lastIndex;
    return new JsonNumber(match[0]);
  }

  private string(): string {
    const start = this.position;
    let index = start + 1;
    for (;;) {
      const code = this.text.charCodeAt(index);
      if (Number.isNaN(code)) {
        this.position = index;
        this.fail("unterminated JSON string");
      }
      if (code === 0x22 /* " */) break;
      index += code === 0x5c /* \ */ ? 2 : 1;
    }
    this.position = index + 1;
    try {
      // The token is delimited; JSON.parse handles escapes and rejects control characters.
      return JSON.parse(this.text.slice(start, index + 1)) as string;
    } catch {
      this.position = start;
      return this.fail("invalid JSON string");
    }
  }

  private array(depth: number): JsonValue[] {
    this.position += 1;
    const items: JsonValue[] = [];
    this.skipWhitespace();
    if (this.text[this.position] === "]") {
      this.position += 1;
      return items;
    }
    for (;;) {
      items.push(this.value(depth + 1));
      this.skipWhitespace();
      const char = this.text[this.position];
      this.position += 1;
      if (char === "]") return items;
      if (char !== ",") {
        this.position -= 1;
        this.fail("expected ',' or ']' in JSON array");
      }
    }
  }

  private object(depth: number): { [key: string]: JsonValue } {
    this.position += 1;
    const entries: { [key: string]: JsonValue } = {};
    this.skipWhitespace();
    if (this.text[this.position] === "}") {
      this.position += 1;
      return entries;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text[this.position] !== '"') this.fail("expected a string key in JSON object");
      const key = this.string();
      this.skipWhitespace();
      if (this.text[this.position] !== ":") this.fail("expected ':' in JSON object");
      this.position += 1;
      Object.defineProperty(entries, key, {
        value: this.value(depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      this.skipWhitespace();
      const char = this.text[this.position];
      this.position += 1;
      if (char === "}") return entries;
      if (char !== ",") {
        this.position -= 1;
        this.fail("expected ',' or '}' in JSON object");
      }
    }
  }
}

// Strict JSON for forge responses (spec/release-adapter.md, "Limits").
//
// Why a hand-written parser: JSON.parse keeps the last of duplicate keys, turns 2^63 - 1 into an imprecise float,
// accepts 1.0 and 1e3, and cannot bound depth or item count before it has built the whole tree. No dependency of this
// repository (nor a well-kept package we could add without touching package.json) rejects duplicate keys and keeps
// 63-bit integers exact, so this small recursive-descent parser enforces every rule while it reads:
// - UTF-8 only (fatal decoding; a byte order mark is not JSON whitespace and is rejected);
// - at most MAX_JSON_DEPTH nested arrays/objects (a top-level container is level 1);
// - at most MAX_JSON_ITEMS items, counting every array element and every object member in the document;
// - no duplicate keys (compared after unescaping), no fraction or exponent, no lone surrogates;
// - integers within -(2^63 - 1)..2^63 - 1, returned as number when safe, otherwise bigint.
// The byte bound (MAX_RESPONSE_BYTES) is enforced by the transport before the body reaches this module.

export const MAX_JSON_DEPTH = 16;
export const MAX_JSON_ITEMS = 100_000;
export const MAX_INT63 = (1n << 63n) - 1n;

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export class StrictJsonError extends Error {
  override readonly name = "StrictJsonError";
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export function parseStrictJson(bytes: Uint8Array): JsonValue {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw new StrictJsonError("not UTF-8");
  }
  return new Parser(text).parseDocument();
}

class Parser {
  private pos = 0;
  private items = 0;

  constructor(private readonly text: string) {}

  parseDocument(): JsonValue {
    this.skipWhitespace();
    const value = this.parseValue(0);
    this.skipWhitespace();
    if (this.pos !== this.text.length) this.fail("trailing content");
    return value;
  }

  private fail(what: string): never {
    throw new StrictJsonError(`${what} at offset ${this.pos}`);
  }

  private skipWhitespace(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.pos++;
      else break;
    }
  }

  private countItem(): void {
    if (++this.items > MAX_JSON_ITEMS) this.fail("too many items");
  }

  private parseValue(depth: number): JsonValue {
    const c = this.text.charCodeAt(this.pos);
    if (c === 0x7b) return this.parseObject(depth + 1);
    if (c === 0x5b) return this.parseArray(depth + 1);
    if (c === 0x22) return this.parseString();
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.parseInteger();
    if (this.text.startsWith("true", this.pos)) return this.literal(4, true);
    if (this.text.startsWith("false", this.pos)) return this.literal(5, false);
    if (this.text.startsWith("null", this.pos)) return this.literal(4, null);
    return this.fail("unexpected token");
  }

  private literal<T>(length: number, value: T): T {
    this.pos += length;
    return value;
  }

  private parseObject(depth: number): JsonObject {
    if (depth > MAX_JSON_DEPTH) this.fail("nesting too deep");
    this.pos++;
    const out: JsonObject = {};
    this.skipWhitespace();
    if (this.text.charCodeAt(this.pos) === 0x7d) {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text.charCodeAt(this.pos) !== 0x22) this.fail("expected key");
      const key = this.parseString();
      if (Object.hasOwn(out, key)) this.fail("duplicate key");
      this.skipWhitespace();
      if (this.text.charCodeAt(this.pos) !== 0x3a) this.fail("expected colon");
      this.pos++;
      this.skipWhitespace();
      this.countItem();
      const value = this.parseValue(depth);
      // defineProperty: a "__proto__" key becomes an own property instead of replacing the prototype.
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      this.skipWhitespace();
      const c = this.text.charCodeAt(this.pos);
      this.pos++;
      if (c === 0x2c) continue;
      if (c === 0x7d) return out;
      this.pos--;
      this.fail("expected comma or end of object");
    }
  }

  private parseArray(depth: number): JsonValue[] {
    if (depth > MAX_JSON_DEPTH) this.fail("nesting too deep");
    this.pos++;
    const out: JsonValue[] = [];
    this.skipWhitespace();
    if (this.text.charCodeAt(this.pos) === 0x5d) {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipWhitespace();
      this.countItem();
      out.push(this.parseValue(depth));
      this.skipWhitespace();
      const c = this.text.charCodeAt(this.pos);
      this.pos++;
      if (c === 0x2c) continue;
      if (c === 0x5d) return out;
      this.pos--;
      this.fail("expected comma or end of array");
    }
  }

  private parseInteger(): number | bigint {
    const start = this.pos;
    const t = this.text;
    if (t.charCodeAt(this.pos) === 0x2d) this.pos++;
    const digitsStart = this.pos;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c >= 0x30 && c <= 0x39) this.pos++;
      else break;
    }
    const digits = this.pos - digitsStart;
    if (digits === 0) this.fail("invalid number");
    if (digits > 1 && t.charCodeAt(digitsStart) === 0x30) this.fail("leading zero");
    const next = t.charCodeAt(this.pos);
    if (next === 0x2e || next === 0x65 || next === 0x45) this.fail("floating-point number");
    const literal = t.slice(start, this.pos);
    if (literal === "-0") this.fail("negative zero");
    if (digits > 19) this.fail("integer out of range");
    const big = BigInt(literal);
    if (big > MAX_INT63 || big < -MAX_INT63) this.fail("integer out of range");
    const small = Number(big);
    return Number.isSafeInteger(small) ? small : big;
  }

  private parseString(): string {
    const t = this.text;
    this.pos++; // opening quote
    let out = "";
    let runStart = this.pos;
    for (;;) {
      if (this.pos >= t.length) this.fail("unterminated string");
      const c = t.charCodeAt(this.pos);
      if (c === 0x22) {
        out += t.slice(runStart, this.pos);
        this.pos++;
        return out;
      }
      if (c < 0x20) this.fail("control character in string");
      if (c >= 0xd800 && c <= 0xdfff) {
        // Decoded UTF-8 never yields a lone surrogate, so a raw surrogate here is always a valid pair.
        this.pos++;
        continue;
      }
      if (c !== 0x5c) {
        this.pos++;
        continue;
      }
      out += t.slice(runStart, this.pos);
      this.pos++;
      const e = t.charCodeAt(this.pos);
      this.pos++;
      switch (e) {
        case 0x22:
          out += '"';
          break;
        case 0x5c:
          out += "\\";
          break;
        case 0x2f:
          out += "/";
          break;
        case 0x62:
          out += "\b";
          break;
        case 0x66:
          out += "\f";
          break;
        case 0x6e:
          out += "\n";
          break;
        case 0x72:
          out += "\r";
          break;
        case 0x74:
          out += "\t";
          break;
        case 0x75: {
          const unit = this.hex4();
          if (unit >= 0xd800 && unit <= 0xdbff) {
            if (t.charCodeAt(this.pos) !== 0x5c || t.charCodeAt(this.pos + 1) !== 0x75) this.fail("lone surrogate");
            this.pos += 2;
            const low = this.hex4();
            if (low < 0xdc00 || low > 0xdfff) this.fail("lone surrogate");
            out += String.fromCharCode(unit, low);
          } else if (unit >= 0xdc00 && unit <= 0xdfff) {
            this.fail("lone surrogate");
          } else {
            out += String.fromCharCode(unit);
          }
          break;
        }
        default:
          this.pos--;
          this.fail("invalid escape");
      }
      runStart = this.pos;
    }
  }

  private hex4(): number {
    const s = this.text.slice(this.pos, this.pos + 4);
    if (!/^[0-9A-Fa-f]{4}$/.test(s)) this.fail("invalid unicode escape");
    this.pos += 4;
    return Number.parseInt(s, 16);
  }
}

export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

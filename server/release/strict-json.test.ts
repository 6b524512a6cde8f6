import { describe, expect, test } from "bun:test";
import { MAX_JSON_DEPTH, MAX_JSON_ITEMS, parseStrictJson, StrictJsonError, type JsonValue } from "./strict-json.ts";

const parse = (text: string | Uint8Array): JsonValue => parseStrictJson(typeof text === "string" ? Buffer.from(text, "utf8") : text);
const rejects = (text: string | Uint8Array) => expect(() => parse(text)).toThrow(StrictJsonError);

const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
const nestedObjects = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${"}".repeat(levels - 1)}`;

describe("accepted documents", () => {
  test("ordinary forge records parse to plain values", () => {
    expect(parse(' {"id": 1, "name": "v1", "draft": true, "body": null, "assets": [], "n": -5, "s": "a\\u00e9\\n\\"\\/\\\\"} ')).toEqual({
      id: 1,
      name: "v1",
      draft: true,
      body: null,
      assets: [],
      n: -5,
      s: 'a\u00e9\n"/\\',
    });
  });

  test("escaped surrogate pairs and raw non-ASCII text are decoded", () => {
    expect(parse('"\\ud83d\\ude00 \u00fc\u{1F600}"')).toBe("\u{1F600} \u00fc\u{1F600}");
  });

  test("a __proto__ key becomes an own property and leaves the prototype alone", () => {
    const value = parse('{"__proto__": {"polluted": 1}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.hasOwn(value, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("integers", () => {
  test("integers are numbers when safe and bigints up to 2^63 - 1", () => {
    expect(parse("9007199254740991")).toBe(9007199254740991);
    expect(parse("9007199254740992")).toBe(9007199254740992n);
    expect(parse("9223372036854775807")).toBe(9223372036854775807n);
    expect(parse("-9223372036854775807")).toBe(-9223372036854775807n);
    expect(parse("0")).toBe(0);
  });

  test("integers just past the signed 63-bit range are rejected", () => {
    rejects("9223372036854775808");
    rejects("-9223372036854775808");
    rejects("99999999999999999999");
    rejects(`1${"0".repeat(400)}`);
  });

  test("floating-point, exponent, non-finite and non-canonical numbers are rejected", () => {
    for (const text of ["1.0", "1.5", "1e3", "1E3", "-1e-3", "0.0", "NaN", "Infinity", "-Infinity", "01", "-0", "+1", "-", ".5", "0x10"]) {
      rejects(text);
    }
  });
});

describe("limits", () => {
  test(`nesting of ${MAX_JSON_DEPTH} levels is accepted and one more is rejected`, () => {
    expect(() => parse(nested(MAX_JSON_DEPTH))).not.toThrow();
    rejects(nested(MAX_JSON_DEPTH + 1));
    expect(() => parse(nestedObjects(MAX_JSON_DEPTH))).not.toThrow();
    rejects(nestedObjects(MAX_JSON_DEPTH + 1));
  });

  test(`${MAX_JSON_ITEMS} items are accepted and one more is rejected`, () => {
    expect(parse(`[${Array(MAX_JSON_ITEMS).fill("0").join(",")}]`)).toHaveLength(MAX_JSON_ITEMS);
    rejects(`[${Array(MAX_JSON_ITEMS + 1).fill("0").join(",")}]`);
  });

  test("object members and nested elements count as items", () => {
    const members = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(",")}}`;
    expect(() => parse(members(MAX_JSON_ITEMS))).not.toThrow();
    rejects(members(MAX_JSON_ITEMS + 1));
    const half = MAX_JSON_ITEMS / 2;
    expect(() => parse(`[${Array(half).fill('{"a":1}').join(",")}]`)).not.toThrow();
    rejects(`[${Array(half).fill('{"a":1}').join(",")},0]`);
  });
});

describe("rejected documents", () => {
  test("duplicate keys are rejected, also when spelled with escapes", () => {
    rejects('{"id":1,"id":2}');
    rejects('{"id":1,"\\u0069d":1}');
    rejects('[{"a":{"b":1,"b":1}}]');
  });

  test("bytes that are not UTF-8, and a byte order mark, are rejected", () => {
    rejects(new Uint8Array([0x22, 0xff, 0x22]));
    rejects(new Uint8Array([0x22, 0xc0, 0xaf, 0x22]));
    rejects(new Uint8Array([0x22, 0xed, 0xa0, 0x80, 0x22])); // an encoded surrogate
    rejects(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]));
  });

  test("lone surrogate escapes and raw control characters in strings are rejected", () => {
    for (const text of ['"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"a\u0001"', '"a\nb"', '"\\x41"', '"\\u12"', '"abc']) rejects(text);
  });

  test("syntax errors, trailing content and empty documents are rejected", () => {
    for (const text of ["", " ", "{", "[1,]", "{\"a\":1,}", "{'a':1}", "{a:1}", "[1 2]", "{\"a\" 1}", "truex", "nul", "{} {}", "[]]", "// c\n{}", "\u00a0{}"]) {
      rejects(text);
    }
  });
});

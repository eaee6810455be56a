// Proves the gateway's body parsing refuses, with a precise client error, what used to reach a service as a 500:
// bodies nested 10,000 deep, lone UTF-16 surrogates, U+0000, invalid UTF-8 and other charsets; and parses the rest.
import { DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { parseJsonBody } from "./json-body.ts";

const parse = (text: string | Buffer, contentType = "application/json") =>
  parseJsonBody(contentType, typeof text === "string" ? Buffer.from(text, "utf8") : text);
const code = (v: unknown) => (v instanceof DomainError ? v.code : "parsed");

describe("parseJsonBody", () => {
  it("parses ordinary bodies, empty bodies and charset=utf-8", () => {
    expect(parse('{"a":[1,{"b":"x"}]}')).toEqual({ a: [1, { b: "x" }] });
    expect(parse("  ")).toBeUndefined();
    expect(parse('{"a":"é"}', "application/json; charset=UTF-8")).toEqual({ a: "é" });
    // Brackets inside strings do not count as nesting.
    expect(parse(`{"a":"${"[".repeat(100)}"}`)).toEqual({ a: "[".repeat(100) });
  });

  it("refuses nesting deeper than 32 levels before building anything", () => {
    const deep = (n: number) => `{"metadata":${'{"a":'.repeat(n)}1${"}".repeat(n)}}`;
    expect(code(parse(deep(31)))).toBe("parsed");
    expect(code(parse(deep(10_000)))).toBe("invalid_json");
    expect(code(parse(`${"[".repeat(10_000)}${"]".repeat(10_000)}`))).toBe("invalid_json");
  });

  it("refuses lone surrogates and U+0000 in values and keys", () => {
    expect(code(parse('{"reference_id":"a\\ud800"}'))).toBe("validation_error");
    expect(code(parse('{"x\\udc00":1}'))).toBe("validation_error");
    expect(code(parse('{"a":"b\\u0000"}'))).toBe("validation_error");
    // A surrogate pair is one ordinary character.
    expect(parse('{"a":"\\ud83d\\ude00"}')).toEqual({ a: "😀" });
  });

  it("refuses invalid UTF-8 and other charsets", () => {
    expect(code(parse(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])))).toBe("invalid_json");
    expect(code(parse('{"a":1}', "application/json; charset=utf-16"))).toBe("unsupported_media_type");
    expect(code(parse('{"a":1}', 'application/json; charset="latin1"'))).toBe("unsupported_media_type");
  });
});

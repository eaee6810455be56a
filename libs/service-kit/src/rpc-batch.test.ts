import { describe, expect, it } from "vitest";
import { decodeFrames, frame, FrameHeaders } from "./rpc-batch.ts";

describe("batch frames", () => {
  it("round-trips records of any text, colons, digits, line breaks and non-ASCII included", () => {
    const records = [
      ["0", "NATS/1.0\r\nx-request-id: req_1\r\n", '{"a":"1:2:3","b":"é😀"}'],
      ["1z", "", ""],
      ["12:34", "9", "::"],
    ];
    const text = records.map((r) => r.map(frame).join("")).join("");
    expect(decodeFrames(text, 3)).toEqual(records);
  });

  it("refuses anything malformed instead of guessing", () => {
    expect(decodeFrames("", 2)).toBeUndefined(); // no record at all
    expect(decodeFrames("3:ab", 1)).toBeUndefined(); // frame cut short
    expect(decodeFrames("2:ab", 2)).toBeUndefined(); // record cut short
    expect(decodeFrames(":ab", 1)).toBeUndefined(); // no length
    expect(decodeFrames("x:abc", 1)).toBeUndefined(); // length not a number
    expect(decodeFrames("-1:a", 1)).toBeUndefined();
    expect(decodeFrames("12345678901:a", 1)).toBeUndefined(); // absurd length
    expect(decodeFrames('{"ok":true}', 2)).toBeUndefined(); // a plain reply
  });

  it("reads a request's own headers case-insensitively, first value of a name, as the propagator asks", () => {
    const h = new FrameHeaders("NATS/1.0\r\ntraceparent: 00-abc-def-01\r\nX-Request-Id:  req_9 \r\nx-request-id: other\r\nbroken line\r\n");
    expect(h.get("traceparent")).toBe("00-abc-def-01");
    expect(h.get("x-request-id")).toBe("req_9");
    expect(h.get("X-REQUEST-ID")).toBe("req_9");
    expect(h.get("tracestate")).toBe("");
    expect(h.keys()).toEqual(["traceparent", "X-Request-Id"]);
  });
});

import { describe, expect, test } from "bun:test";
import { bodyReaderFor, parseHead, type BodyStep, type ResponseHead } from "./http-response.ts";

function head(text: string): ResponseHead {
  const parsed = parseHead(Buffer.from(text, "latin1"));
  if (parsed.kind !== "head") throw new Error(`expected a head, got ${parsed.kind}`);
  return parsed.head;
}

/** Feeds `body` one byte at a time, as the most fragmented peer would. */
function feedBytewise(h: ResponseHead, body: string, max = 1000): { step: BodyStep; body?: string } {
  const reader = bodyReaderFor(h, max);
  if (reader === undefined) return { step: "invalid" };
  let step: BodyStep = "more";
  for (const byte of Buffer.from(body, "latin1")) {
    step = reader.feed(Buffer.from([byte]));
    if (step !== "more") break;
  }
  return step === "done" ? { step, body: reader.body().toString("latin1") } : { step };
}

describe("response heads", () => {
  test("a head split anywhere is incomplete until its blank line arrives", () => {
    const text = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
    for (let i = 0; i < text.indexOf("\r\n\r\n") + 4; i++) expect(parseHead(Buffer.from(text.slice(0, i))).kind).toBe("incomplete");
    const parsed = parseHead(Buffer.from(text));
    expect(parsed.kind === "head" && parsed.consumed).toBe(text.length - 2);
  });

  test("header names are case-insensitive and repeated headers are all kept", () => {
    const h = head("HTTP/1.1 200 OK\r\ncontent-LENGTH: 2\r\nX-A: 1\r\nx-a:  2 \r\n\r\n");
    expect(h.headers.get("content-length")).toEqual(["2"]);
    expect(h.headers.get("x-a")).toEqual(["1", "2"]);
  });

  test("malformed status lines and header lines are invalid", () => {
    for (const text of ["HTTP/1.1 20 OK\r\n\r\n", "HTTP/2.0 200 OK\r\n\r\n", "http/1.1 200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
      "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", "HTTP/1.1 200 OK\r\nA: b\u0000c\r\n\r\n"]) {
      expect(parseHead(Buffer.from(text, "latin1")).kind).toBe("invalid");
    }
  });
});

describe("body framing", () => {
  test("a Content-Length body completes at exactly its length, ignoring anything after it", () => {
    expect(feedBytewise(head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"), "abcdef")).toEqual({ step: "done", body: "abc" });
  });

  test("Content-Length at the bound is accepted and past it refused", () => {
    expect(bodyReaderFor(head("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"), 1000)).toBeDefined();
    expect(bodyReaderFor(head("HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n"), 1000)).toBeUndefined();
    expect(bodyReaderFor(head("HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n"), 1000)).toBeUndefined();
    expect(bodyReaderFor(head("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n"), 1000)).toBeUndefined();
    expect(bodyReaderFor(head("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n"), 1000)).toBeUndefined();
  });

  test("a chunked body fed one byte at a time is reassembled with extensions and trailers", () => {
    const h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n");
    expect(feedBytewise(h, "3;a=b\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n")).toEqual({ step: "done", body: "abc0123456789" });
  });

  test("chunked bodies over the bound or with broken framing are invalid", () => {
    const h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    expect(feedBytewise(h, "3E8\r\n", 1000).step).toBe("more");
    expect(feedBytewise(h, "3E9\r\n", 1000).step).toBe("invalid");
    expect(feedBytewise(h, "2\r\n", 1000).step).toBe("more");
    for (const bad of ["3\r\nabcX\r\n", "g\r\n", "3\nabc\r\n", "-1\r\n", "0\r\nnot a trailer\r\n\r\n", `${"1".repeat(9)}\r\n`]) {
      expect(feedBytewise(h, bad).step).toBe("invalid");
    }
  });
});

// A hostile forge echoing the Authorization value back (issue 16 item 8): no field of any error, nor its message, stack,
// JSON or inspected form, may carry the token or a piece of it, whatever the forge does to the echo.

import { describe, expect, test } from "bun:test";
import { AmbiguousMutationError, ControllerError, REDACTED } from "./errors.ts";
import { header, sendRaw, type CapturedRequest } from "./test-support/raw-forge.ts";
import { failureOf, REPOSITORY, TOKEN, usePeer } from "./test-support/fixture.ts";

const peer = usePeer();
/** A token of request-ID characters only: an echo survives the request-ID filter unchanged. */
const PLAIN_TOKEN = "ghp0123456789abcdefABCDEF0123456789abcdEF";

/** Every run of 10 characters of the token, as sent and reduced to the characters a request ID keeps. */
function pieces(token: string): string[] {
  const out: string[] = [];
  for (const form of [token, token.replace(/[^A-Za-z0-9:._/-]/g, "")]) for (let i = 0; i + 10 <= form.length; i++) out.push(form.slice(i, i + 10));
  return out;
}

async function expectNoToken(promise: Promise<unknown>, token: string): Promise<ControllerError | AmbiguousMutationError> {
  const e = await failureOf(promise);
  const fields = Object.getOwnPropertyNames(e).map((name) => String((e as unknown as Record<string, unknown>)[name]));
  const shown = [e.message, e.stack ?? "", JSON.stringify(e), Bun.inspect(e), String(e), ...fields].join("\n");
  for (const piece of pieces(token)) expect(shown).not.toContain(piece);
  return e;
}

/** Answers `status` with the request's Authorization value (or `echo(value)`) as its only request ID. */
function echoing(status: number, echo: (authorization: string) => string = (value) => value, body = "") {
  return (req: CapturedRequest, socket: Parameters<typeof sendRaw>[0]) =>
    sendRaw(socket, `HTTP/1.1 ${status} Echo\r\nX-GitHub-Request-Id: ${echo(header(req, "authorization")!)}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`, body);
}

const ECHOES: Array<[string, (authorization: string) => string]> = [
  ["the Authorization value", (value) => value],
  ["the bare token", (value) => value.replace(/^Bearer /, "")],
  ["token <token>", (value) => value.replace(/^Bearer /, "token ")],
  ["the token with spaces inserted", (value) => value.replace(/^Bearer /, "").split("").join(" ")],
  ["the first 40 characters of the token", (value) => value.replace(/^Bearer /, "").slice(0, 40)],
];

describe("an error never carries the token, also when the forge echoes it as its request ID", () => {
  for (const token of [TOKEN, PLAIN_TOKEN]) {
    for (const [what, echo] of ECHOES) {
      test(`${what} (token ${token === TOKEN ? "with" : "without"} characters a request ID drops), on a read, a mutation and a malformed success`, async () => {
        peer.forge.respond = echoing(500, echo);
        const read = await expectNoToken(peer.client({ token }).getRelease(1), token);
        expect(read).toBeInstanceOf(ControllerError);
        expect(read.status).toBe(500);
        expect(read.requestId).toBe(REDACTED);
        expect(read.message).toBe(`GET /repos/${REPOSITORY}/releases/1: unexpected status: HTTP 500, request ID ${REDACTED}`);
        peer.forge.respond = echoing(502, echo);
        expect(await expectNoToken(peer.client({ token }).publishRelease(7), token)).toBeInstanceOf(AmbiguousMutationError);
        peer.forge.respond = echoing(200, echo, JSON.stringify({ full_name: "someone/else", id: 1 }));
        expect((await expectNoToken(peer.client({ token }).repositoryId(), token)).reason).toBe("invalid-response");
      });
    }
  }

  test("the token is removed from the path and detail too, as sent or percent-encoded", () => {
    const token = ["tok/en", "+with%signs"].join(""); // not one literal: Bun.inspect shows the source lines around the throw
    const e = new AmbiguousMutationError({ reason: "invalid-response", method: "POST", path: `/a/${token}/b/${encodeURIComponent(token)}`, detail: `Bearer ${token}`, status: 201, requestId: token, secret: token });
    expect(e.path).toBe(`/a/${REDACTED}/b/${REDACTED}`);
    expect(e.message).toBe(`POST /a/${REDACTED}/b/${REDACTED}: invalid successful response (Bearer ${REDACTED}): HTTP 201, request ID ${REDACTED}`);
    expect(`${e.stack} ${JSON.stringify(e)} ${Bun.inspect(e)}`).not.toContain(token);
  });

  test("an ordinary request ID is kept as it was", async () => {
    peer.forge.respond = echoing(500, () => "C0DE:1234:ABCD12:EF5678:6543210A");
    const e = await expectNoToken(peer.client().getRelease(1), TOKEN);
    expect(e.requestId).toBe("C0DE:1234:ABCD12:EF5678:6543210A");
    expect(e.message).toBe(`GET /repos/${REPOSITORY}/releases/1: unexpected status: HTTP 500, request ID C0DE:1234:ABCD12:EF5678:6543210A`);
  });
});

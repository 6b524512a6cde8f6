// Asset uploads against a local HTTPS peer: the URL template, the exact streamed body from the retained descriptor,
// descriptor failures before and after the request starts, and the upload rows of the error table.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { UPLOAD_CHUNK_BYTES } from "./https-exchange.ts";
import { header, RawForge, responseHead, sendJson, sendRaw } from "./test-support/raw-forge.ts";
import { expectAmbiguous, expectController, expectNoConnection, REPOSITORY, usePeer } from "./test-support/fixture.ts";

const peer = usePeer();
const client = peer.client;
let dir: string;
const openFds: number[] = [];

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "release-upload-"));
});
afterAll(async () => {
  for (const fd of openFds) fs.closeSync(fd);
  fs.rmSync(dir, { recursive: true, force: true });
});
const uploadUrl = (id: number | bigint = 7, base = peer.forge.url) => `${base}/uploads/repos/${REPOSITORY}/releases/${id}/assets{?name,label}`;
const asset = { id: 99, name: "a.tar.gz", state: "uploaded", size: 0 };

let fileCounter = 0;
/** A file with deterministic content, opened read-only; the descriptor is closed after all tests. */
function openFile(size: number, flags = "r"): { fd: number; content: Buffer; file: string } {
  const content = Buffer.alloc(size);
  for (let i = 0; i < size; i++) content[i] = (i * 7 + (i >> 11)) & 0xff;
  const file = path.join(dir, `asset-${fileCounter++}`);
  fs.writeFileSync(file, content);
  const fd = fs.openSync(file, flags);
  openFds.push(fd);
  return { fd, content, file };
}

describe("successful uploads", () => {
  test("an upload streams exactly the declared bytes in order and leaves the descriptor open and unmoved", async () => {
    const size = 2 * UPLOAD_CHUNK_BYTES + 12345;
    const { fd, content } = openFile(size);
    // Move the descriptor's own offset: positional reads must neither use nor change it.
    const probe = Buffer.alloc(3);
    fs.readSync(fd, probe, 0, 3, null);
    peer.forge.respond = (_req, s) => sendJson(s, 201, { ...asset, size });
    const name = "my asset (1)+\u00fc!*'.tar.gz";
    expect(await client().uploadAsset(7, uploadUrl(), { name, size, fd })).toEqual({ ...asset, size });
    const req = peer.forge.requests[0]!;
    expect(req.method).toBe("POST");
    expect(req.path).toBe(`/uploads/repos/${REPOSITORY}/releases/7/assets`);
    expect(req.query).toBe("name=my%20asset%20%281%29%2B%C3%BC%21%2A%27.tar.gz");
    expect(header(req, "content-type")).toBe("application/octet-stream");
    expect(header(req, "content-length")).toBe(String(size));
    expect(header(req, "accept")).toBe("application/vnd.github+json");
    expect(header(req, "accept-encoding")).toBe("identity");
    expect(header(req, "x-github-api-version")).toBe("2026-03-10");
    expect(header(req, "host")).toBe(`127.0.0.1:${peer.forge.port}`);
    expect(req.body.equals(content)).toBe(true);
    expect(fs.readSync(fd, probe, 0, 3, null)).toBe(3);
    expect(probe.equals(content.subarray(3, 6))).toBe(true);
    expect(fs.fstatSync(fd).size).toBe(size);
  });

  test("assets of exactly one chunk and one byte more arrive intact", async () => {
    for (const size of [UPLOAD_CHUNK_BYTES - 1, UPLOAD_CHUNK_BYTES, UPLOAD_CHUNK_BYTES + 1, 2 * UPLOAD_CHUNK_BYTES]) {
      const { fd, content } = openFile(size);
      peer.forge.respond = (_req, s) => sendJson(s, 201, { ...asset, size });
      await client().uploadAsset(7, uploadUrl(), { name: "x", size, fd });
      expect(peer.forge.requests.at(-1)!.body.equals(content)).toBe(true);
    }
  });

  test("an empty asset is uploaded with Content-Length 0", async () => {
    const { fd } = openFile(0);
    peer.forge.respond = (_req, s) => sendJson(s, 201, asset);
    await client().uploadAsset(7, uploadUrl(), { name: "empty.txt", size: 0, fd });
    expect(header(peer.forge.requests[0]!, "content-length")).toBe("0");
    expect(peer.forge.requests[0]!.body.length).toBe(0);
  });

  test("a release ID of 2^63 - 1 is substituted into the template and the path", async () => {
    const { fd } = openFile(10);
    peer.forge.respond = (_req, s) => sendJson(s, 201, asset);
    await client().uploadAsset(9223372036854775807n, uploadUrl(9223372036854775807n), { name: "x", size: 10, fd });
    expect(peer.forge.requests[0]!.path).toBe(`/uploads/repos/${REPOSITORY}/releases/9223372036854775807/assets`);
  });
});

describe("refused before the request starts", () => {
  test("an upload URL other than the exact trusted template is refused", async () => {
    const { fd } = openFile(10);
    await expectNoConnection(peer.pki.caPem, async (offline, base) => {
      const port = new URL(base).port;
      const bad = [
        `${base}/uploads/repos/${REPOSITORY}/releases/8/assets{?name,label}`,
        `${base}/uploads/repos/octo-org/other/releases/7/assets{?name,label}`,
        `${base}/uploads/repos/${REPOSITORY}/releases/7/assets`,
        `${base}/uploads/repos/${REPOSITORY}/releases/7/assets{?name}`,
        `${base}/uploads/repos/${REPOSITORY}/releases/7/assets?name=x`,
        `${base}/repos/${REPOSITORY}/releases/7/assets{?name,label}`,
        `https://localhost:${port}/uploads/repos/${REPOSITORY}/releases/7/assets{?name,label}`,
        `http://127.0.0.1:${port}/uploads/repos/${REPOSITORY}/releases/7/assets{?name,label}`,
        `${uploadUrl(7, base)} `,
      ];
      for (const url of bad) await expectController(offline.uploadAsset(7, url, { name: "x", size: 10, fd }), "invalid-argument");
    });
  });

  test("invalid asset names, sizes and descriptors are refused", async () => {
    const { fd } = openFile(10);
    const dirFd = fs.openSync(dir, "r");
    openFds.push(dirFd);
    const bad = [
      { name: "", size: 10, fd },
      { name: "a/b", size: 10, fd },
      { name: "a\\b", size: 10, fd },
      { name: "..", size: 10, fd },
      { name: "a\nb", size: 10, fd },
      { name: "x".repeat(256), size: 10, fd },
      { name: "x", size: -1, fd },
      { name: "x", size: 1.5, fd },
      { name: "x", size: 10, fd: -1 },
      { name: "x", size: 10, fd: 1_000_000 },
      { name: "x", size: 10, fd: dirFd },
    ];
    await expectNoConnection(peer.pki.caPem, async (offline, base) => {
      for (const a of bad) await expectController(offline.uploadAsset(7, uploadUrl(7, base), a), "invalid-argument");
    });
  });

  test("an empty asset whose descriptor holds bytes fails before anything is sent", async () => {
    const { fd } = openFile(1);
    await expectController(client().uploadAsset(7, uploadUrl(), { name: "x", size: 0, fd }), "upload-read");
    expect(peer.forge.requests).toHaveLength(0);
  });
});

describe("descriptor failures after the request starts are ambiguous", () => {
  test("an early end of file within the first chunk is ambiguous", async () => {
    const { fd } = openFile(100);
    peer.forge.respond = (_req, s) => sendJson(s, 201, asset);
    await expectAmbiguous(client().uploadAsset(7, uploadUrl(), { name: "x", size: 110, fd }), "upload-read");
  });

  test("an early end of file in a later chunk is ambiguous", async () => {
    const { fd } = openFile(UPLOAD_CHUNK_BYTES + 5);
    peer.forge.respond = (_req, s) => sendJson(s, 201, asset);
    await expectAmbiguous(client().uploadAsset(7, uploadUrl(), { name: "x", size: UPLOAD_CHUNK_BYTES + 10, fd }), "upload-read");
  });

  test("an extra byte beyond the declared size is ambiguous and the body is never completed", async () => {
    let completeBodies = 0;
    for (const size of [99, UPLOAD_CHUNK_BYTES, 2 * UPLOAD_CHUNK_BYTES + 1]) {
      const { fd } = openFile(size + 1);
      peer.forge.respond = (_req, s) => {
        completeBodies++;
        sendJson(s, 201, asset);
      };
      await expectAmbiguous(client().uploadAsset(7, uploadUrl(), { name: "x", size, fd }), "upload-read");
    }
    expect(completeBodies).toBe(0);
  });

  test("a read error on the descriptor is ambiguous", async () => {
    const { fd } = openFile(10, "w"); // write-only: reads fail with EBADF after the request head is sent
    peer.forge.respond = (_req, s) => sendJson(s, 201, asset);
    const e = await expectAmbiguous(client().uploadAsset(7, uploadUrl(), { name: "x", size: 10, fd }), "upload-read");
    expect(e.message).toBe(`POST /uploads/repos/${REPOSITORY}/releases/7/assets: asset descriptor read failure (read error)`);
  });
});

describe("error table, upload rows", () => {
  const upload = async (overrides = {}) => {
    const { fd } = openFile(1000);
    return client(overrides).uploadAsset(7, uploadUrl(), { name: "x", size: 1000, fd });
  };

  test("a 502 answer to an upload is ambiguous", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 502, { message: "Bad Gateway" });
    const e = await expectAmbiguous(upload(), "status", 502);
    expect(e.message).not.toContain("name=");
    expect(peer.forge.requests).toHaveLength(1);
  });

  test("408 and other 5xx answers to an upload are ambiguous", async () => {
    for (const status of [408, 500, 503, 504]) {
      peer.forge.respond = (_req, s) => sendJson(s, status, {});
      await expectAmbiguous(upload(), "status", status);
    }
  });

  test("transport loss after an upload starts is ambiguous", async () => {
    peer.forge.respond = (_req, s) => s.destroy();
    await expectAmbiguous(upload(), "transport");
    peer.forge.onHead = (_req, s) => s.destroy();
    await expectAmbiguous(upload(), "transport");
  });

  test("an informational answer to an upload is ambiguous", async () => {
    peer.forge.onHead = (_req, s) => s.write("HTTP/1.1 100 Continue\r\n\r\n");
    await expectAmbiguous(upload(), "informational", 100);
  });

  test("another 4xx answer to an upload is a ControllerError, even before the body is sent", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 422, { message: "already_exists" });
    await expectController(upload(), "status", 422);
    peer.forge.onHead = (_req, s) => sendJson(s, 413, { message: "too large" });
    const { fd } = openFile(16 * UPLOAD_CHUNK_BYTES);
    await expectController(client().uploadAsset(7, uploadUrl(), { name: "x", size: 16 * UPLOAD_CHUNK_BYTES, fd }), "status", 413);
  });

  test("a redirect answer to an upload is a ControllerError and never followed", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 307, "", [`Location: ${peer.forge.url}/elsewhere`]);
    await expectController(upload(), "redirect", 307);
    expect(peer.forge.requests).toHaveLength(1);
  });

  test("an unexpected 2xx answer to an upload is ambiguous", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, asset);
    await expectAmbiguous(upload(), "unexpected-success", 200);
  });

  test("a success answer before the whole body was sent is ambiguous", async () => {
    peer.forge.onHead = (_req, s) => {
      s.pause();
      sendJson(s, 201, asset);
    };
    const { fd } = openFile(16 * UPLOAD_CHUNK_BYTES);
    await expectAmbiguous(client().uploadAsset(7, uploadUrl(), { name: "x", size: 16 * UPLOAD_CHUNK_BYTES, fd }), "early-response", 201);
  });

  test("a malformed or truncated success answering an upload is ambiguous", async () => {
    for (const parts of [[responseHead(201, ["Content-Length: 50"]), "{}"], [responseHead(201, ["Content-Length: 2"]), "[]"]]) {
      peer.forge.respond = (_req, s) => sendRaw(s, ...parts);
      await expectAmbiguous(upload(), "invalid-response", 201);
    }
  });

  test("a peer that stops reading the upload body makes it ambiguous after the socket timeout", async () => {
    peer.forge.onHead = (_req, s) => s.pause();
    const { fd } = openFile(16 * UPLOAD_CHUNK_BYTES);
    const started = performance.now();
    await expectAmbiguous(client({ timeoutSeconds: 0.3 }).uploadAsset(7, uploadUrl(), { name: "x", size: 16 * UPLOAD_CHUNK_BYTES, fd }), "timeout");
    expect(performance.now() - started).toBeLessThan(3000);
  });
});

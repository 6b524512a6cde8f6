// Read operations against a local HTTPS peer: success paths, the read column of the error table, and response limits.

import { describe, expect, test } from "bun:test";
import { MAX_RESPONSE_BYTES } from "./release-client.ts";
import { makeTestPki } from "./test-support/pki.ts";
import { connectionsUsed, header, RawForge, REQUEST_ID, responseHead, sendJson, sendRaw, startSilentPeer } from "./test-support/raw-forge.ts";
import { COMMIT, expectController, expectNoConnection, makeClient, REPOSITORY, TAG_OBJECT, TOKEN, usePeer } from "./test-support/fixture.ts";

const peer = usePeer();
const client = peer.client;
const release = (id: number | string = 7) => ({ id, tag_name: "v1.0.0", draft: true });

describe("requests", () => {
  test("a read sends the fixed media type, identity encoding, API version and token on its own connection", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, { full_name: REPOSITORY, id: 42 });
    expect(await client().repositoryId()).toBe(42);
    expect(await client().repositoryId()).toBe(42);
    expect(connectionsUsed(peer.forge)).toBe(2);
    const req = peer.forge.requests[0]!;
    expect(req.method).toBe("GET");
    expect(req.target).toBe(`/repos/${REPOSITORY}`);
    expect(header(req, "accept")).toBe("application/vnd.github+json");
    expect(header(req, "accept-encoding")).toBe("identity");
    expect(header(req, "x-github-api-version")).toBe("2026-03-10");
    expect(header(req, "authorization")).toBe(`Bearer ${TOKEN}`);
    expect(header(req, "connection")).toBe("close");
    expect(header(req, "host")).toBe(`127.0.0.1:${peer.forge.port}`);
    expect(req.headers.has("content-length")).toBe(false);
  });

  test("list requests carry page and per_page and return arrays of objects", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, [release(1), release(2)]);
    const list = await client().listReleases(10, 100);
    expect(list.map((r) => r.id)).toEqual([1, 2]);
    expect(peer.forge.requests[0]!.target).toBe(`/repos/${REPOSITORY}/releases?per_page=100&page=10`);
    const assets = await client().listAssets(7, 1, 1);
    expect(assets).toHaveLength(2);
    expect(peer.forge.requests[1]!.target).toBe(`/repos/${REPOSITORY}/releases/7/assets?per_page=1&page=1`);
  });

  test("an API URL with a path prefix is kept in front of every request path", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, { full_name: REPOSITORY, id: 42 });
    await client({ apiUrl: `${peer.forge.url}/api/v3` }).repositoryId();
    expect(peer.forge.requests[0]!.target).toBe(`/api/v3/repos/${REPOSITORY}`);
  });
});

describe("additional checks", () => {
  test("repositoryId requires full_name to equal the configured repository exactly", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, { full_name: REPOSITORY.toUpperCase(), id: 42 });
    await expectController(client().repositoryId(), "invalid-response");
  });

  test("repository IDs must be positive integers at most 2^63 - 1, returned as bigint when unsafe", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, `{"full_name":"${REPOSITORY}","id":9223372036854775807}`);
    expect(await client().repositoryId()).toBe(9223372036854775807n);
    for (const id of ["0", "-1", "1.5", "\"42\"", "9223372036854775808", "null"]) {
      peer.forge.respond = (_req, s) => sendJson(s, 200, `{"full_name":"${REPOSITORY}","id":${id}}`);
      await expectController(client().repositoryId(), "invalid-response");
    }
  });

  test("getRelease requires the returned ID to echo the requested one", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, release(8));
    await expectController(client().getRelease(7), "invalid-response");
    peer.forge.respond = (_req, s) => sendJson(s, 200, `{"id":9223372036854775807}`);
    expect((await client().getRelease(9223372036854775807n)).id).toBe(9223372036854775807n);
    expect(peer.forge.requests.at(-1)!.path).toBe(`/repos/${REPOSITORY}/releases/9223372036854775807`);
  });

  test("release IDs outside 1..2^63 - 1 are refused before any connection", async () => {
    await expectNoConnection(peer.pki.caPem, async (offline) => {
      for (const id of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 1, 9223372036854775808n, 0n]) {
        await expectController(offline.getRelease(id), "invalid-argument");
        await expectController(offline.listAssets(id, 1, 1), "invalid-argument");
      }
    });
  });

  test("pages are 1..10 and page sizes 1..100", async () => {
    await expectNoConnection(peer.pki.caPem, async (offline) => {
      for (const [page, perPage] of [[0, 1], [11, 1], [1, 0], [1, 101], [1.5, 1]] as const) {
        await expectController(offline.listReleases(page, perPage), "invalid-argument");
        await expectController(offline.listAssets(1, page, perPage), "invalid-argument");
      }
    });
  });

  test("list methods require an array containing only objects", async () => {
    for (const body of ["{}", "[1]", "[{}, []]", "[null]"]) {
      peer.forge.respond = (_req, s) => sendJson(s, 200, body);
      await expectController(client().listReleases(1, 1), "invalid-response");
    }
  });

  test("single-record methods require an object", async () => {
    for (const body of ["[]", "1", "\"x\"", "null"]) {
      peer.forge.respond = (_req, s) => sendJson(s, 200, body);
      await expectController(client().getRelease(1), "invalid-response");
    }
  });
});

describe("resolveTag", () => {
  const ref = (type: string, sha: string, name = "v1.0.0") => ({ ref: `refs/tags/${name}`, object: { type, sha, url: "x" } });

  test("a lightweight tag resolves to its commit with one request", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, ref("commit", COMMIT));
    expect(await client().resolveTag("v1.0.0")).toEqual({ ref: "refs/tags/v1.0.0", objectType: "commit", objectId: COMMIT, commit: COMMIT });
    expect(peer.forge.requests.map((r) => r.target)).toEqual([`/repos/${REPOSITORY}/git/ref/tags/v1.0.0`]);
  });

  test("an annotated tag is resolved through its tag object on a second connection", async () => {
    peer.forge.respond = (req, s) =>
      req.path.includes("/git/ref/")
        ? sendJson(s, 200, ref("tag", TAG_OBJECT))
        : sendJson(s, 200, { sha: TAG_OBJECT, tag: "v1.0.0", object: { type: "commit", sha: COMMIT } });
    expect(await client().resolveTag("v1.0.0")).toEqual({ ref: "refs/tags/v1.0.0", objectType: "tag", objectId: TAG_OBJECT, commit: COMMIT });
    expect(peer.forge.requests.map((r) => r.target)).toEqual([
      `/repos/${REPOSITORY}/git/ref/tags/v1.0.0`,
      `/repos/${REPOSITORY}/git/tags/${TAG_OBJECT}`,
    ]);
    expect(connectionsUsed(peer.forge)).toBe(2);
  });

  test("a tag name with slashes and reserved characters is percent-encoded per segment", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, ref("commit", COMMIT, "release/v1+build#2"));
    await client().resolveTag("release/v1+build#2");
    expect(peer.forge.requests[0]!.target).toBe(`/repos/${REPOSITORY}/git/ref/tags/release/v1%2Bbuild%232`);
  });

  test("a reference other than the exact requested ref fails closed", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, ref("commit", COMMIT, "v1.0.0-rc1"));
    await expectController(client().resolveTag("v1.0.0"), "invalid-response");
    peer.forge.respond = (_req, s) => sendJson(s, 200, [ref("commit", COMMIT)]);
    await expectController(client().resolveTag("v1.0.0"), "invalid-response");
  });

  test("tags of trees or blobs and malformed object IDs fail closed", async () => {
    for (const [type, sha] of [["tree", COMMIT], ["blob", COMMIT], ["commit", COMMIT.toUpperCase()], ["commit", COMMIT.slice(1)]]) {
      peer.forge.respond = (_req, s) => sendJson(s, 200, ref(type!, sha!));
      await expectController(client().resolveTag("v1.0.0"), "invalid-response");
    }
  });

  test("an annotated tag whose object ID, name or target differs, or that chains to a tag, fails closed", async () => {
    const cases = [
      { sha: COMMIT, tag: "v1.0.0", object: { type: "commit", sha: COMMIT } },
      { sha: TAG_OBJECT, tag: "v1.0.1", object: { type: "commit", sha: COMMIT } },
      { sha: TAG_OBJECT, tag: "v1.0.0", object: { type: "tag", sha: COMMIT } },
      { sha: TAG_OBJECT, tag: "v1.0.0", object: { type: "tree", sha: COMMIT } },
      { sha: TAG_OBJECT, tag: "v1.0.0", object: { type: "commit", sha: "abc" } },
    ];
    for (const body of cases) {
      peer.forge.respond = (req, s) => (req.path.includes("/git/ref/") ? sendJson(s, 200, ref("tag", TAG_OBJECT)) : sendJson(s, 200, body));
      await expectController(client().resolveTag("v1.0.0"), "invalid-response");
    }
  });

  test("invalid tag names are refused before any connection", async () => {
    const tags = ["", "a..b", "v1 0", "v1~1", "v1^", "a:b", "a?b", "a*b", "a[b", "a\\b", "/v1", "v1/", "v1.", "v1.lock", ".v1", "a//b", "@", "a@{b", "v\u00e9", "-v1", "x".repeat(256)];
    await expectNoConnection(peer.pki.caPem, async (offline) => {
      for (const tag of tags) await expectController(offline.resolveTag(tag), "invalid-argument");
    });
  });
});

describe("error table, read column", () => {
  test("transport loss after the request is sent is a ControllerError", async () => {
    peer.forge.respond = (_req, s) => s.destroy();
    await expectController(client().getRelease(1), "transport");
  });

  test("an unexpected informational 1xx is a ControllerError", async () => {
    for (const status of [100, 102, 103]) {
      peer.forge.respond = (_req, s) => sendRaw(s, `HTTP/1.1 ${status} Info\r\nLink: </a>\r\n\r\n`, responseHead(200, ["Content-Length: 8"]), JSON.stringify({ id: 1 }));
      await expectController(client().getRelease(1), "informational", status);
    }
  });

  test("HTTP 408 and 5xx are ControllerErrors carrying status and request ID", async () => {
    for (const status of [408, 500, 502, 503, 504]) {
      peer.forge.respond = (_req, s) => sendJson(s, status, { message: "secret body text" });
      const e = await expectController(client().getRelease(1), "status", status);
      expect(e.requestId).toBe(REQUEST_ID);
      expect(e.message).toBe(`GET /repos/${REPOSITORY}/releases/1: unexpected status: HTTP ${status}, request ID ${REQUEST_ID}`);
    }
  });

  test("other 4xx are ControllerErrors", async () => {
    for (const status of [400, 401, 403, 404, 409, 422, 429]) {
      peer.forge.respond = (_req, s) => sendJson(s, status, { message: "no" });
      await expectController(client().getRelease(1), "status", status);
    }
  });

  test("an unexpected 2xx is a ControllerError", async () => {
    for (const status of [201, 202, 204]) {
      peer.forge.respond = (_req, s) => sendJson(s, status, release(1));
      await expectController(client().getRelease(1), "unexpected-success", status);
    }
  });

  test("redirects are never followed", async () => {
    for (const status of [301, 302, 303, 307, 308]) {
      peer.forge.reset();
      peer.forge.respond = (_req, s) => sendJson(s, status, "", [`Location: ${peer.forge.url}/repos/${REPOSITORY}/releases/2`]);
      await expectController(client().getRelease(1), "redirect", status);
      expect(peer.forge.requests).toHaveLength(1);
    }
  });

  test("other unexpected statuses are ControllerErrors", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 600, release(1));
    await expectController(client().getRelease(1), "status", 600);
  });

  test("malformed, unsupported and truncated successful responses are ControllerErrors", async () => {
    const json = JSON.stringify(release(1));
    const cases: Array<Array<string | Buffer>> = [
      [responseHead(200, [`Content-Length: ${json.length + 10}`]), json], // truncated
      [responseHead(200, ["Content-Length: 12a"]), json],
      [responseHead(200, ["Content-Length: -1"]), json],
      [responseHead(200, ["Content-Length: +27"]), json],
      [responseHead(200, [`Content-Length: ${json.length}, ${json.length}`]), json],
      [responseHead(200, [`Content-Length: ${json.length}`, `Content-Length: ${json.length}`]), json],
      [responseHead(200, [`Content-Length: ${json.length}`, "Transfer-Encoding: chunked"]), json],
      [responseHead(200, ["Transfer-Encoding: gzip, chunked"]), json],
      [responseHead(200, []), json], // delimited only by close: truncation undetectable
      [responseHead(200, [`Content-Length: ${json.length}`, "Content-Encoding: gzip"]), json],
      [responseHead(200, [`Content-Length: ${json.length}`], "text/html"), json],
      [responseHead(200, [`Content-Length: ${json.length}`], "application/json; charset=iso-8859-1"), json],
      [responseHead(200, [`Content-Length: 2`]), "{"],
      [responseHead(200, [`Content-Length: 4`]), Buffer.from([0x7b, 0x22, 0xff, 0x7d])],
      [responseHead(200, ["Transfer-Encoding: chunked"]), `${json.length.toString(16)}\r\n${json}\r\n`], // no last chunk
      [responseHead(200, ["Transfer-Encoding: chunked"]), `zz\r\n${json}\r\n0\r\n\r\n`],
      [`HTTP/1.1 200 OK\nContent-Length: ${json.length}\n\n`, json], // bare LF
      [`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n folded: x\r\nContent-Length: ${json.length}\r\n\r\n`, json],
      ["HTTP/2 200\r\n\r\n", json],
    ];
    for (const parts of cases) {
      peer.forge.respond = (_req, s) => sendRaw(s, ...parts);
      const e = await expectController(client().getRelease(1), "invalid-response");
      expect(e.message).not.toContain("tag_name");
    }
  });

  test("a connection closed in the middle of the response head is an invalid response", async () => {
    peer.forge.respond = (_req, s) => sendRaw(s, responseHead(200, ["Content-Length: 10"]).slice(0, 20));
    await expectController(client().getRelease(1), "invalid-response");
  });

  test("chunked and identity-declared responses are accepted", async () => {
    const json = JSON.stringify(release(1));
    peer.forge.respond = (_req, s) =>
      sendRaw(s, responseHead(200, ["Transfer-Encoding: chunked", "Content-Encoding: identity"], "application/json"), `3;ext=1\r\n${json.slice(0, 3)}\r\n${(json.length - 3).toString(16)}\r\n${json.slice(3)}\r\n0\r\nX-Trailer: 1\r\n\r\n`);
    expect((await client().getRelease(1)).tag_name).toBe("v1.0.0");
  });

  test("a successful body of exactly 8 MiB is accepted and one byte more is refused", async () => {
    const body = (size: number) => {
      const prefix = '{"id":1,"pad":"';
      return `${prefix}${"a".repeat(size - prefix.length - 2)}"}`;
    };
    peer.forge.respond = (_req, s) => sendJson(s, 200, body(MAX_RESPONSE_BYTES));
    expect((await client().getRelease(1)).id).toBe(1);
    peer.forge.respond = (_req, s) => sendJson(s, 200, body(MAX_RESPONSE_BYTES + 1));
    await expectController(client().getRelease(1), "invalid-response");
    const chunked = (size: number) => {
      const b = body(size);
      const half = b.length >> 1;
      return [responseHead(200, ["Transfer-Encoding: chunked"]), `${half.toString(16)}\r\n${b.slice(0, half)}\r\n${(b.length - half).toString(16)}\r\n${b.slice(half)}\r\n0\r\n\r\n`];
    };
    peer.forge.respond = (_req, s) => sendRaw(s, ...chunked(MAX_RESPONSE_BYTES));
    expect((await client().getRelease(1)).id).toBe(1);
    peer.forge.respond = (_req, s) => sendRaw(s, ...chunked(MAX_RESPONSE_BYTES + 1));
    await expectController(client().getRelease(1), "invalid-response");
  });

  test("JSON items, nesting and integer limits apply to responses", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, `[${Array(100_000).fill("{}").join(",")}]`);
    expect(await client().listReleases(1, 100)).toHaveLength(100_000);
    peer.forge.respond = (_req, s) => sendJson(s, 200, `[${Array(100_001).fill("{}").join(",")}]`);
    await expectController(client().listReleases(1, 100), "invalid-response");
    peer.forge.respond = (_req, s) => sendJson(s, 200, `{"id":1,"x":${"[".repeat(15)}${"]".repeat(15)}}`);
    expect((await client().getRelease(1)).id).toBe(1);
    peer.forge.respond = (_req, s) => sendJson(s, 200, `{"id":1,"x":${"[".repeat(16)}${"]".repeat(16)}}`);
    await expectController(client().getRelease(1), "invalid-response");
    for (const bad of ['{"id":1,"id":1}', '{"id":1,"x":1.0}', '{"id":1,"x":1e3}', '{"id":1,"x":NaN}', '{"id":1,"x":Infinity}', '{"id":1,"x":-9223372036854775808}']) {
      peer.forge.respond = (_req, s) => sendJson(s, 200, bad);
      await expectController(client().getRelease(1), "invalid-response");
    }
  });

  test("a peer that stalls after the request fails within the socket timeout", async () => {
    peer.forge.respond = () => {};
    const started = performance.now();
    await expectController(client({ timeoutSeconds: 0.3 }).getRelease(1), "timeout");
    expect(performance.now() - started).toBeLessThan(1500);
  });

  test("a peer that stalls in the middle of a body fails within the socket timeout", async () => {
    peer.forge.respond = (_req, s) => s.write(`${responseHead(200, ["Content-Length: 100"])}{"id":1`);
    await expectController(client({ timeoutSeconds: 0.3 }).getRelease(1), "timeout");
  });

  test("a peer that stalls in the TLS handshake fails within the socket timeout", async () => {
    const silent = await startSilentPeer();
    try {
      const started = performance.now();
      await expectController(client({ apiUrl: `https://127.0.0.1:${silent.port}`, timeoutSeconds: 0.3 }).getRelease(1), "timeout");
      expect(performance.now() - started).toBeLessThan(1500);
    } finally {
      await silent.stop();
    }
  });

  test("a certificate from an unknown authority is a transport failure", async () => {
    const other = makeTestPki();
    peer.forge.respond = (_req, s) => sendJson(s, 200, release(1));
    await expectController(client({ ca: other.caPem }).getRelease(1), "transport");
    expect(peer.forge.requests).toHaveLength(0);
  });

  test("a certificate for another host name is a transport failure", async () => {
    const elsewhere = makeTestPki("DNS:other.example");
    const other = await RawForge.start(elsewhere);
    try {
      other.respond = (_req, s) => sendJson(s, 200, release(1));
      await expectController(makeClient(other, elsewhere.caPem).getRelease(1), "transport");
      expect(other.requests).toHaveLength(0);
    } finally {
      await other.stop();
    }
  });

  test("a refused connection is a transport failure", async () => {
    const port = peer.forge.port;
    await peer.forge.stop();
    await expectController(client({ apiUrl: `https://127.0.0.1:${port}` }).getRelease(1), "transport");
    peer.forge = await RawForge.start(peer.pki);
  });

  test("a response head over 64 KiB is an invalid response", async () => {
    const filler = `X-Filler: ${"f".repeat(1000)}`;
    peer.forge.respond = (_req, s) => sendRaw(s, responseHead(200, ["Content-Length: 8", ...Array(66).fill(filler)]), '{"id":1}');
    await expectController(client().getRelease(1), "invalid-response");
    peer.forge.respond = (_req, s) => sendRaw(s, responseHead(200, ["Content-Length: 8", ...Array(60).fill(filler)]), '{"id":1}');
    expect((await client().getRelease(1)).id).toBe(1);
  });

  test("error messages carry a bounded request ID and never the query", async () => {
    peer.forge.respond = (_req, s) => sendRaw(s, `HTTP/1.1 500 Oops\r\nX-GitHub-Request-Id: ${"A".repeat(300)}<script>\r\nContent-Length: 0\r\n\r\n`);
    const e = await expectController(client().listReleases(2, 5), "status", 500);
    expect(e.requestId).toBe("A".repeat(64));
    expect(e.message).toBe(`GET /repos/${REPOSITORY}/releases: unexpected status: HTTP 500, request ID ${"A".repeat(64)}`);
  });
});

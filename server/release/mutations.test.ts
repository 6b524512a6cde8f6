// Create-draft and publish against a local HTTPS peer: exact bodies and the mutation column of the error table.

import { describe, expect, test } from "bun:test";
import type { DraftPlan } from "./release-client.ts";
import { makeTestPki } from "./test-support/pki.ts";
import { header, RawForge, responseHead, sendJson, sendRaw, startSilentPeer } from "./test-support/raw-forge.ts";
import { COMMIT, expectAmbiguous, expectController, expectNoConnection, REPOSITORY, TOKEN, usePeer } from "./test-support/fixture.ts";

const peer = usePeer();
const client = peer.client;
const plan: DraftPlan = { tagName: "v1.0.0", targetCommit: COMMIT, name: "Release 1.0.0", marker: "controller-marker: abc" };
const draft = { id: 7, tag_name: "v1.0.0", draft: true };

/** Both mutations with the status their success requires. */
const mutations = [
  { name: "create", call: () => client().createDraft(plan), ok: 201 },
  { name: "publish", call: () => client().publishRelease(7), ok: 200 },
] as const;

describe("request bodies", () => {
  test("createDraft posts exactly the plan and the seven fixed fields", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 201, draft);
    expect(await client().createDraft(plan)).toEqual(draft);
    const req = peer.forge.requests[0]!;
    expect(req.method).toBe("POST");
    expect(req.target).toBe(`/repos/${REPOSITORY}/releases`);
    expect(header(req, "content-type")).toBe("application/json");
    expect(header(req, "content-length")).toBe(String(req.body.length));
    expect(header(req, "authorization")).toBe(`Bearer ${TOKEN}`);
    expect(header(req, "x-github-api-version")).toBe("2026-03-10");
    expect(JSON.parse(req.body.toString("utf8"))).toStrictEqual({
      tag_name: "v1.0.0",
      target_commitish: COMMIT,
      name: "Release 1.0.0",
      body: "controller-marker: abc",
      draft: true,
      prerelease: false,
      generate_release_notes: false,
      make_latest: "false",
    });
  });

  test("publishRelease patches draft false and make_latest the string false", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, { ...draft, draft: false });
    expect((await client().publishRelease(7)).draft).toBe(false);
    const req = peer.forge.requests[0]!;
    expect(req.method).toBe("PATCH");
    expect(req.target).toBe(`/repos/${REPOSITORY}/releases/7`);
    expect(JSON.parse(req.body.toString("utf8"))).toStrictEqual({ draft: false, make_latest: "false" });
  });

  test("publishRelease accepts a 2^63 - 1 release ID given as bigint", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, '{"id":9223372036854775807,"draft":false}');
    expect((await client().publishRelease(9223372036854775807n)).id).toBe(9223372036854775807n);
  });

  test("an invalid plan is refused before any connection", async () => {
    const bad: Array<Partial<DraftPlan>> = [
      { tagName: "a..b" },
      { targetCommit: COMMIT.slice(0, 39) },
      { targetCommit: COMMIT.toUpperCase() },
      { targetCommit: "main" },
      { name: "" },
      { name: "a\nb" },
      { marker: "" },
      { marker: "x".repeat(125_001) },
      { marker: "\ud800" },
    ];
    await expectNoConnection(peer.pki.caPem, async (offline) => {
      for (const change of bad) await expectController(offline.createDraft({ ...plan, ...change }), "invalid-argument");
      for (const id of [0, -3, 2.5, 9223372036854775808n]) await expectController(offline.publishRelease(id), "invalid-argument");
    });
  });
});

describe("error table, mutation column", () => {
  for (const m of mutations) {
    test(`transport loss after the ${m.name} request starts is ambiguous`, async () => {
      peer.forge.respond = (_req, s) => s.destroy();
      await expectAmbiguous(m.call(), "transport");
    });

    test(`an informational 1xx answer to a ${m.name} is ambiguous`, async () => {
      peer.forge.respond = (_req, s) => sendRaw(s, "HTTP/1.1 100 Continue\r\n\r\n", responseHead(m.ok, ["Content-Length: 8"]), '{"id":7}');
      await expectAmbiguous(m.call(), "informational", 100);
      peer.forge.respond = (_req, s) => sendRaw(s, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n");
      await expectAmbiguous(m.call(), "informational", 103);
    });

    test(`a 408 or 5xx answer to a ${m.name} is ambiguous`, async () => {
      for (const status of [408, 500, 502, 503, 504]) {
        peer.forge.respond = (_req, s) => sendJson(s, status, { message: "x" });
        await expectAmbiguous(m.call(), "status", status);
      }
    });

    test(`another 4xx answer to a ${m.name} is a ControllerError`, async () => {
      for (const status of [400, 401, 403, 404, 409, 422, 429]) {
        peer.forge.respond = (_req, s) => sendJson(s, status, { message: "x" });
        await expectController(m.call(), "status", status);
      }
    });

    test(`an unexpected 2xx answer to a ${m.name} is ambiguous`, async () => {
      for (const status of [m.ok === 200 ? 201 : 200, 202, 204]) {
        peer.forge.respond = (_req, s) => sendJson(s, status, draft);
        await expectAmbiguous(m.call(), "unexpected-success", status);
      }
    });

    test(`a redirect answer to a ${m.name} is a ControllerError and never followed`, async () => {
      for (const status of [301, 302, 307, 308]) {
        peer.forge.reset();
        peer.forge.respond = (_req, s) => sendJson(s, status, "", [`Location: ${peer.forge.url}/elsewhere`]);
        await expectController(m.call(), "redirect", status);
        expect(peer.forge.requests).toHaveLength(1);
      }
    });

    test(`another unexpected status answering a ${m.name} is a ControllerError`, async () => {
      peer.forge.respond = (_req, s) => sendJson(s, 999, draft);
      await expectController(m.call(), "status", 999);
    });

    test(`a malformed, truncated or unbounded success answering a ${m.name} is ambiguous`, async () => {
      const bodies: Array<Array<string>> = [
        [responseHead(m.ok, ["Content-Length: 100"]), '{"id":7'],
        [responseHead(m.ok, ["Content-Length: x"]), '{"id":7}'],
        [responseHead(m.ok, ["Content-Length: 8", "Content-Encoding: gzip"]), '{"id":7}'],
        [responseHead(m.ok, ["Content-Length: 8"], "text/plain"), '{"id":7}'],
        [responseHead(m.ok, ["Content-Length: 2"]), "[]"],
        [responseHead(m.ok, ["Content-Length: 15"]), '{"id":7,"id":7}'],
        [responseHead(m.ok, ["Content-Length: 10"]), '{"id":7.0}'],
        [responseHead(m.ok, [`Content-Length: ${8 * 1024 * 1024 + 1}`]), ""],
        [responseHead(m.ok, [])],
      ];
      for (const parts of bodies) {
        peer.forge.respond = (_req, s) => sendRaw(s, ...parts);
        await expectAmbiguous(m.call(), "invalid-response", m.ok);
      }
    });

    test(`a peer that stalls after a ${m.name} request is ambiguous after the socket timeout`, async () => {
      peer.forge.respond = () => {};
      const c = client({ timeoutSeconds: 0.3 });
      await expectAmbiguous(m.name === "create" ? c.createDraft(plan) : c.publishRelease(7), "timeout");
    });
  }

test("a create or publish that fails before the request starts is a ControllerError", async () => {
    const other = makeTestPki();
    await expectController(client({ ca: other.caPem }).createDraft(plan), "transport");
    const closed = await RawForge.start(peer.pki);
    const port = closed.port;
    await closed.stop();
    await expectController(client({ apiUrl: `https://127.0.0.1:${port}` }).createDraft(plan), "transport");
    await expectController(client({ apiUrl: `https://127.0.0.1:${port}` }).publishRelease(7), "transport");
    const silent = await startSilentPeer();
    try {
      await expectController(client({ apiUrl: `https://127.0.0.1:${silent.port}`, timeoutSeconds: 0.3 }).publishRelease(7), "timeout");
    } finally {
      await silent.stop();
    }
    expect(peer.forge.requests).toHaveLength(0);
  });

  test("a publish answer naming another release is ambiguous", async () => {
    peer.forge.respond = (_req, s) => sendJson(s, 200, { id: 8, draft: false });
    await expectAmbiguous(client().publishRelease(7), "invalid-response", undefined);
  });
});

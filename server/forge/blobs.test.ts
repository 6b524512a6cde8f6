import { afterAll, beforeAll, expect, test } from "bun:test";
import { createScenario, generateAppKeys, type Scenario } from "../simulator/scenario.ts";
import { putBlob } from "../simulator/git.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { MAX_POLICY_FILE_BYTES } from "../policy/bounds.ts";
import { createForgeClient } from "./client.ts";
import { blobBodyBound, gitBlobId } from "./contents.ts";
import { ForgeError } from "./errors.ts";
import { bufferLogger, CHECK_NAME, clientFor } from "./test-support.ts";

// A blob by its SHA (`service history replay`, issue 28 item 4): bounded like the service's own reads and verified against
// the SHA, since its content is whatever a pull request once committed.
let sim: ForgeSimulator;
let s: Scenario;
beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys: generateAppKeys() });
});
afterAll(async () => { await sim.stop(); });

const at = (sha: string) => ({ installationId: s.installationId, owner: s.org, repo: s.repo, sha });

test("a blob is read by its SHA through the blob route, and its bytes hash to that SHA", async () => {
  const sha = putBlob(sim.control.state, "* @acme/core\n");
  sim.requests.length = 0;
  const read = await clientFor(sim, s).readBlob(at(sha), MAX_POLICY_FILE_BYTES);
  expect(read.kind).toBe("found");
  expect(read.kind === "found" && new TextDecoder().decode(read.bytes)).toBe("* @acme/core\n");
  expect(sim.requests.filter((q) => !q.path.endsWith("/access_tokens")).map((q) => q.path)).toEqual([`/repos/acme/web/git/blobs/${sha}`]);
});

test("a blob the forge does not have reads as missing", async () => {
  expect(await clientFor(sim, s).readBlob(at("1".repeat(40)), MAX_POLICY_FILE_BYTES)).toEqual({ kind: "missing" });
});

test("a blob over the bound is too large and is not decoded", async () => {
  const sha = putBlob(sim.control.state, "#".repeat(MAX_POLICY_FILE_BYTES + 1));
  expect(await clientFor(sim, s).readBlob(at(sha), MAX_POLICY_FILE_BYTES)).toEqual({ kind: "too_large", bytes: MAX_POLICY_FILE_BYTES + 1 });
});

test("bytes that do not hash to the SHA asked for are a mismatch", async () => {
  const sha = "2".repeat(40);
  sim.control.state.blobs.set(sha, new TextEncoder().encode("* @mallory\n"));
  expect(await clientFor(sim, s).readBlob(at(sha), MAX_POLICY_FILE_BYTES)).toEqual({ kind: "mismatch" });
});

test("a SHA-256 object ID is verified with SHA-256", async () => {
  const bytes = new TextEncoder().encode("* @acme/core\n");
  const sha = gitBlobId(bytes, "sha256");
  sim.control.state.blobs.set(sha, bytes);
  expect((await clientFor(sim, s).readBlob(at(sha), MAX_POLICY_FILE_BYTES)).kind).toBe("found");
});

test("an object ID that is not 40 or 64 hexadecimal digits is never asked for", async () => {
  sim.requests.length = 0;
  expect(await clientFor(sim, s).readBlob(at("../../contents/x"), MAX_POLICY_FILE_BYTES)).toEqual({ kind: "missing" });
  expect(sim.requests.some((q) => q.path.includes("/git/blobs/"))).toBe(false);
});

test("a response body longer than the bound allows is cut off, whatever size it states", async () => {
  // A forge (or anything in its place) that states a small size and streams without end: reading stops at the bound.
  let sent = 0;
  const endless = () => new ReadableStream<Uint8Array>({
    start(controller) { controller.enqueue(new TextEncoder().encode('{"sha":"x","size":1,"encoding":"base64","content":"')); },
    pull(controller) { sent += 65_536; controller.enqueue(new Uint8Array(65_536).fill(0x41)); },
  });
  const fetchBlob = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input instanceof Request ? input.url : input);
    if (!url.includes("/git/blobs/")) return fetch(input, init);
    return new Response(endless(), { status: 200, headers: { "content-type": "application/json; charset=utf-8" } });
  }) as typeof fetch;
  const client = createForgeClient({ apiUrl: sim.url, appId: s.appId, privateKey: s.privateKey, requestTimeoutMs: 5000, checkName: CHECK_NAME, logger: bufferLogger().logger, fetch: fetchBlob });
  expect(await client.readBlob(at("3".repeat(40)), MAX_POLICY_FILE_BYTES)).toEqual({ kind: "too_large", bytes: null });
  expect(sent).toBeLessThan(blobBodyBound(MAX_POLICY_FILE_BYTES) + 4 * 65_536);
});

test("a declared Content-Length over the bound is refused before the body is read", async () => {
  const fetchBlob = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input instanceof Request ? input.url : input);
    if (!url.includes("/git/blobs/")) return fetch(input, init);
    return new Response("{}", { status: 200, headers: { "content-type": "application/json", "content-length": String(blobBodyBound(10) + 1) } });
  }) as typeof fetch;
  const client = createForgeClient({ apiUrl: sim.url, appId: s.appId, privateKey: s.privateKey, requestTimeoutMs: 5000, checkName: CHECK_NAME, logger: bufferLogger().logger, fetch: fetchBlob });
  expect(await client.readBlob(at("4".repeat(40)), 10)).toEqual({ kind: "too_large", bytes: null });
});

test("a forge fault is thrown as a ForgeError (the caller says it could not read the blob)", async () => {
  const fetchBlob = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input instanceof Request ? input.url : input);
    if (!url.includes("/git/blobs/")) return fetch(input, init);
    return new Response("{}", { status: 502 });
  }) as typeof fetch;
  const client = createForgeClient({ apiUrl: sim.url, appId: s.appId, privateKey: s.privateKey, requestTimeoutMs: 5000, checkName: CHECK_NAME, logger: bufferLogger().logger, fetch: fetchBlob });
  const error = await client.readBlob(at("5".repeat(40)), 10).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ForgeError);
  expect((error as ForgeError).kind).toBe("transient");
});

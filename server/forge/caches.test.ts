// Caches that match immutability (issue 18 item 5): their keys, their byte bounds, and what they must never hold.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { DEFAULT_EVALUATION_SETTINGS, planLookups } from "../evaluation/index.ts";
import { createCaches, ENTRY_OVERHEAD_BYTES, fileKey, fileListKey } from "./caches.ts";
import { ORGANIZATION_POLICY_RECHECK_MS } from "./contents.ts";
import type { GatherResult } from "./evidence.ts";
import { clientFor } from "./test-support.ts";
import { CONDITIONAL_CACHE_BYTES, CONDITIONAL_ENTRY_OVERHEAD_BYTES, conditionalCache, conditionalKey, type KeptResponse } from "./transport.ts";

const found = (text: string) => ({ kind: "found" as const, path: "CODEOWNERS", text, bytes: text.length });
const kept = (bytes: number): KeptResponse => ({ etag: 'W/"x"', response: { data: {}, headers: {}, status: 200 }, bytes });

describe("cache keys", () => {
  test("a file is kept by repository, commit and path; the path keeps its case", () => {
    const at = { installationId: 1, owner: "Acme", repo: "Web", commit: "a".repeat(40), path: "CODEOWNERS" };
    expect(fileKey(at)).toBe(fileKey({ ...at, owner: "acme", repo: "web" }));
    expect(fileKey(at)).not.toBe(fileKey({ ...at, commit: "b".repeat(40) }));
    expect(fileKey(at)).not.toBe(fileKey({ ...at, path: "codeowners" }));
    expect(fileKey(at)).not.toBe(fileKey({ ...at, installationId: 2 }));
  });

  test("a file list is kept by pull request, head and base commit", () => {
    const at = { installationId: 1, owner: "acme", repo: "web", number: 7, headSha: "a".repeat(40), baseSha: "b".repeat(40) };
    expect(fileListKey(at)).not.toBe(fileListKey({ ...at, headSha: "c".repeat(40) }));
    expect(fileListKey(at)).not.toBe(fileListKey({ ...at, baseSha: "c".repeat(40) }));
    expect(fileListKey(at)).not.toBe(fileListKey({ ...at, number: 8 }));
    expect(fileListKey(at)).not.toBe(fileListKey({ ...at, headSha: at.baseSha, baseSha: at.headSha }));
  });

  test("a conditional request is kept by who asks, route and every parameter", () => {
    const key = conditionalKey("installation:1", "GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
    expect(conditionalKey("installation:1", "GET /repos/{owner}/{repo}", { repo: "web", owner: "acme" })).toBe(key);
    expect(conditionalKey("installation:2", "GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })).not.toBe(key);
    expect(conditionalKey("installation:1", "GET /repos/{owner}/{repo}", { owner: "acme", repo: "web", page: 2 })).not.toBe(key);
  });
});

describe("byte bounds", () => {
  test("the file cache holds files up to its byte bound and drops the least recently used past it", () => {
    const key = (n: number) => fileKey({ installationId: 1, owner: "acme", repo: "web", commit: String(n).repeat(40), path: "CODEOWNERS" });
    const size = key(1).length + ENTRY_OVERHEAD_BYTES + 1000;
    const { files } = createCaches({ files: size * 3 });
    for (const n of [1, 2, 3]) files.set(key(n), found("x".repeat(1000)));
    expect([1, 2, 3].map((n) => files.has(key(n)))).toEqual([true, true, true]); // exactly at the bound
    files.get(key(1)); // used: 2 is now the least recently used
    files.set(key(4), found("x".repeat(1000)));
    expect([1, 2, 3, 4].map((n) => files.has(key(n)))).toEqual([true, false, true, true]);
    files.set(key(5), found("x".repeat(size * 3)));
    expect(files.has(key(5))).toBe(false); // larger than the whole bound: never kept
  });

  test("absent files count against the bound too, so any number of them stays bounded", () => {
    const { files } = createCaches({ files: 100 * (ENTRY_OVERHEAD_BYTES + 100) });
    for (let n = 0; n < 10_000; n++) files.set(`${"k".repeat(90)}${String(n).padStart(10, "0")}`, { kind: "missing" });
    expect(files.size).toBe(100);
  });

  test("the file-list cache is bounded by the bytes of the names it holds", () => {
    const list = Array.from({ length: 100 }, (_, i) => ({ filename: `src/file-${String(i).padStart(5, "0")}.ts`, status: "modified" }));
    const { fileLists: probe } = createCaches();
    probe.set("a", list);
    const one = probe.calculatedSize; // a key of one character, 100 names and their overhead
    expect(one).toBeGreaterThan(100 * "src/file-00000.ts".length);
    const atBound = createCaches({ fileLists: 2 * one }).fileLists;
    atBound.set("a", list);
    atBound.set("b", list);
    expect([atBound.has("a"), atBound.has("b")]).toEqual([true, true]);
    const pastBound = createCaches({ fileLists: 2 * one - 1 }).fileLists;
    pastBound.set("a", list);
    pastBound.set("b", list);
    expect([pastBound.has("a"), pastBound.has("b")]).toEqual([false, true]);
  });

  test("the conditional cache is bounded by bytes, not by a count of entries", () => {
    const cache = conditionalCache(CONDITIONAL_CACHE_BYTES);
    for (let n = 0; n < 5000; n++) cache.set(`key-${n}`, kept(1000)); // 5,000 small answers: far more than 512
    expect(cache.size).toBe(5000);
    const entry = 1000 + "k-1".length + CONDITIONAL_ENTRY_OVERHEAD_BYTES;
    const small = conditionalCache(8 * entry);
    for (let n = 1; n <= 8; n++) small.set(`k-${n}`, kept(1000));
    expect(small.size).toBe(8); // exactly at the bound
    small.set("k-9", kept(1000));
    expect(small.has("k-1")).toBe(false);
    expect(small.size).toBe(8);
    small.set("k-0", kept(1001)); // more than an eighth of the bound: not kept
    expect(small.has("k-0")).toBe(false);
  });
});

describe("caches in use against the simulator", () => {
  let sim: ForgeSimulator;
  let s: Scenario;
  beforeAll(async () => {
    sim = startForgeSimulator();
    s = await createScenario(sim, { keys: generateAppKeys(), extraFiles: 120, reviewers: ["alice"] });
  });
  afterEach(() => { sim.faults.clear(); });
  afterAll(async () => { await sim.stop(); });

  const request = () => ({ installationId: s.installationId, owner: s.org, repo: s.repo, number: s.pullNumber, policyPath: POLICY_PATH, organizationPolicyRepository: ".forge", forgeDirectory: ".forge" });
  const options = { planLookups: (e: Parameters<typeof planLookups>[0], known: Parameters<typeof planLookups>[2]) => planLookups(e, DEFAULT_EVALUATION_SETTINGS, known) };
  const filesPath = () => `/repos/acme/web/pulls/${s.pullNumber}/files`;
  const filesRequested = () => sim.requests.filter((q) => q.path === filesPath()).length;
  const gathered = (r: GatherResult) => {
    if (r.kind !== "gathered") throw new Error("unavailable");
    return r.evidence;
  };
  const filenames = (e: ReturnType<typeof gathered>) => (e.files.complete ? e.files.items.map((f) => f.filename) : e.files.detail);

  test("a pull request's file list is kept for its head and base, and never used for another head or base", async () => {
    const client = clientFor(sim, s);
    const first = gathered(await client.gatherEvidence(request(), options));
    sim.requests.length = 0;
    expect(filenames(gathered(await client.gatherEvidence(request(), options)))).toEqual(filenames(first));
    expect(filesRequested()).toBe(0);

    const pushed = await sim.control.pushToPullRequest({ owner: s.org, repo: s.repo, number: s.pullNumber, files: { "src/pushed.ts": "export {};\n" } });
    sim.requests.length = 0;
    const afterPush = gathered(await client.gatherEvidence(request(), options));
    expect(afterPush.pullRequest.headSha).toBe(pushed.sha);
    expect(filenames(afterPush)).toContain("src/pushed.ts");
    expect(filesRequested()).toBeGreaterThan(0);

    // The base moves (same head): the list is asked for again.
    const pr = sim.control.mustPull(s.org, s.repo, s.pullNumber);
    const base = await sim.control.commit({ owner: s.org, repo: s.repo, branch: "main", files: { "README.md": "# web, moved\n" } });
    pr.baseSha = base.sha;
    sim.requests.length = 0;
    gathered(await client.gatherEvidence(request(), options));
    expect(filesRequested()).toBeGreaterThan(0);
  });

  test("a file list listed while the head moved is neither used nor kept for the head read before it", async () => {
    const client = clientFor(sim, s);
    const pr = sim.control.mustPull(s.org, s.repo, s.pullNumber);
    const before = pr.headSha;
    const truth = filenames(gathered(await client.gatherEvidence(request(), options)));
    // The first page of files is slow; once it is asked for (the pull request was read on the old head), a push moves the
    // head, so the list answers for the new head (as many files, one of another name: the count still agrees).
    sim.injectFault({ kind: "slow", path: filesPath(), page: 1, delayMs: 300, times: 1 });
    const fresh = clientFor(sim, s);
    sim.requests.length = 0;
    const racing = fresh.gatherEvidence(request(), options);
    while (filesRequested() === 0) await Bun.sleep(5);
    await sim.control.pushToPullRequest({ owner: s.org, repo: s.repo, number: s.pullNumber, files: { "src/index.ts": null, "src/raced.ts": "export {};\n" } });
    expect(gathered(await racing).files).toMatchObject({ complete: false, cause: "transient", detail: expect.stringContaining("head commit changed while its files were listed") });
    // Back on the old head (a force-push): the list is asked for again and is the old head's.
    const raced = pr.headSha;
    pr.headSha = before;
    sim.control.state.repo(s.org, s.repo)!.branches.set(pr.headRef, before);
    sim.requests.length = 0;
    expect(filenames(gathered(await fresh.gatherEvidence(request(), options)))).toEqual(truth);
    expect(filesRequested()).toBeGreaterThan(0);
    pr.headSha = raced;
    sim.control.state.repo(s.org, s.repo)!.branches.set(pr.headRef, raced);
  });

  test("directory facts are looked up at every evaluation, however often the same pull request is evaluated", async () => {
    const client = clientFor(sim, s);
    await sim.control.submitReview({ owner: s.org, repo: s.repo, number: s.pullNumber, user: "alice", state: "APPROVED" });
    for (let round = 0; round < 3; round++) {
      sim.requests.length = 0;
      gathered(await client.gatherEvidence(request(), options));
      expect(sim.requests.filter((q) => q.path === "/repos/acme/web/collaborators/alice/permission")).toHaveLength(1);
      expect(sim.requests.filter((q) => q.path === "/orgs/acme/memberships/alice")).toHaveLength(1);
    }
    await sim.control.setCollaborator({ owner: s.org, repo: s.repo, user: "alice", permission: "read" });
    const changed = gathered(await client.gatherEvidence(request(), options));
    expect(changed.directory.collaborators.alice).toEqual({ kind: "found", value: { permission: "read" } });
    await sim.control.setCollaborator({ owner: s.org, repo: s.repo, user: "alice", permission: "write" });
  });

  test("the organization policy is read again when its repository's default branch moves, and only then", async () => {
    const client = clientFor(sim, s);
    gathered(await client.gatherEvidence(request(), options));
    sim.requests.length = 0;
    gathered(await client.gatherEvidence(request(), options));
    expect(sim.requests.filter((q) => q.path.startsWith("/repos/acme/.forge/")).map((q) => [q.path, q.status])).toEqual([["/repos/acme/.forge/commits/HEAD", 304]]);

    const policy = `schema_version = 1\n[[trusted_apps]]\nslug = "docs-review-bot"\napp_id = ${s.botAppId}\n# edited\n`;
    await sim.control.commit({ owner: s.org, repo: ".forge", branch: "main", files: { [POLICY_PATH]: policy } });
    sim.requests.length = 0;
    const after = gathered(await client.gatherEvidence(request(), options));
    expect(after.organizationPolicy).toMatchObject({ kind: "found", text: policy });
    expect(sim.requests.filter((q) => q.path.startsWith("/repos/acme/.forge/")).map((q) => q.status)).toEqual([200, 200]);
  });

  test("within one authority epoch the organization policy's head is asked about at most once a minute; a new epoch asks at once", async () => {
    const client = clientFor(sim, s);
    const forgeRequests = () => sim.requests.filter((q) => q.path.startsWith("/repos/acme/.forge/")).map((q) => q.status);
    const at = (authorityEpoch: number, nowMs: number) => ({ ...options, organizationPolicyReuse: { authorityEpoch, nowMs } });
    gathered(await client.gatherEvidence(request(), at(7, 1_000_000)));
    sim.requests.length = 0;
    gathered(await client.gatherEvidence(request(), at(7, 1_000_000 + ORGANIZATION_POLICY_RECHECK_MS - 1)));
    expect(forgeRequests()).toEqual([]);
    // A push to the policy repository is an authority event: the evaluations after it run at a later epoch, and ask.
    const policy = `schema_version = 1\n[[trusted_apps]]\nslug = "docs-review-bot"\napp_id = ${s.botAppId}\n# epoch\n`;
    await sim.control.commit({ owner: s.org, repo: ".forge", branch: "main", files: { [POLICY_PATH]: policy } });
    const next = gathered(await client.gatherEvidence(request(), at(8, 1_000_001)));
    expect(next.organizationPolicy).toMatchObject({ kind: "found", text: policy });
    expect(forgeRequests()).toEqual([200, 200]);
    // Within the new epoch, once the minute has passed, the head is asked about again (a conditional request).
    sim.requests.length = 0;
    gathered(await client.gatherEvidence(request(), at(8, 1_000_001 + ORGANIZATION_POLICY_RECHECK_MS - 1)));
    expect(forgeRequests()).toEqual([]);
    gathered(await client.gatherEvidence(request(), at(8, 1_000_001 + ORGANIZATION_POLICY_RECHECK_MS)));
    expect(forgeRequests()).toEqual([304]);
    // Without an epoch (explain, tests) it is asked every time.
    sim.requests.length = 0;
    gathered(await client.gatherEvidence(request(), options));
    expect(forgeRequests()).toEqual([304]);
  });

  test("a missing organization policy repository reads as no policy", async () => {
    const e = gathered(await clientFor(sim, s).gatherEvidence({ ...request(), organizationPolicyRepository: "no-such-policy-repository" }, options));
    expect(e.organizationPolicy).toEqual({ kind: "missing" });
  });

  test("the managed check-run list is never asked conditionally: every write of ours changes it", async () => {
    const client = clientFor(sim, s);
    const target = { installationId: s.installationId, owner: s.org, repo: s.repo, headSha: sim.control.mustPull(s.org, s.repo, s.pullNumber).headSha };
    await client.findManagedCheck(target);
    sim.requests.length = 0;
    await client.findManagedCheck(target);
    expect(sim.requests.filter((q) => q.path.endsWith("/check-runs")).map((q) => q.status)).toEqual([200]);
  });
});

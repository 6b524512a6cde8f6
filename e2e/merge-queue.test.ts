import { afterEach, describe, expect, test } from "bun:test";
import { runHistory } from "../server/commands/history.ts";
import { loadConfig } from "../server/config/index.ts";
import type { HistoryPage, MergeGroupRecord, MergeRecord } from "../server/records/schema.ts";
import { all, openStore, type Store } from "../server/store/index.ts";
import { BACKENDS } from "./support/databases.ts";
import { deliveryFor } from "./support/merge-queue.ts";
import { readApi, type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * Merge queues through the running service on the forge simulator, on both backends: the service answers every merge group
 * with its check on the group's commit, the simulator's queue merges on success and ejects on failure.
 */
describe.each(BACKENDS)("merge queue through the service on %s", (backend) => {
  let h: ServiceHarness;
  let reader: Store | undefined;
  afterEach(async () => {
    await reader?.close();
    reader = undefined;
    await h?.stop();
  });

  const CHECK = "Service / approval";
  const api = <T>(path: string) => readApi<T>(h.service.url, path);
  async function start() {
    h = await startServiceHarness(backend);
    h.sim.control.mergeQueues.configure({ owner: h.scenario.org, repo: h.scenario.repo, branch: "main", requiredChecks: [CHECK] });
  }
  const repoArgs = () => ({ owner: h.scenario.org, repo: h.scenario.repo });
  /** A pull request changing `files`, approved by dave (an active member of @acme/core, which owns everything by default). */
  async function approvedPull(name: string, files: Record<string, string>, approvers = ["dave"]) {
    const { sha } = await h.sim.control.commit({ ...repoArgs(), branch: name, files, sender: "erin" });
    const pr = await h.sim.control.openPullRequest({ ...repoArgs(), head: name, author: "erin", title: name });
    await h.waitForCheck(sha, { status: "completed", conclusion: "failure" });
    for (const user of approvers) await h.sim.control.submitReview({ ...repoArgs(), number: pr.number, user, state: "APPROVED" });
    await h.waitForCheck(sha, { status: "completed", conclusion: approvers.length > 0 ? "success" : "failure" });
    return { number: pr.number, head: sha };
  }
  const enqueue = (number: number) => h.sim.control.mergeQueues.enqueue({ ...repoArgs(), number });
  const entries = () => h.sim.control.mergeQueues.entriesOf(h.sim.control.mustRepo(h.scenario.org, h.scenario.repo), "main")!;
  const pull = (number: number) => h.sim.control.mustPull(h.scenario.org, h.scenario.repo, number);
  const merged = (number: number) => pull(number).merged !== undefined;
  const waitForQueue = (what: string, done: () => boolean) => waitUntil(async () => {
    await h.sim.control.mergeQueues.idle();
    return done();
  }, what, 30_000);

  test("a queue of three approved pull requests merges in order, each group's check verified on the group's commit", async () => {
    await start();
    const pulls: { number: number; head: string }[] = [];
    for (const n of [1, 2, 3]) pulls.push(await approvedPull(`queued-${n}`, { [`notes/${n}.md`]: `${n}\n` }));
    const groupHeads: string[] = [];
    for (const p of pulls) groupHeads.push((await enqueue(p.number)).headCommit.oid);
    await waitForQueue("every pull request merged", () => pulls.every((p) => merged(p.number)));
    expect(pulls.map((p) => pull(p.number).merged!.commitSha)).toEqual(groupHeads);
    expect(h.sim.control.mustRepo(h.scenario.org, h.scenario.repo).branches.get("main")).toBe(groupHeads[2]!);
    // A group holds the pull requests still queued when it is judged (one merged before is in its base already).
    for (const [index, sha] of groupHeads.entries()) {
      const [check] = h.checks(sha);
      expect(check).toMatchObject({ status: "completed", conclusion: "success" });
      const count = Number(/^Merge group verified: (\d) pull requests?$/.exec(check!.output.title ?? "")?.[1]);
      expect(count >= 1 && count <= index + 1).toBe(true);
    }
    expect(h.checks(groupHeads[0]!)[0]!.output.title).toBe("Merge group verified: 1 pull request");

    // Each merge through the queue names the merge-group record that verified it, and `service history --commit` explains it.
    const last = pulls[2]!;
    const mergeCommit = pull(last.number).merged!.commitSha;
    let merge: MergeRecord | undefined;
    await waitUntil(async () => {
      merge = (await api<HistoryPage>(`/api/decisions?commit=${mergeCommit}&kind=merge`)).items[0] as MergeRecord | undefined;
      return merge !== undefined;
    }, "the merge record of the last pull request");
    const groupId = merge!.merge_group_id;
    expect(merge).toMatchObject({ pull_request: last.number, head_sha: last.head, unapproved: false });
    expect(groupId).toMatch(/^d\d+$/);
    const group = await api<MergeGroupRecord>(`/api/decisions/${groupId}`);
    expect(group).toMatchObject({ kind: "merge_group", confirmed: true, conclusion: "success", head_sha: groupHeads[2], base_ref: "main", title: h.checks(groupHeads[2]!)[0]!.output.title });
    const own = group.members.at(-1)!;
    const ownDecision = own.decision_id;
    expect(own).toMatchObject({ pull_request: last.number, head_sha: last.head, outcome: "passed", rule_source: "recorded", reason: null });
    expect(ownDecision).toMatch(/^d\d+$/);
    expect(group.members.every((m) => m.outcome === "passed")).toBe(true);
    // The group is on the page's list as one of its kind, naming its pull requests.
    const listed = (await api<HistoryPage>(`/api/decisions?commit=${groupHeads[2]}`)).items.find((i) => i.id === group.id);
    expect(listed).toMatchObject({ kind: "merge_group", pull_requests: group.members.map((m) => m.pull_request) });
    const lines: string[] = [];
    const config = { ...loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:" }, undefined, "database"), database: h.database.target };
    const exit = await runHistory(["--repository", `${h.scenario.org}/${h.scenario.repo}`, "--commit", mergeCommit], config, { stdout: (l) => void lines.push(l), stderr: (l) => void lines.push(l) });
    expect(exit).toBe(0);
    const text = lines.join("\n");
    expect(text).toContain(`merged through the merge queue: the group verified in ${group.id} held this pull request at this head`);
    expect(text).toContain(`merge group ${group.id} on ${h.scenario.org}/${h.scenario.repo} into main: success`);
    expect(text).toContain(`#${last.number} at ${last.head} (decision ${ownDecision}): passed: approved under the rules it merges onto`);
  }, 90_000);

  test("a CODEOWNERS change ahead in the queue fails the pull request behind whose owners it changes and who did not approve; the rest merges", async () => {
    await start();
    // The queue also waits for "ci", so #A is still ahead of #B when #B's group is judged.
    h.sim.control.mergeQueues.configure({ ...repoArgs(), branch: "main", requiredChecks: [CHECK, "ci"] });
    // #A gives notes/ to alice; #B changes notes/ approved by dave only (under the old rules); #C changes other/ (core).
    const a = await approvedPull("owners", { ".forge/CODEOWNERS": "* @acme/core\n/docs/ @acme/docs @alice\n/src/ @bob @acme/core\n/notes/ @alice\n" });
    const b = await approvedPull("notes", { "notes/b.md": "b\n" });
    const c = await approvedPull("other", { "other/c.md": "c\n" });
    const groupA = (await enqueue(a.number)).headCommit.oid;
    const groupB = (await enqueue(b.number)).headCommit.oid;
    await enqueue(c.number);
    await h.waitForCheck(groupB, { status: "completed", conclusion: "failure" });
    const failed = h.checks(groupB)[0]!;
    expect(failed.output.title).toBe(`Pull request #${b.number} may not merge: rules changed ahead of it in the queue`);
    expect(failed.output.summary).toContain(`pull request #${a.number} ahead of it changes the code-owner rules`);
    // The group's record says which pull request was refused, why, and whose change of the rules it was judged under.
    let recorded: MergeGroupRecord | undefined;
    await waitUntil(async () => {
      const item = (await api<HistoryPage>(`/api/decisions?commit=${groupB}`)).items.find((i) => i.kind === "merge_group");
      recorded = item === undefined ? undefined : await api<MergeGroupRecord>(`/api/decisions/${item.id}`);
      return recorded !== undefined;
    }, "the failed group's record");
    expect(recorded).toMatchObject({ conclusion: "failure", title: failed.output.title });
    expect(recorded!.members.find((m) => m.pull_request === b.number)).toMatchObject({ outcome: "refused", reason: "rules_changed_ahead", changed_by: a.number });
    // #B is out; #C's group is built again on #A's, and both pass.
    await waitForQueue("#B ejected", () => entries().map((e) => e.pullRequest.number).join() === `${a.number},${c.number}`);
    const groupC = entries()[1]!.headCommit.oid;
    await h.waitForCheck(groupA, { status: "completed", conclusion: "success" });
    await h.waitForCheck(groupC, { status: "completed", conclusion: "success" });
    await ciPasses(groupA);
    await ciPasses(groupC);
    await waitForQueue("#A and #C merged", () => merged(a.number) && merged(c.number));
    expect(merged(b.number)).toBe(false);
  }, 90_000);

  test("a base whose rules changed since approval fails a pull request whose owners under them did not approve", async () => {
    await start();
    const p = await approvedPull("notes", { "notes/p.md": "p\n" });
    await h.sim.control.commit({ ...repoArgs(), branch: "main", files: { ".forge/CODEOWNERS": "* @acme/core\n/notes/ @alice\n" } });
    const group = (await enqueue(p.number)).headCommit.oid;
    await waitForQueue("the pull request ejected", () => entries().length === 0);
    expect(merged(p.number)).toBe(false);
    expect(h.checks(group)[0]).toMatchObject({ conclusion: "failure", output: { title: `Pull request #${p.number} may not merge: rules changed on its base since approval` } });
  }, 90_000);

  /** A queue waiting on a second required check ("ci") too: the group's check is judged before the queue may merge it. */
  async function queueWaitingForCi(): Promise<{ first: { number: number; head: string }; second: { number: number; head: string }; groups: string[] }> {
    h.sim.control.mergeQueues.configure({ ...repoArgs(), branch: "main", requiredChecks: [CHECK, "ci"] });
    const first = await approvedPull("first", { "notes/1.md": "1\n" });
    const second = await approvedPull("second", { "notes/2.md": "2\n" });
    const groups = [(await enqueue(first.number)).headCommit.oid, (await enqueue(second.number)).headCommit.oid];
    for (const group of groups) await h.waitForCheck(group, { status: "completed", conclusion: "success" });
    return { first, second, groups };
  }
  /** The "ci" check on a group's commit, as another App of the forge would write it. */
  async function ciPasses(group: string) {
    const other = h.sim.control.state;
    const id = other.nextId("check");
    const repo = h.sim.control.mustRepo(h.scenario.org, h.scenario.repo);
    const run = { id, appId: h.scenario.botAppId, repoId: repo.id, name: "ci", headSha: group, status: "completed" as const, conclusion: "success", output: { title: null, summary: null, text: null }, startedAt: null, completedAt: null, externalId: null, detailsUrl: null, suiteId: other.nextId("suite") };
    other.checkRuns.set(id, run);
    h.sim.control.mergeQueues.checkRunChanged(run);
    await h.sim.control.mergeQueues.idle();
  }

  test("an approval dismissed after queueing fails the group again with its reason; the rest of the queue merges", async () => {
    await start();
    const { first, second, groups } = await queueWaitingForCi();
    const review = h.sim.control.mustPull(h.scenario.org, h.scenario.repo, first.number).reviews.find((r) => r.userLogin === "dave")!;
    await h.sim.control.dismissReview({ ...repoArgs(), number: first.number, reviewId: review.id });
    await h.waitForCheck(groups[0]!, { status: "completed", conclusion: "failure" }, 30_000);
    expect(h.checks(groups[0]!)[0]!.output.title).toBe(`Pull request #${first.number} may not merge: not approved`);
    await waitForQueue("#1 ejected and #2's group rebuilt", () => entries().length === 1 && entries()[0]!.headCommit.oid !== groups[1]);
    const rebuilt = entries()[0]!.headCommit.oid;
    await h.waitForCheck(rebuilt, { status: "completed", conclusion: "success" });
    await ciPasses(rebuilt);
    await waitForQueue("#2 merged", () => merged(second.number));
    expect(merged(first.number)).toBe(false);
  }, 90_000);

  test("a push to a queued pull request after its group was verified fails the group again; the rest of the queue merges", async () => {
    await start();
    const { first, second, groups } = await queueWaitingForCi();
    await h.sim.control.pushToPullRequest({ ...repoArgs(), number: first.number, files: { "notes/1.md": "changed\n" } });
    await h.waitForCheck(groups[0]!, { status: "completed", conclusion: "failure" }, 30_000);
    expect(h.checks(groups[0]!)[0]!.output.title).toBe(`Pull request #${first.number} may not merge: not approved`);
    await waitForQueue("#1 ejected and #2's group rebuilt", () => entries().length === 1 && entries()[0]!.pullRequest.number === second.number && entries()[0]!.headCommit.oid !== groups[1]);
    const rebuilt = entries()[0]!.headCommit.oid;
    await h.waitForCheck(rebuilt, { status: "completed", conclusion: "success" });
    await ciPasses(rebuilt);
    await waitForQueue("#2 merged", () => merged(second.number));
    expect(merged(first.number)).toBe(false);
  }, 90_000);

  test("a forge outage while a group is judged is retried, and the group then passes", async () => {
    await start();
    const p = await approvedPull("notes", { "notes/p.md": "p\n" });
    h.sim.injectFault({ kind: "status", status: 503, path: "/graphql", times: 2 });
    const group = (await enqueue(p.number)).headCommit.oid;
    await waitForQueue("the pull request merged", () => merged(p.number));
    expect(h.checks(group)[0]).toMatchObject({ conclusion: "success" });
    expect(h.sim.requests.filter((r) => r.path === "/graphql").map((r) => r.status)).toEqual([503, 503, 200]);
  }, 90_000);

  test("a group's check is written once, created with its verdict", async () => {
    await start();
    h.sim.control.mergeQueues.configure({ ...repoArgs(), branch: "main", requiredChecks: [CHECK, "ci"] });
    const p = await approvedPull("notes", { "notes/p.md": "p\n" });
    await h.waitForDrainedQueue();
    const seen = h.sim.requests.length;
    const group = (await enqueue(p.number)).headCommit.oid;
    await h.waitForCheck(group, { status: "completed", conclusion: "success" });
    await h.waitForDrainedQueue();
    const checkWrites = h.sim.requests.slice(seen).filter((r) => r.method !== "GET" && /\/check-runs/.test(r.path)).map((r) => r.method);
    expect(checkWrites).toEqual(["POST"]);
    expect(h.sim.requests.slice(seen).filter((r) => r.path === "/graphql")).toHaveLength(1);
  }, 90_000);

  test("a redelivered checks_requested does nothing new", async () => {
    await start();
    reader = openStore(h.database.target);
    const store = reader;
    h.sim.control.mergeQueues.configure({ ...repoArgs(), branch: "main", requiredChecks: [CHECK, "ci"] });
    const p = await approvedPull("notes", { "notes/p.md": "p\n" });
    const group = (await enqueue(p.number)).headCommit.oid;
    await h.waitForCheck(group, { status: "completed", conclusion: "success" });
    await h.waitForDrainedQueue();
    const writes = () => h.sim.requests.filter((r) => r.method !== "GET").length;
    const before = writes();
    const delivery = deliveryFor(h.sim, "merge_group", group);
    const again = await fetch(`${h.service.url}/webhooks/forge`, { method: "POST", headers: delivery.headers, body: delivery.body as BodyInit });
    expect(await again.json()).toEqual({ accepted: false, queued: false });
    await h.waitForDrainedQueue();
    expect(writes()).toBe(before);
    const rows = await store.execute(() => all("select head_sha from jobs where kind = 'merge_group'"));
    expect(rows).toEqual([]);
    expect(h.checks(group)).toHaveLength(1);
  }, 90_000);
});

import { afterEach, describe, expect, test } from "bun:test";
import type { DecisionRecord, HistoryPage, HistorySummary, MergeRecord } from "../server/records/schema.ts";
import { BACKENDS } from "./support/databases.ts";
import { readApi, type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * Decision records end to end (issue 28 items 1-3): the service against the forge simulator publishes checks and sees merges;
 * GET /api/decisions and GET /api/decisions/{id} answer what it recorded, an approved merge naming its decision and an
 * unapproved one found by `unapproved=true` and by its merge commit.
 */
describe.each(BACKENDS)("decision history through the operator routes on %s", (backend) => {
  let h: ServiceHarness | null = null;
  afterEach(async () => {
    await h?.stop();
    h = null;
  });

  const api = <T>(path: string) => readApi<T>(h!.service.url, path);
  const list = (query: string) => api<HistoryPage>(`/api/decisions?${query}`);
  const until = async (query: string, found: (items: readonly HistorySummary[]) => boolean, what: string): Promise<readonly HistorySummary[]> => {
    let items: readonly HistorySummary[] = [];
    await waitUntil(async () => found((items = (await list(query)).items)), what);
    return items;
  };

  test("a published success and its merge, and a merge without approval, are on the routes as the service recorded them", async () => {
    h = await startServiceHarness(backend);
    const { sim, scenario } = h;
    const repository = `${scenario.org}/${scenario.repo}`;
    const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
    for (const user of ["alice", "bob", "dave"]) await sim.control.submitReview({ ...pr, user, state: "APPROVED" });
    await h.waitForCheck(scenario.headSha, { status: "completed", conclusion: "success" });

    const decisions = await until(`repository=${repository.toUpperCase()}&pull=${pr.number}&kind=decision`, (items) => items.some((i) => i.kind === "decision" && i.conclusion === "success" && i.confirmed), "a confirmed success record");
    const success = decisions.find((i) => i.kind === "decision" && i.conclusion === "success")!;
    expect(success).toMatchObject({ head_sha: scenario.headSha, repository: { full_name: repository }, pull_request: pr.number });
    const record = await api<DecisionRecord>(`/api/decisions/${success.id}`);
    expect(record).toMatchObject({ id: success.id, kind: "decision", confirmed: true, conclusion: "success", head_sha: scenario.headSha, base_sha: scenario.baseSha });
    expect(record.codeowners).toMatchObject({ path: ".forge/CODEOWNERS", blob_sha: expect.stringMatching(/^[0-9a-f]{40}$/) });
    expect(record.owner_sets.length).toBeGreaterThan(0);
    expect(record.owner_sets.every((set) => set.status === "satisfied" && set.satisfied_by.length > 0)).toBe(true);

    const merged = await sim.control.mergePullRequest({ ...pr, by: "bob" });
    const mergeCommit = merged.merged!.commitSha;
    const [merge] = await until(`commit=${mergeCommit}`, (items) => items.length === 1, "the merge record by its merge commit");
    expect(merge).toMatchObject({ kind: "merge", merge_commit_sha: mergeCommit, head_sha: scenario.headSha, decision_id: success.id, decision_conclusion: "success", unapproved: false, merged_by: { login: "bob" } });

    // A second pull request nobody approved: the service publishes failure, then an administrator merges it anyway.
    await sim.control.commit({ owner: scenario.org, repo: scenario.repo, branch: "bypass", files: { "src/bypass.ts": "export const b = 1;\n" }, sender: "erin" });
    const other = await sim.control.openPullRequest({ owner: scenario.org, repo: scenario.repo, head: "bypass", author: "erin", title: "Bypass" });
    await h.waitForCheck(other.headSha, { status: "completed", conclusion: "failure" });
    await until(`repository=${repository}&pull=${other.number}`, (items) => items.some((i) => i.kind === "decision" && i.confirmed), "the failure record");
    const bypass = await sim.control.mergePullRequest({ owner: scenario.org, repo: scenario.repo, number: other.number, by: "bob" });
    const [unapproved] = await until("unapproved=true", (items) => items.length === 1, "the unapproved merge");
    expect(unapproved).toMatchObject({ kind: "merge", pull_request: other.number, merge_commit_sha: bypass.merged!.commitSha, unapproved: true, decision_conclusion: "failure" });
    const whole = await api<MergeRecord>(`/api/decisions/${unapproved!.id}`);
    expect(whole).toMatchObject({ id: unapproved!.id, installation_id: scenario.installationId, unapproved: true, recovered: false });

    // Newest first across both kinds, and the pages of two join up to the whole list (once the service has finished its work:
    // a later publication adds a record, and a retried unconfirmed one moves to its new time).
    await h.waitForDrainedQueue();
    const items = (await list("limit=100")).items;
    const times = items.map((i) => Date.parse(i.kind === "merge" ? i.recorded_at : i.published_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const all = items.map((i) => i.id);
    expect(all).toContain(unapproved!.id);
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: HistoryPage = await list(`limit=2${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`);
      paged.push(...page.items.map((i) => i.id));
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect(paged).toEqual(all);
  }, 60_000);
});

import { afterEach, describe, expect, test } from "bun:test";
import { runHistory } from "../server/commands/history.ts";
import { loadConfig } from "../server/config/index.ts";
import type { DecisionRecord, HistoryPage, HistoryRecord, HistorySummary, MergeRecord } from "../server/records/schema.ts";
import { POLICY_PATH } from "../server/simulator/scenario.ts";
import { BACKENDS } from "./support/databases.ts";
import { readApi, type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * A break-glass override on the record (issue 29 item 4, DESIGN 3.10/3.11), in-process on both backends against the forge
 * simulator: the owners approve the first head (an ordinary success), a push leaves the next head failing, frank of the team
 * sre overrides and the check turns green, bob merges. The merge record says it merged on an override and names the
 * override's decision; `overrides=true` lists that decision and merge and not the ordinary success.
 */
const REASON = "payments are down; the fix is one line and the owners are asleep";

describe.each(BACKENDS)("a merge of an overridden head on %s", (backend) => {
  let h: ServiceHarness | null = null;
  afterEach(async () => {
    await h?.stop();
    h = null;
  });

  const api = <T>(path: string) => readApi<T>(h!.service.url, path);
  const until = async (query: string, found: (items: readonly HistorySummary[]) => boolean, what: string): Promise<readonly HistorySummary[]> => {
    let items: readonly HistorySummary[] = [];
    await waitUntil(async () => found((items = (await api<HistoryPage>(`/api/decisions?${query}`)).items)), what);
    return items;
  };

  test("the merge record of an overridden head has break_glass, is not unapproved, and names the override's decision; overrides=true lists only the override's records", async () => {
    h = await startServiceHarness(backend);
    const { sim, scenario } = h;
    const repository = `${scenario.org}/${scenario.repo}`;
    const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
    sim.control.createUser({ login: "frank" });
    await sim.control.setOrgMembership({ org: scenario.org, user: "frank", state: "active" });
    sim.control.createTeam({ org: scenario.org, slug: "sre", privacy: "secret" });
    await sim.control.setTeamMembership({ org: scenario.org, team: "sre", user: "frank", state: "active" });
    const organizationPolicy = `schema_version = 1\n[[trusted_apps]]\nslug = "docs-review-bot"\napp_id = ${scenario.botAppId}\n[break_glass]\nteams = ["sre"]\nmin_reason_length = 30\n`;
    await sim.control.commit({ owner: scenario.org, repo: ".forge", branch: "main", files: { [POLICY_PATH]: organizationPolicy } });

    // An ordinary success: the owners approve the first head.
    for (const user of ["alice", "bob", "dave"]) await sim.control.submitReview({ ...pr, user, state: "APPROVED" });
    await h.waitForCheck(scenario.headSha, { status: "completed", conclusion: "success" });
    const [ordinary] = await until(`repository=${repository}&pull=${pr.number}&commit=${scenario.headSha}&kind=decision`, (items) => items.some((i) => i.kind === "decision" && i.conclusion === "success" && i.confirmed), "the ordinary success record");
    expect(ordinary).toMatchObject({ kind: "decision", conclusion: "success", break_glass: false });

    // A push leaves the new head failing (the approvals were of the old head); frank overrides it.
    const { sha: head } = await sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "export const a = 1;\n" } });
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
    const review = await sim.control.submitReview({ ...pr, user: "frank", state: "APPROVED", body: `break-glass: ${REASON}\n\nIncident INC-42.` });
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    const [override] = await until(`commit=${head}&kind=decision`, (items) => items.some((i) => i.kind === "decision" && i.conclusion === "success" && i.confirmed), "the override's confirmed success record");
    expect(override).toMatchObject({ kind: "decision", head_sha: head, conclusion: "success", break_glass: true, confirmed: true });
    const decision = await api<DecisionRecord>(`/api/decisions/${override!.id}`);
    expect(decision.break_glass).toMatchObject({ review_id: review.id, reviewer_login: "frank", team: "sre", reason: REASON });
    expect(decision.break_glass!.unsatisfied_owner_sets.length).toBeGreaterThan(0);
    for (const index of decision.break_glass!.unsatisfied_owner_sets) {
      expect(decision.owner_sets[index]!.satisfied_by.map((a) => [a.rule, a.reviewer_login, a.via])).toContainEqual(["break_glass", "frank", "sre"]);
    }

    // bob merges the overridden head: the merge record carries the override and names its decision.
    const merged = await sim.control.mergePullRequest({ ...pr, by: "bob" });
    const mergeCommit = merged.merged!.commitSha;
    const [merge] = await until(`commit=${mergeCommit}`, (items) => items.length === 1, "the merge record by its merge commit");
    expect(merge).toMatchObject({ kind: "merge", merge_commit_sha: mergeCommit, head_sha: head, decision_id: override!.id, decision_conclusion: "success", unapproved: false, break_glass: true });
    const whole = await api<MergeRecord>(`/api/decisions/${merge!.id}`);
    expect(whole).toMatchObject({ id: merge!.id, kind: "merge", head_sha: head, merge_commit_sha: mergeCommit, decision_id: override!.id, unapproved: false, break_glass: true, merged_by: { login: "bob" } });

    // Only the override's records carry the flag: the list with overrides=true is exactly its decision(s) and its merge.
    await h.waitForDrainedQueue();
    const overrides = (await api<HistoryPage>("/api/decisions?overrides=true&limit=100")).items;
    const ids = overrides.map((i) => i.id);
    expect(ids).toContain(override!.id);
    expect(ids).toContain(merge!.id);
    expect(ids).not.toContain(ordinary!.id);
    expect(overrides.every((i) => i.break_glass)).toBe(true);
    expect(overrides.every((i) => i.head_sha === head)).toBe(true);
    const everything = (await api<HistoryPage>("/api/decisions?limit=100")).items;
    expect(everything.filter((i) => !i.break_glass).map((i) => i.id)).toContain(ordinary!.id);

    // `service history --repository ... --overrides` lists the same records from the database (issue 29 item 4).
    const stdout: string[] = [];
    const config = { ...loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:" }, undefined, "database"), database: h.database.target };
    expect(await runHistory(["--repository", repository, "--overrides", "--json"], config, { stdout: (l) => void stdout.push(l), stderr: () => {} })).toBe(0);
    const listed = (JSON.parse(stdout.join("\n")) as { records: HistoryRecord[] }).records.map((r) => r.id);
    expect(listed.sort()).toEqual(ids.sort());
  }, 60_000);
});

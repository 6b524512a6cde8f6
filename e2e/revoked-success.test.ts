import { afterEach, describe, expect, test } from "bun:test";
import { Writable } from "node:stream";
import { runHistory, runHistoryExport } from "../server/commands/history.ts";
import { loadConfig } from "../server/config/index.ts";
import type { HistoryPage, HistoryRecord, MergeRecord } from "../server/records/schema.ts";
import { BACKENDS } from "./support/databases.ts";
import { readApi, type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * A revoked success is not approval (issue 33 item 2), in-process on both backends against the forge simulator: the owners
 * approve, the check succeeds; then the service resets the check to in_progress (an approval dismissed, an owner leaving
 * the owning team, a new pull request on the same head, a push back to that head) while its re-evaluation is held back (the
 * forge fails the reviews listing), and an administrator merges in that window. The merge is unapproved: in `service
 * history`, in `service history export` and in service_unapproved_merges_total, naming the success the reset withdrew.
 */
type ResetPath = {
  readonly name: string;
  /** Makes the service reset the check on the pull request's head `headSha`, which showed success; answers the head at merge. */
  readonly reset: (h: ServiceHarness, headSha: string) => Promise<string>;
};

const PATHS: readonly ResetPath[] = [
  {
    name: "an approval dismissed (the fast path)",
    async reset(h) {
      const { sim, scenario } = h;
      const pr = sim.control.mustPull(scenario.org, scenario.repo, scenario.pullNumber);
      const approval = pr.reviews.find((review) => review.userLogin === "bob" && review.state === "APPROVED")!;
      await sim.control.dismissReview({ owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber, reviewId: approval.id });
      return pr.headSha;
    },
  },
  {
    name: "an owner leaving the owning team (authority fan-out)",
    async reset(h, headSha) {
      await h.sim.control.setTeamMembership({ org: h.scenario.org, team: "core", user: "dave", state: null });
      return headSha;
    },
  },
  {
    name: "a new pull request on the same head (shared head)",
    async reset(h, headSha) {
      await h.sim.control.openPullRequest({ owner: h.scenario.org, repo: h.scenario.repo, head: "twin", headSha, author: "erin", title: "Twin" });
      return headSha;
    },
  },
  {
    name: "a push, then a push back to the approved head",
    async reset(h, headSha) {
      const { sim, scenario } = h;
      const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
      const { sha } = await sim.control.pushToPullRequest({ ...pr, files: { "src/later.ts": "export const later = 1;\n" } });
      await h.waitForCheck(sha, { status: "in_progress" });
      await sim.control.forcePushPullRequest({ ...pr, sha: headSha });
      return headSha;
    },
  },
];

describe.each(BACKENDS)("a merge after the service withdrew its success, on %s", (backend) => {
  let h: ServiceHarness | null = null;
  afterEach(async () => {
    h?.sim.faults.clear();
    await h?.stop();
    h = null;
  });

  const api = <T>(path: string) => readApi<T>(h!.service.url, path);
  const unapprovedMetric = async () => {
    const text = await (await fetch(`${h!.service.url}/metrics`)).text();
    return Number(/^service_unapproved_merges_total (\d+)$/m.exec(text)?.[1] ?? "NaN");
  };

  for (const path of PATHS) {
    test(`${path.name}: a merge before the next success is unapproved in the history, the export and the metric`, async () => {
      h = await startServiceHarness(backend);
      const { sim, scenario } = h;
      const repository = `${scenario.org}/${scenario.repo}`;
      const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
      for (const user of ["alice", "bob", "dave"]) await sim.control.submitReview({ ...pr, user, state: "APPROVED" });
      await h.waitForCheck(scenario.headSha, { status: "completed", conclusion: "success" });
      let success = "";
      await waitUntil(async () => {
        const items = (await api<HistoryPage>(`/api/decisions?commit=${scenario.headSha}&kind=decision`)).items;
        success = items.find((i) => i.kind === "decision" && i.conclusion === "success" && i.confirmed)?.id ?? "";
        return success !== "";
      }, "the confirmed success record");

      // Re-evaluation is held back: every listing of the pull request's reviews fails until the end of the test.
      sim.faults.add({ kind: "status", status: 503, path: `/repos/${scenario.org}/${scenario.repo}/pulls/${scenario.pullNumber}/reviews` });
      const head = await path.reset(h, scenario.headSha);
      await h.waitForCheck(head, { status: "in_progress" });

      const merged = await sim.control.mergePullRequest({ ...pr, by: "bob" });
      const mergeCommit = merged.merged!.commitSha;
      let merge: MergeRecord | undefined;
      await waitUntil(async () => {
        const item = (await api<HistoryPage>(`/api/decisions?commit=${mergeCommit}&kind=merge`)).items[0];
        merge = item?.kind === "merge" ? await api<MergeRecord>(`/api/decisions/${item.id}`) : undefined;
        return merge !== undefined && merge.enrollment !== "pending";
      }, "the merge record with its enrollment read");
      expect(merge).toMatchObject({ head_sha: head, decision_id: success, decision_conclusion: "success", unapproved: true, enrollment: "enrolled" });
      // The reset that withdrew the success, before the merge was recorded.
      const resetAt = Date.parse(merge!.reset_at ?? "");
      expect(resetAt).toBeLessThanOrEqual(Date.parse(merge!.recorded_at));
      expect(await unapprovedMetric()).toBe(1);

      const config = { ...loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:" }, undefined, "database"), database: h.database.target };
      const quiet = { stderr: () => {} };
      const listed: string[] = [];
      expect(await runHistory(["--repository", repository, "--commit", mergeCommit], config, { stdout: (l) => void listed.push(l), ...quiet })).toBe(0);
      const text = listed.join("\n");
      expect(text).toContain(`merge ${merge!.id} of ${repository}#${pr.number}`);
      expect(text).toContain("UNAPPROVED MERGE");
      expect(text).toContain(`the success ${success} was withdrawn: the service reset the check to in progress at ${merge!.reset_at}`);

      const chunks: string[] = [];
      const exportStream = new Writable({ write: (chunk, _encoding, done) => { chunks.push(String(chunk)); done(); } });
      expect(await runHistoryExport(["--repository", repository, "--unapproved"], config, { stdout: () => {}, ...quiet }, { exportStream })).toBe(0);
      const exported = chunks.join("").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as HistoryRecord);
      expect(exported.map((r) => [r.id, r.kind === "merge" && r.unapproved, r.kind === "merge" && r.reset_at])).toEqual([[merge!.id, true, merge!.reset_at]]);
    }, 60_000);
  }
});

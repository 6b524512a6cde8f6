import { afterEach, describe, expect, test } from "bun:test";
import { Writable } from "node:stream";
import { runHistory, runHistoryExport } from "../server/commands/history.ts";
import { loadConfig } from "../server/config/index.ts";
import type { HistoryPage, HistoryRecord, MergeRecord } from "../server/records/schema.ts";
import { BACKENDS } from "./support/databases.ts";
import { readApi, type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * Enrollment (issue 33 item 3), in-process on both backends against the forge simulator: a merge in a repository whose policy
 * at the merge's base commit does not enable the service is recorded `not_enrolled`, is not unapproved and is not counted by
 * service_unapproved_merges_total; a merge nobody approved in the enabled repository is unapproved and counted. Both show so
 * in `service history` and `service history export`.
 */
describe.each(BACKENDS)("merges in repositories that do or do not enable the service, on %s", (backend) => {
  let h: ServiceHarness | null = null;
  afterEach(async () => {
    await h?.stop();
    h = null;
  });

  const api = <T>(path: string) => readApi<T>(h!.service.url, path);
  const unapprovedMetric = async () => Number(/^service_unapproved_merges_total (\d+)$/m.exec(await (await fetch(`${h!.service.url}/metrics`)).text())?.[1] ?? "NaN");
  /** The merge record of a merge commit once its enrollment is read. */
  const settledMerge = async (mergeCommit: string): Promise<MergeRecord> => {
    let merge: MergeRecord | undefined;
    await waitUntil(async () => {
      const item = (await api<HistoryPage>(`/api/decisions?commit=${mergeCommit}&kind=merge`)).items[0];
      merge = item?.kind === "merge" ? await api<MergeRecord>(`/api/decisions/${item.id}`) : undefined;
      return merge !== undefined && merge.enrollment !== "pending";
    }, `the merge of ${mergeCommit.slice(0, 8)} with its enrollment read`);
    return merge!;
  };

  test("a merge where the service is not enabled is not_enrolled and not counted; an unapproved merge where it is enabled is counted", async () => {
    h = await startServiceHarness(backend);
    const { sim, scenario } = h;
    const org = scenario.org;
    // A repository of the same installation without a repository policy: the service does not check it.
    sim.control.createRepository({ owner: org, name: "legacy", files: { "README.md": "legacy\n" } });
    await sim.control.commit({ owner: org, repo: "legacy", branch: "change", files: { "src/x.ts": "export {};\n" }, sender: "erin" });
    const legacy = await sim.control.openPullRequest({ owner: org, repo: "legacy", head: "change", author: "erin" });
    const legacyMerge = await sim.control.mergePullRequest({ owner: org, repo: "legacy", number: legacy.number, by: "bob" });
    const notEnrolled = await settledMerge(legacyMerge.merged!.commitSha);
    expect(notEnrolled).toMatchObject({ repository: { full_name: `${org}/legacy` }, enrollment: "not_enrolled", unapproved: false, base_sha: legacy.baseSha });

    // The enabled repository: nobody approved, the check fails, an administrator merges anyway.
    await sim.control.commit({ owner: org, repo: scenario.repo, branch: "bypass", files: { "src/bypass.ts": "export const b = 1;\n" }, sender: "erin" });
    const other = await sim.control.openPullRequest({ owner: org, repo: scenario.repo, head: "bypass", author: "erin" });
    await h.waitForCheck(other.headSha, { status: "completed", conclusion: "failure" });
    const bypass = await sim.control.mergePullRequest({ owner: org, repo: scenario.repo, number: other.number, by: "bob" });
    const unapproved = await settledMerge(bypass.merged!.commitSha);
    expect(unapproved).toMatchObject({ enrollment: "enrolled", unapproved: true });
    expect(await unapprovedMetric()).toBe(1);
    const unapprovedOnly = (await api<HistoryPage>("/api/decisions?unapproved=true")).items.map((i) => i.id);
    expect(unapprovedOnly).toEqual([unapproved.id]);

    const config = { ...loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:" }, undefined, "database"), database: h.database.target };
    const quiet = { stderr: () => {} };
    const listed: string[] = [];
    expect(await runHistory(["--repository", `${org}/legacy`, "--commit", legacyMerge.merged!.commitSha], config, { stdout: (l) => void listed.push(l), ...quiet })).toBe(0);
    expect(listed.join("\n")).toContain(`NOT ENROLLED: the repository policy at the base commit ${legacy.baseSha} does not enable the service`);
    expect(listed.join("\n")).not.toContain("UNAPPROVED");

    const chunks: string[] = [];
    const exportStream = new Writable({ write: (chunk, _encoding, done) => { chunks.push(String(chunk)); done(); } });
    expect(await runHistoryExport([], config, { stdout: () => {}, ...quiet }, { exportStream })).toBe(0);
    const merges = chunks.join("").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as HistoryRecord).filter((r): r is MergeRecord => r.kind === "merge");
    expect(merges.map((m) => [m.id, m.enrollment, m.unapproved])).toEqual([[notEnrolled.id, "not_enrolled", false], [unapproved.id, "enrolled", true]]);
  }, 60_000);
});

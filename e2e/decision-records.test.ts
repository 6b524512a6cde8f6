import { afterEach, describe, expect, test } from "bun:test";
import { decodeRecordBody } from "../server/records/codec.ts";
import { all, openStore, type Store } from "../server/store/index.ts";
import { BACKENDS } from "./support/databases.ts";
import { type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * Decision records and merge records through the running service (DESIGN 3.10, issue 28 items 1 and 2): webhooks from the
 * forge simulator, the real worker and ingress, on both backends.
 */
describe.each(BACKENDS)("decision records through the service on %s", (backend) => {
  let h: ServiceHarness;
  let reader: Store | undefined;
  afterEach(async () => {
    await reader?.close();
    reader = undefined;
    await h?.stop();
  });

  test("each published conclusion leaves a confirmed record; the merge of the approved head names its success and is not unapproved", async () => {
    h = await startServiceHarness(backend);
    reader = openStore(h.database.target);
    const store = reader;
    const pr = { owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber };
    const { sha: head } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
    for (const user of ["alice", "bob"]) await h.sim.control.submitReview({ ...pr, user, state: "APPROVED" });
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    const records = () => store.execute(() => all<{ id: number; conclusion: string; confirmed_at_ms: number | null; body: Uint8Array }>("select id, conclusion, confirmed_at_ms, body from decision_records where head_sha = $1 order by id", head));
    await waitUntil(async () => (await records()).some((r) => r.conclusion === "success" && r.confirmed_at_ms !== null), "a confirmed success record");
    const success = (await records()).filter((r) => r.conclusion === "success").at(-1)!;
    const body = decodeRecordBody(new Uint8Array(success.body));
    expect(body.owner_sets.flatMap((set) => set.satisfied_by.map((a) => a.reviewer_login)).sort()).toEqual(["alice", "bob"]);
    expect((await records()).every((r) => r.confirmed_at_ms !== null)).toBe(true);

    const merged = await h.sim.control.mergePullRequest({ ...pr, by: "bob", at: new Date().toISOString() });
    const merges = () => store.execute(() => all<{ decision_id: number | null; unapproved: unknown; merge_commit_sha: string; merged_by_login: string }>("select decision_id, unapproved, merge_commit_sha, merged_by_login from merge_records"));
    await waitUntil(async () => (await merges()).length === 1, "the merge record");
    const [merge] = await merges();
    expect(merge).toMatchObject({ merge_commit_sha: merged.merged!.commitSha, merged_by_login: "bob" });
    expect(Number(merge!.decision_id)).toBe(Number(success.id));
    expect(merge!.unapproved === true || Number(merge!.unapproved) === 1).toBe(false);
    expect(await (await fetch(`${h.service.url}/metrics`)).text()).toMatch(/^service_unapproved_merges_total 0$/m);
  }, 60_000);
});

import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS } from "./support/databases.ts";
import { type ReconcilerRig, startReconcilerRig, stopReconcilerRig } from "./support/forge-rig.ts";
import { waitUntil } from "./support/service.ts";
import { all, supersedeAndQueue } from "../server/store/index.ts";

/**
 * The files list belongs to the evaluated head (issue 25 item 8): its pages are separate requests, and a push between two
 * of them mixes two heads while the count can still match. No webhook reaches the service in the rig, so nothing else
 * tells it about the push: only the proof of the list (the pull request read after it) can.
 */
describe.each(BACKENDS)("a files list proven against its head on %s", (backend) => {
  let rig: ReconcilerRig | undefined;
  afterEach(async () => {
    if (rig) await stopReconcilerRig(rig);
    rig = undefined;
  });

  test("a push between two pages of the files list publishes nothing on the old head; the retry evaluates the new head", async () => {
    rig = await startReconcilerRig(backend, [], { pollMs: 20, retryCapSeconds: 1 });
    const { sim } = rig;
    const files = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`src/moving/file-${String(i).padStart(3, "0")}.ts`, `export const m = ${i};\n`]));
    await sim.control.commit({ owner: "acme", repo: "web", branch: "moving", files, sender: "erin" });
    const pr = await sim.control.openPullRequest({ owner: "acme", repo: "web", head: "moving", author: "erin" });
    const head1 = pr.headSha;
    // Page 2 is answered at a new head that drops the first file and adds a last one: page 1 of the old head and page 2 of
    // the new one still add up to the 150 files the pull request read before the list announced.
    sim.injectFault({ kind: "push", path: `/repos/acme/web/pulls/${pr.number}/files`, page: 2, times: 1, files: { "src/moving/file-000.ts": null, "src/moving/zz-late.ts": "1\n" } });
    // Its evaluation queued alone (no head invalidation runs beside it to fence the write for another reason).
    const repository = { installationId: rig.scenario.installationId, repositoryId: sim.control.mustRepo("acme", "web").id, owner: "acme", name: "web" };
    await rig.store.execute(() => supersedeAndQueue(repository, [{ number: pr.number, headSha: head1 }], Date.now()));
    rig.worker.wake();
    await waitUntil(() => sim.control.mustPull("acme", "web", pr.number).headSha !== head1, "the push between the pages");
    const head2 = sim.control.mustPull("acme", "web", pr.number).headSha;
    const checks = (headSha: string) => sim.control.checkRuns({ owner: "acme", repo: "web", headSha }) as Array<{ status: string; conclusion: string | null }>;
    const completed = (headSha: string) => checks(headSha).filter((run) => run.status === "completed");
    await waitUntil(() => completed(head1).length + completed(head2).length > 0, `a completed check\n${rig!.logs.slice(-8).join("")}`, 20_000);
    await waitUntil(async () => (await rig!.store.execute(function* () { return yield* all("select id from jobs"); })).length === 0, "the queue to drain", 20_000);
    expect(completed(head1)).toEqual([]);
    expect(completed(head2)).toHaveLength(1);
    expect(rig.logs.some((line) => line.includes("changed while its files were listed"))).toBe(true);
  }, 60_000);
});

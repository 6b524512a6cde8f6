import { afterEach, describe, expect, test } from "bun:test";
import { countsSince } from "../server/simulator/request-counter.ts";
import { BACKENDS } from "./support/databases.ts";
import { type ServiceHarness, startServiceHarness } from "./support/service.ts";

/**
 * The change preview end to end (issue 19 item 2), in-process on both backends against the forge simulator: a pull request
 * that edits CODEOWNERS gets the preview after the decision, which still uses the base commit; a failed head read leaves a
 * note and the same decision; a pull request that changes no policy file reads nothing more.
 */
const CONTENTS = "GET /repos/{owner}/{repo}/contents/{path}";
const PREVIEW_HEADING = "### Preview\\: this pull request\\'s policy change";
/** Every changed path goes to @carol, who has read permission only, and line 3 is invalid: the merged file would fail. */
const HEAD_CODEOWNERS = "* @carol\n/src/ @carol\n/x not-an-owner\n";

describe.each(BACKENDS)("change preview on %s", (backend) => {
  let h: ServiceHarness;
  afterEach(async () => h?.stop());

  const drained = () => h.waitForDrainedQueue();
  const contentReads = async (act: () => Promise<void>) => {
    const before = h.sim.counter.snapshot();
    const logged = h.sim.requests.length;
    await act();
    await drained();
    const counts = countsSince(before, h.sim.counter.snapshot()).routes[CONTENTS] ?? {};
    return { count: Object.values(counts).reduce((sum, n) => sum + n, 0), requests: h.sim.requests.slice(logged).filter((r) => r.path.startsWith("/repos/acme/web/contents/")) };
  };
  const check = (sha: string) => h.checks(sha)[0]!;
  /** The decision's part of the summary (before the preview), with the head SHA it names taken out. */
  const decisionPart = (sha: string) => (check(sha).output.summary ?? "").split(PREVIEW_HEADING)[0]!.replaceAll(sha, "HEAD");

  test("an edited CODEOWNERS shows the preview after the same decision; a failed head read shows a note; no policy change reads nothing more", async () => {
    h = await startServiceHarness(backend);
    const { sim, scenario } = h;
    const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
    const push = async (files: Record<string, string>) => (await sim.control.pushToPullRequest({ ...pr, files })).sha;
    /** The owners of every owner set at the base: docs (alice), src (bob), and @acme/core for .forge/CODEOWNERS (dave). */
    const approveAtBase = async () => { for (const user of ["alice", "bob", "dave"]) await sim.control.submitReview({ ...pr, user, state: "APPROVED" }); };

    // A pull request that changes no policy file: once the base's files are cached, an evaluation reads no content at all.
    const warm = await push({ "src/a.ts": "1\n" });
    await h.waitForCheck(warm, { status: "completed", conclusion: "failure" });
    let plain = "";
    const quiet = await contentReads(async () => {
      plain = await push({ "src/a.ts": "2\n" });
      await h.waitForCheck(plain, { status: "completed", conclusion: "failure" });
    });
    expect(quiet.count).toBe(0);
    expect(check(plain).output.summary).not.toContain(PREVIEW_HEADING);

    // The head's CODEOWNERS cannot be read: the decision is published as always, with a note instead of the preview.
    sim.injectFault({ kind: "status", status: 502, path: "/repos/acme/web/contents/\\.forge/CODEOWNERS" });
    const failedRead = await push({ ".forge/CODEOWNERS": HEAD_CODEOWNERS, "src/a.ts": "3\n" });
    await h.waitForCheck(failedRead, { status: "completed", conclusion: "failure" });
    await approveAtBase();
    await h.waitForCheck(failedRead, { status: "completed", conclusion: "success" });
    await drained();
    sim.faults.clear();
    expect(check(failedRead).output.summary).toContain(`${PREVIEW_HEADING}\n`);
    expect(check(failedRead).output.summary).toContain("The preview is left out");
    expect(check(failedRead).output.summary).not.toContain("would change");

    // The same pull request with the head's file readable: one more content read, at the head, and the preview.
    let previewed = "";
    const reads = await contentReads(async () => {
      previewed = await push({ "src/a.ts": "4\n" });
      await h.waitForCheck(previewed, { status: "completed", conclusion: "failure" });
      await approveAtBase();
      // Approvals of the base's owners decide, whatever the head's CODEOWNERS says (the decision uses the base commit).
      await h.waitForCheck(previewed, { status: "completed", conclusion: "success" });
    });
    expect(reads.count).toBe(1);
    expect(reads.requests.map((r) => [decodeURIComponent(r.path), new URLSearchParams(r.query).get("ref")])).toEqual([["/repos/acme/web/contents/.forge/CODEOWNERS", previewed]]);

    const summary = check(previewed).output.summary ?? "";
    const section = summary.slice(summary.indexOf(PREVIEW_HEADING));
    expect(section).toContain("<code>\\.forge/CODEOWNERS</code> line <code>3</code>: <code>invalid owner &#39;not\\-an\\-owner&#39;</code>");
    expect(section).toContain("- <code>src/a\\.ts</code>: <code>\\@acme/core</code> <code>\\@bob</code> → <code>\\@carol</code>");
    expect(section).toContain("- <code>docs/guide\\.md</code>: <code>\\@acme/docs</code> <code>\\@alice</code> \\(or App <code>docs\\-review\\-bot</code>\\) → <code>\\@carol</code>");
    // The decision's output is the same as without the preview.
    expect(check(previewed).conclusion).toBe(check(failedRead).conclusion);
    expect(check(previewed).output.title).toBe(check(failedRead).output.title);
    expect(check(previewed).output.text).toBe(check(failedRead).output.text);
    expect(decisionPart(previewed)).toBe(decisionPart(failedRead));
  }, 90_000);
});

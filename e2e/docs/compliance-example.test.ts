import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import { runHistory } from "../../server/commands/history.ts";
import { loadConfig } from "../../server/config/index.ts";
import { all, openStore } from "../../server/store/index.ts";
import { type ServiceHarness, startServiceHarness, waitUntil } from "../support/service.ts";
import { fences, ROOT } from "./markdown.ts";

/**
 * The README's "Compliance evidence" example stays what `service history --commit` prints: the demo's pull request (docs/
 * and src/ owners approve one head) is merged on the simulator, and each line of the README's example, SHAs and times aside
 * (an abridged SHA ends in "…"; a line ending in "…" is a prefix), is a line of the command's output.
 */
let h: ServiceHarness | undefined;
afterEach(async () => h?.stop());

const normal = (line: string) => line.replace(/\b[0-9a-f]{7,64}…?/g, "<sha>").replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b/g, "<time>").replace(/\b[dm]\d+\b/g, "<id>").trimEnd();

test("the README's answer to \"why did this commit merge?\" is what service history --commit prints", async () => {
  const readme = join(ROOT, "README.md");
  const block = fences(readme).find((f) => f.info === "text" && f.text.includes("$ service history --repository"));
  expect(block).toBeDefined();
  const expected = block!.text.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("$ "));

  h = await startServiceHarness("sqlite");
  const pr = { owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber };
  const { sha } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "export const a = 1;\n", "docs/guide.md": "# guide\n" } });
  await h.waitForCheck(sha, { status: "completed", conclusion: "failure" });
  for (const user of ["alice", "bob"]) await h.sim.control.submitReview({ ...pr, user, state: "APPROVED" });
  await h.waitForCheck(sha, { status: "completed", conclusion: "success" });
  await h.waitForDrainedQueue();
  const merged = await h.sim.control.mergePullRequest({ ...pr, by: "alice" });
  const store = openStore(h.database.target);
  try {
    await waitUntil(async () => (await store.execute(() => all("select id from merge_records"))).length > 0, "the merge record");
  } finally {
    await store.close();
  }
  const lines: string[] = [];
  const config = { ...loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:" }, undefined, "database"), database: h.database.target };
  expect(await runHistory(["--repository", `${pr.owner}/${pr.repo}`, "--commit", merged.merged!.commitSha], config, { stdout: (l) => void lines.push(l), stderr: (l) => void lines.push(l) })).toBe(0);
  const printed = lines.map(normal);
  const missing = expected.filter((line) => {
    const want = normal(line);
    return line.endsWith("…") ? !printed.some((p) => p.startsWith(want.replace(/…$/, ""))) : !printed.includes(want);
  });
  expect({ missing, printed: missing.length === 0 ? [] : lines }).toEqual({ missing: [], printed: [] });
}, 60_000);

import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServiceHarness, waitUntil, type ServiceHarness } from "../../e2e/support/service.ts";
import { loadConfig } from "../config/index.ts";
import { runExplain } from "./explain.ts";
import { explain } from "../../web/src/engine.ts";
import { readState } from "../../web/src/read-state.ts";

/**
 * Real data end to end (issue 10 item 7): the worker publishes a check for a pull request on the forge simulator; `explain
 * --json` with the same App credentials produces an evidence document; the playground's engine, fed that document, reaches the
 * published conclusion and title.
 */
let h: ServiceHarness | null = null;
let dir: string | null = null;
afterEach(async () => {
  await h?.stop();
  if (dir !== null) rmSync(dir, { recursive: true, force: true });
  h = null;
  dir = null;
});

test("an evidence document from explain --json reproduces the check the worker published, in the playground's engine", async () => {
  h = await startServiceHarness("sqlite");
  const { sim, scenario } = h;
  const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
  const { sha: head } = await sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "export const a = 1;\n" } });
  await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
  await sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
  await waitUntil(() => h!.checks(head)[0]?.output.title === "1 of 2 owner sets not yet approved", "the check after bob's approval");
  const published = h.checks(head)[0]!;

  dir = mkdtempSync(join(tmpdir(), "svc-explain-"));
  writeFileSync(join(dir, "key.pem"), scenario.privateKey);
  const config = loadConfig({
    SERVICE_DATABASE_URL: `sqlite:${join(dir, "unused.db")}`,
    SERVICE_FORGE_API_URL: sim.url,
    SERVICE_FORGE_APP_ID: String(scenario.appId),
    SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"),
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const out = { stdout: (line: string) => stdout.push(line), stderr: (line: string) => stderr.push(line) };
  expect(await runExplain(["--repository", `${scenario.org}/${scenario.repo}`, "--pull", String(scenario.pullNumber), "--json"], config, out)).toBe(0);
  expect(stderr).toEqual([]);
  const text = stdout.join("\n");
  expect(text).not.toContain("PRIVATE KEY");
  const document = JSON.parse(text);
  expect(document.evidence.pullRequest.headSha).toBe(head);
  expect(document.decision).toEqual({ kind: "conclusive", conclusion: published.conclusion, title: published.output.title });

  const read = readState(document);
  if (!read.ok) throw new Error(read.error);
  const inPage = explain(read.state, "");
  expect(inPage.decision.conclusion).toBe(published.conclusion as "failure");
  expect(inPage.check.title).toBe(published.output.title!);
  expect(inPage.check.summary).toBe(published.output.summary!);

  // For a person: the same decision in plain lines.
  const human: string[] = [];
  expect(await runExplain(["--repository", `${scenario.org}/${scenario.repo}`, "--pull", String(scenario.pullNumber)], config, { stdout: (l) => human.push(l), stderr: (l) => human.push(l) })).toBe(0);
  expect(human).toContain("decision: failure");
  expect(human).toContain(`title: ${published.output.title}`);
}, 60_000);

import { expect, test } from "bun:test";
import { explain } from "../../web/src/engine.ts";
import { readState } from "../../web/src/read-state.ts";
import { publishedEvidenceFixture } from "../../e2e/support/explain-fixture.ts";

/**
 * Real data end to end (issue 10 item 7): the worker publishes a check for a pull request on the forge simulator; `explain
 * --json` with the same App credentials produces an evidence document; the playground's engine, fed that document, reaches the
 * published conclusion, title and summary.
 */
test("an evidence document from explain --json reproduces the check the worker published, in the playground's engine", async () => {
  const { document, published, head, human } = await publishedEvidenceFixture();
  expect(JSON.stringify(document)).not.toContain("PRIVATE KEY");
  expect(document.evidence.pullRequest.headSha).toBe(head);
  expect(document.decision).toEqual({ kind: "conclusive", conclusion: published.conclusion, title: published.title! });

  const read = readState(document);
  if (!read.ok) throw new Error(read.error);
  const inPage = explain(read.state, "");
  expect(inPage.decision.conclusion).toBe(published.conclusion as "failure");
  expect(inPage.check.title).toBe(published.title!);
  expect(inPage.check.summary).toBe(published.summary!);

  expect(human).toContain("decision: failure");
  expect(human).toContain(`title: ${published.title}`);
}, 60_000);

import { describe, expect, test } from "bun:test";
import { approve, baseEvidence, USERS, withFiles, withReviews } from "../evaluation/evidence-fixture.ts";
import { describeDecisionRecord, describeMergeRecord, LISTED_PATHS_PER_SET } from "./explain.ts";
import { mergeFixture, recordFixture } from "./record-fixture.ts";

const SUBMITTED = "2026-11-20T09:59:00Z";
const approved = () => recordFixture(withReviews(withFiles(baseEvidence(), ["src/app.ts", "docs/guide.md"]), { ...approve(USERS.alice), submittedAt: SUBMITTED }, approve(USERS.erin))).record;

describe("a record in plain words", () => {
  test("a decision says who approved which owner set, on which commit, under which CODEOWNERS path and blob", () => {
    const record = approved();
    const text = describeDecisionRecord(record).join("\n");
    expect(text).toContain(`decision d1 on acme/widgets#7: success, published ${record.published_at}`);
    expect(text).toContain(`CODEOWNERS: CODEOWNERS (${record.codeowners!.bytes} bytes) at blob ${record.codeowners!.blob_sha}`);
    const alice = record.owner_sets.flatMap((s) => s.satisfied_by).find((a) => a.reviewer_login === "alice")!;
    expect(text).toContain(`approved by @alice (user 10) as a direct owner (@alice): review ${alice.review_id} on commit ${"a".repeat(40)}, submitted ${SUBMITTED}`);
    expect(text).toMatch(/owner set \d: @acme\/docs under \/docs\/: satisfied, 1 of 1 approvals, 1 paths\n\s+approved by @erin \(user 14\) as a member of @acme\/docs: review \d+ on commit a{40}\n/);
    expect(text).not.toContain("NOT CONFIRMED");
  });

  test("a decision names the forge directory it was evaluated under; an older record without one, .forge", () => {
    const record = approved();
    expect(describeDecisionRecord(record)).toContain("  forge directory: .forge");
    expect(describeDecisionRecord({ ...record, settings: { ...record.settings!, forge_directory: ".github" } })).toContain("  forge directory: .github");
    const { settings: _settings, ...older } = record;
    expect(describeDecisionRecord(older)).toContain("  forge directory: .forge (recorded before the directory was a setting)");
  });

  test("an unconfirmed record says the check may not have reached the forge", () => {
    expect(describeDecisionRecord({ ...approved(), confirmed: false }).join("\n")).toContain("NOT CONFIRMED: written before the check write and never confirmed after it; the check may not have reached the forge");
  });

  test("a failure names its reasons and the sets that lack approval", () => {
    const { record } = recordFixture(withFiles(baseEvidence(), ["src/app.ts"]));
    const text = describeDecisionRecord({ ...record, reasons: ["directory_incomplete"] }).join("\n");
    expect(text).toContain(": failure, published");
    expect(text).toContain("reasons: directory_incomplete");
    expect(text).toContain("@alice under /src/: missing, 0 of 1 approvals");
  });

  test(`at most ${LISTED_PATHS_PER_SET} paths of a set are listed, with how many more`, () => {
    const paths = Array.from({ length: 25 }, (_, i) => `src/f${i}.ts`);
    const { record } = recordFixture(withFiles(baseEvidence(), paths));
    const lines = describeDecisionRecord(record);
    expect(lines.filter((l) => l.trim().startsWith("path "))).toHaveLength(LISTED_PATHS_PER_SET);
    expect(lines).toContain(`    and ${25 - LISTED_PATHS_PER_SET} more paths`);
  });

  test("a break-glass override is said plainly, with who, the team, the reason and the sets it stood in for", () => {
    const glass = { review_id: 77, reviewer_id: 15, reviewer_login: "mallory", reason: "prod is down", team: "sre", unsatisfied_owner_sets: [0] };
    const text = describeDecisionRecord({ ...approved(), break_glass: glass }).join("\n");
    expect(text).toContain("BREAK-GLASS OVERRIDE by @mallory (user 15, review 77) as a member of sre: prod is down");
    expect(text).toContain("in place of owner sets 1");
  });

  test("a refused break-glass request is said with its code; an edited body says it is not the reviewer's own", () => {
    const refusals = [{ review_id: 78, reviewer_login: "frank", code: "edited" as const }, { review_id: 79, reviewer_login: "carol", code: "not_a_member" as const }];
    const text = describeDecisionRecord({ ...approved(), break_glass_refusals: refusals }).join("\n");
    expect(text).toContain("break-glass request by @frank (review 78) refused: edited (its body was edited after it was submitted, so it is not the reviewer's own)");
    expect(text).toContain("break-glass request by @carol (review 79) refused: not_a_member");
    expect(describeDecisionRecord(approved()).join("\n")).not.toContain("break-glass request");
  });

  test("an approved merge names the merge commit, who merged it, and the decision behind it", () => {
    const record = approved();
    const text = describeMergeRecord(mergeFixture(record), record).join("\n");
    expect(text).toContain(`merge m1 of acme/widgets#7: merge commit ${"9".repeat(40)}, merged by @carol (user 12) at 2026-11-20T10:05:00Z`);
    expect(text).toContain("approved: the service's check concluded success on the head at merge (d1)");
    expect(text).toContain("  decision d1 on acme/widgets#7: success");
    expect(text).not.toContain("UNAPPROVED");
  });

  test("an unapproved merge is said plainly, with the decision that was current or its absence", () => {
    const { record } = recordFixture(withFiles(baseEvidence(), ["src/app.ts"]));
    expect(describeMergeRecord(mergeFixture(record), record).join("\n")).toContain("UNAPPROVED MERGE: no confirmed success of the service was current for the head at merge (the service's current decision for that head was failure (d1))");
    expect(describeMergeRecord(mergeFixture(null), null).join("\n")).toContain("UNAPPROVED MERGE: no confirmed success of the service was current for the head at merge (no decision of the service was recorded for that head)");
  });

  test("a merge whose decision was pruned says so; a recovered merge says the reconciler found it", () => {
    const text = describeMergeRecord(mergeFixture(approved(), { recovered: true }), null).join("\n");
    expect(text).toContain("the decision d1 is no longer kept");
    expect(text).toContain("recovered by the reconciler");
  });
});

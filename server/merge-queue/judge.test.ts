import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { FileRead } from "../evaluation/evidence.ts";
import { groupCheckText, groupMembers, judgeGroup, needsReevaluation, reevaluationEvidence, rulesOfReads, rulesOfRecord, sameRules } from "./judge.ts";
import type { HeadDecision, MemberEvidence, QueueEntry, RuleSource } from "./shapes.ts";

const sha = (c: string) => c.repeat(40);
const BASE = sha("0");
/** Entry n: pull request 10+n, head h<n>, group commit g<n> built on the group commit ahead (or BASE). */
const entry = (n: number, change: Partial<QueueEntry> = {}): QueueEntry => ({
  position: n, state: "AWAITING_CHECKS", headCommit: sha(String.fromCharCode(96 + n)), baseCommit: n === 1 ? BASE : sha(String.fromCharCode(95 + n)),
  pullNumber: 10 + n, headRefOid: sha(String(n)), ...change,
});
const groupOf = (n: number) => ({ headSha: sha(String.fromCharCode(96 + n)), baseSha: n === 1 ? BASE : sha(String.fromCharCode(95 + n)) });

const RULES: RuleSource = { codeowners: { path: ".forge/CODEOWNERS", blobSha: sha("c") }, policyBlobSha: sha("p"), known: true };
const NEW_RULES: RuleSource = { ...RULES, codeowners: { path: ".forge/CODEOWNERS", blobSha: sha("d") } };
const approved = (recordId: number, rules = RULES): HeadDecision => ({ kind: "approved", recordId, rules });

function members(n: number) {
  const answer = groupMembers({ entries: [1, 2, 3].map((i) => entry(i)), complete: true }, groupOf(n));
  if (answer.kind !== "members") throw new Error("no members");
  return answer.members;
}
const evidence = (n: number, per: (index: number) => Partial<MemberEvidence> = () => ({})): MemberEvidence[] =>
  members(n).map((member, index) => ({ member, decision: approved(100 + index), rulesOnto: RULES, ...per(index) }));

describe("the group", () => {
  test("is the entry whose group commit is the group's head and every entry ahead of it, in queue order", () => {
    const answer = groupMembers({ entries: [entry(3), entry(1), entry(2)], complete: true }, groupOf(2));
    expect(answer).toEqual({ kind: "members", members: [
      { pullNumber: 11, headSha: sha("1"), mergesOnto: BASE, own: false },
      // The group's own entry merges onto the group's parent commit.
      { pullNumber: 12, headSha: sha("2"), mergesOnto: groupOf(2).baseSha, own: true },
    ] });
  });
  test("the own entry merges onto the delivery's parent commit, not what the entry says", () => {
    const answer = groupMembers({ entries: [entry(1, { baseCommit: sha("9") })], complete: true }, groupOf(1));
    expect(answer).toMatchObject({ members: [{ mergesOnto: BASE }] });
  });
  test("an unread, partial or over-bound queue, a group not in it, or a malformed entry is incomplete", () => {
    expect(groupMembers(null, groupOf(1))).toEqual({ kind: "incomplete", reason: "queue_unavailable" });
    expect(groupMembers({ entries: [entry(1)], complete: false }, groupOf(1))).toEqual({ kind: "incomplete", reason: "queue_over_bound" });
    expect(groupMembers({ entries: Array.from({ length: 101 }, (_, i) => entry(1, { position: i + 1, pullNumber: i + 1 })), complete: true }, groupOf(1))).toEqual({ kind: "incomplete", reason: "queue_over_bound" });
    expect(groupMembers({ entries: [entry(1)], complete: true }, groupOf(2))).toEqual({ kind: "incomplete", reason: "group_not_found" });
    for (const change of [{ headRefOid: null }, { pullNumber: null }, { baseCommit: "nope" }, { headCommit: sha("A") }, { pullNumber: 0 }]) {
      expect(groupMembers({ entries: [entry(1, change)], complete: true }, groupOf(1))).toEqual({ kind: "incomplete", reason: "queue_malformed" });
    }
    expect(groupMembers({ entries: [entry(1), entry(2, { pullNumber: 11 })], complete: true }, groupOf(2))).toEqual({ kind: "incomplete", reason: "queue_malformed" });
    expect(groupMembers({ entries: [entry(1), entry(2, { position: 1 })], complete: true }, groupOf(2))).toEqual({ kind: "incomplete", reason: "queue_malformed" });
  });
});

describe("the group's verdict", () => {
  test("a group of approved pull requests decided under the rules they merge onto succeeds", () => {
    const verdict = judgeGroup(evidence(3));
    expect(verdict.kind).toBe("success");
    expect(verdict.members.map((m) => [m.pullNumber, m.outcome, m.ruleSource, m.recordId])).toEqual([[11, "passed", "recorded", 100], [12, "passed", "recorded", 101], [13, "passed", "recorded", 102]]);
    expect(groupCheckText(verdict).title).toBe("Merge group verified: 3 pull requests");
    expect(groupCheckText(judgeGroup(evidence(1))).title).toBe("Merge group verified: 1 pull request");
  });

  const refusals: [HeadDecision, string, string][] = [
    [{ kind: "refused", recordId: 7 }, "not_approved", "not approved"],
    [{ kind: "none" }, "no_decision", "no approval decision on its head"],
    [{ kind: "revoked", recordId: 7 }, "approval_revoked", "approval revoked after it was queued"],
  ];
  for (const [decision, reason, text] of refusals) {
    test(`its own pull request with ${decision.kind} decision fails the group (${reason}), named in the title`, () => {
      const verdict = judgeGroup(evidence(2, (i) => (i === 1 ? { decision } : {})));
      expect(verdict).toMatchObject({ kind: "failure", refused: { pullNumber: 12, reason, outcome: "refused" } });
      expect(groupCheckText(verdict).title).toBe(`Pull request #12 may not merge: ${text}`);
      expect(groupCheckText(verdict).summary).toContain(`Pull request #12: ${text}.`);
    });
    test(`a pull request ahead with ${decision.kind} decision never lets the group pass, and names it (its own group fails it)`, () => {
      const verdict = judgeGroup(evidence(3, (i) => (i === 1 ? { decision } : {})));
      expect(verdict).toMatchObject({ kind: "incomplete", reason: "refused_ahead", pullNumber: 12 });
      expect(groupCheckText(verdict).title).toContain("pull request #12");
    });
  }

  test("a decision on its way, unread rules or an unfinished re-evaluation are incomplete, never success", () => {
    expect(judgeGroup(evidence(2, (i) => (i === 0 ? { decision: { kind: "pending" } } : {})))).toMatchObject({ kind: "incomplete", reason: "decision_pending", pullNumber: 11 });
    expect(judgeGroup(evidence(2, (i) => (i === 1 ? { rulesOnto: null } : {})))).toMatchObject({ kind: "incomplete", reason: "rules_unavailable", pullNumber: 12 });
    expect(judgeGroup(evidence(2, (i) => (i === 1 ? { rulesOnto: NEW_RULES } : {})))).toMatchObject({ kind: "incomplete", reason: "reevaluation_incomplete", pullNumber: 12 });
    expect(judgeGroup(evidence(2, (i) => (i === 1 ? { rulesOnto: NEW_RULES, reevaluation: { kind: "incomplete", detail: "blob gone" } } : {})))).toMatchObject({ kind: "incomplete", reason: "reevaluation_incomplete" });
    expect(judgeGroup([])).toMatchObject({ kind: "incomplete", reason: "group_not_found" });
  });

  test("a refusal of its own pull request wins over incomplete evidence ahead", () => {
    expect(judgeGroup(evidence(2, (i) => ({ decision: i === 0 ? { kind: "pending" } : { kind: "refused", recordId: 5 } })))).toMatchObject({ kind: "failure", refused: { pullNumber: 12 } });
  });

  test("a code-owners change ahead in the queue: its owners under the new rules approved it, so it passes re-evaluated", () => {
    // Entry 1 changes CODEOWNERS: entries 2 and 3 merge onto the new rules.
    const verdict = judgeGroup(evidence(3, (i) => (i === 0 ? {} : { rulesOnto: NEW_RULES, reevaluation: { kind: "success" } })));
    expect(verdict.kind).toBe("success");
    expect(verdict.members.map((m) => m.ruleSource)).toEqual(["recorded", "reevaluated", "reevaluated"]);
    expect(groupCheckText(verdict).summary).toContain("#12 (222222222222): approved (re-evaluated under the rules it merges onto)");
  });

  test("a code-owners change ahead in the queue whose owners did not approve fails it with rules_changed_ahead naming the entry", () => {
    const verdict = judgeGroup(evidence(3, (i) => (i === 0 ? {} : i === 1 ? { rulesOnto: NEW_RULES, reevaluation: { kind: "success" } } : { rulesOnto: NEW_RULES, reevaluation: { kind: "failure" } })));
    expect(verdict).toMatchObject({ kind: "failure", refused: { pullNumber: 13, reason: "rules_changed_ahead", changedBy: 11, ruleSource: "reevaluated" } });
    expect(groupCheckText(verdict).title).toBe("Pull request #13 may not merge: rules changed ahead of it in the queue");
    expect(groupCheckText(verdict).summary).toContain("Pull request #13: pull request #11 ahead of it changes the code-owner rules, and its owners under them have not approved it.");
  });

  test("the nearest entry ahead that changed the rules is named", () => {
    const third: RuleSource = { ...RULES, policyBlobSha: sha("e") };
    const verdict = judgeGroup(evidence(3, (i) => (i === 0 ? {} : i === 1 ? { rulesOnto: NEW_RULES, reevaluation: { kind: "success" } } : { rulesOnto: third, reevaluation: { kind: "failure" } })));
    expect(verdict).toMatchObject({ kind: "failure", refused: { changedBy: 12 } });
  });

  test("rules changed on the base since approval, not by an entry ahead: rules_changed", () => {
    const verdict = judgeGroup(evidence(1, () => ({ rulesOnto: NEW_RULES, reevaluation: { kind: "failure" } })));
    expect(verdict).toMatchObject({ kind: "failure", refused: { pullNumber: 11, reason: "rules_changed", changedBy: null } });
    expect(groupCheckText(verdict).title).toBe("Pull request #11 may not merge: rules changed on its base since approval");
  });
});

describe("rules", () => {
  test("compare by code-owners path and blob and policy blob; unknown blobs never compare equal", () => {
    expect(sameRules(RULES, { ...RULES })).toBe(true);
    expect(sameRules(RULES, NEW_RULES)).toBe(false);
    expect(sameRules(RULES, { ...RULES, codeowners: { path: "CODEOWNERS", blobSha: sha("c") } })).toBe(false);
    expect(sameRules(RULES, { ...RULES, codeowners: null })).toBe(false);
    expect(sameRules(RULES, { ...RULES, policyBlobSha: null })).toBe(false);
    expect(sameRules({ ...RULES, known: false }, { ...RULES, known: false })).toBe(false);
    expect(sameRules({ codeowners: null, policyBlobSha: null, known: true }, { codeowners: null, policyBlobSha: null, known: true })).toBe(true);
  });
  test("only an approved member whose rules differ needs a re-evaluation", () => {
    const [member] = members(1);
    expect(needsReevaluation({ member: member!, decision: approved(1), rulesOnto: NEW_RULES })).toBe(true);
    expect(needsReevaluation({ member: member!, decision: approved(1), rulesOnto: RULES })).toBe(false);
    expect(needsReevaluation({ member: member!, decision: { kind: "refused", recordId: 1 }, rulesOnto: NEW_RULES })).toBe(false);
    expect(needsReevaluation({ member: member!, decision: approved(1), rulesOnto: null })).toBe(false);
  });
});

describe("rules read at a commit and recorded", () => {
  const rulesAt = (codeowners: Parameters<typeof rulesOfReads>[0], policy: FileRead) => rulesOfReads(codeowners, policy, ".forge");
  const found = (path: string, blob: string | null): FileRead => ({ kind: "found", path, text: "* @a\n", bytes: 5, blobSha: blob });
  const missing: FileRead = { kind: "missing" };
  test("the first code-owners location that is not missing applies, as in a decision", () => {
    expect(rulesAt({ ".forge/CODEOWNERS": missing, CODEOWNERS: found("CODEOWNERS", sha("c")) }, found(".forge/service-policy.toml", sha("p"))))
      .toEqual({ codeowners: { path: "CODEOWNERS", blobSha: sha("c") }, policyBlobSha: sha("p"), known: true });
    expect(rulesAt({ ".forge/CODEOWNERS": missing, CODEOWNERS: missing, "docs/CODEOWNERS": missing }, missing)).toEqual({ codeowners: null, policyBlobSha: null, known: true });
  });
  test("an incomplete read, or a location not read, is no rules at all; a file over its bound or without a blob is unknown", () => {
    expect(rulesAt({ ".forge/CODEOWNERS": { kind: "incomplete", cause: "transient", detail: "503" } }, missing)).toBeNull();
    expect(rulesAt({ ".forge/CODEOWNERS": missing }, missing)).toBeNull();
    expect(rulesAt({ ".forge/CODEOWNERS": found(".forge/CODEOWNERS", sha("c")) }, { kind: "incomplete", cause: "transient", detail: "503" })).toBeNull();
    expect(rulesAt({ ".forge/CODEOWNERS": { kind: "too_large", path: ".forge/CODEOWNERS", bytes: 4_000_000 } }, missing)).toMatchObject({ known: false });
    expect(rulesAt({ ".forge/CODEOWNERS": found(".forge/CODEOWNERS", null) }, missing)).toMatchObject({ known: false });
    expect(rulesAt({ ".forge/CODEOWNERS": found(".forge/CODEOWNERS", sha("c")) }, found("p.toml", null))).toMatchObject({ known: false });
  });
  test("a record's rules are its code-owners file and repository policy by blob; read at the same commit they are the same rules", () => {
    const recorded = rulesOfRecord({ codeowners: { path: ".forge/CODEOWNERS", blob_sha: sha("c"), bytes: 5 }, repository_policy: { path: ".forge/service-policy.toml", blob_sha: sha("p"), bytes: 9 } });
    expect(sameRules(recorded, rulesAt({ ".forge/CODEOWNERS": found(".forge/CODEOWNERS", sha("c")) }, found(".forge/service-policy.toml", sha("p")))!)).toBe(true);
    expect(rulesOfRecord({ codeowners: { path: "CODEOWNERS", blob_sha: null, bytes: 5 }, repository_policy: null })).toMatchObject({ known: false });
  });
  test("a re-evaluation takes the recorded inputs with the rules read at the commit it merges onto; without inputs there is none", () => {
    const onto = { codeowners: { ".forge/CODEOWNERS": found(".forge/CODEOWNERS", sha("d")) }, repositoryPolicy: missing };
    const inputs = { reviews: { complete: true, items: [] } } as never;
    expect(reevaluationEvidence({ inputs, summarised: null }, onto, missing)).toMatchObject({ reviews: { complete: true }, codeowners: onto.codeowners, repositoryPolicy: missing, organizationPolicy: missing });
    expect(reevaluationEvidence({ inputs: null, summarised: { omitted: "inputs", replayable: false } }, onto, missing)).toBeNull();
    expect(reevaluationEvidence({ inputs, summarised: { omitted: "owner_set_paths", replayable: false } }, onto, missing)).toBeNull();
  });
});

test("the judge reads no forge, database, clock or runtime", () => {
  for (const name of ["judge.ts", "shapes.ts"]) {
    const text = readFileSync(join(import.meta.dir, name), "utf8");
    for (const [, specifier] of text.matchAll(/from\s+"([^"]+)"/g)) {
      const pure = specifier!.startsWith("./") || specifier!.startsWith("../evaluation/") || specifier === "../records/schema.ts";
      expect({ name, specifier, pure }).toEqual({ name, specifier, pure: true });
    }
    for (const pattern of [/\bDate\b/, /\bBun\./, /\bprocess\./, /\bfetch\(/, /\bperformance\./]) expect({ name, uses: pattern.test(text) ? String(pattern) : null }).toEqual({ name, uses: null });
  }
});

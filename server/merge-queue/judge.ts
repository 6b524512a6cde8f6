// The rules of a merge group (DESIGN 3.14), pure: which pull requests form the group, whether each may merge with it, and the
// check that says so. The worker gathers the evidence (the queue by GraphQL, the store's decisions, the rules at each commit,
// re-evaluations) and calls these; nothing here reads a forge, a database or a clock.
//
// A group succeeds only if every pull request in it passes: its newest decision on its head in the group is a confirmed
// success that no reset followed, decided under the rules of the commit it merges onto (its entry's base commit; the group's
// parent commit for the group's own entry), or, where those rules differ, a re-evaluation of its recorded inputs under them
// succeeds. The group fails only for its own pull request (the entry the forge removes when the group's check fails): a pull
// request ahead that does not pass is failed by its own group, after which the forge rebuilds this one, so meanwhile this group
// is incomplete (never success) and names it. Incomplete evidence is retried, never success.
import type { CodeownersEvidence, Evidence, FileRead } from "../evaluation/evidence.ts";
import { codeownersLocations } from "../evaluation/evidence.ts";
import type { DecisionRecord } from "../records/schema.ts";
import type {
  GroupFacts, GroupMember, GroupReason, GroupVerdict, IncompleteReason, JudgedMember, MemberEvidence, QueueAnswer, RuleSource,
} from "./shapes.ts";
import { MAX_QUEUE_ENTRIES } from "./shapes.ts";

const SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * The group: the entry whose group commit is the group's head and every entry ahead of it, in queue order; or why it cannot be
 * known. Anything odd in the answer (a missing field, a repeated pull request or position) is `queue_malformed`.
 */
export function groupMembers(answer: QueueAnswer | null, group: GroupFacts): { readonly kind: "members"; readonly members: readonly GroupMember[] } | { readonly kind: "incomplete"; readonly reason: IncompleteReason } {
  if (answer === null) return { kind: "incomplete", reason: "queue_unavailable" };
  if (!answer.complete || answer.entries.length > MAX_QUEUE_ENTRIES) return { kind: "incomplete", reason: "queue_over_bound" };
  const entries = [...answer.entries].sort((a, b) => a.position - b.position);
  const numbers = new Set<number>();
  const positions = new Set<number>();
  for (const entry of entries) {
    const wellFormed = Number.isSafeInteger(entry.position) && entry.pullNumber !== null && Number.isSafeInteger(entry.pullNumber) && entry.pullNumber > 0
      && entry.headCommit !== null && SHA.test(entry.headCommit) && entry.baseCommit !== null && SHA.test(entry.baseCommit)
      && entry.headRefOid !== null && SHA.test(entry.headRefOid);
    if (!wellFormed || numbers.has(entry.pullNumber!) || positions.has(entry.position)) return { kind: "incomplete", reason: "queue_malformed" };
    numbers.add(entry.pullNumber!);
    positions.add(entry.position);
  }
  const own = entries.findIndex((entry) => entry.headCommit === group.headSha);
  if (own < 0) return { kind: "incomplete", reason: "group_not_found" };
  return {
    kind: "members",
    members: entries.slice(0, own + 1).map((entry, index) => ({
      pullNumber: entry.pullNumber!, headSha: entry.headRefOid!, own: index === own,
      // The group's own entry merges onto the group's parent commit, which already holds every entry ahead of it.
      mergesOnto: index === own ? group.baseSha : entry.baseCommit!,
    })),
  };
}

/** Whether a decision's rules are the rules at a commit (unknown blob SHAs never compare equal). */
export function sameRules(a: RuleSource, b: RuleSource): boolean {
  if (!a.known || !b.known) return false;
  if ((a.codeowners === null) !== (b.codeowners === null)) return false;
  if (a.codeowners !== null && b.codeowners !== null && (a.codeowners.path !== b.codeowners.path || a.codeowners.blobSha !== b.codeowners.blobSha)) return false;
  return a.policyBlobSha === b.policyBlobSha;
}

/** Whether the member needs a re-evaluation under the rules it merges onto before it can be judged. */
export function needsReevaluation(evidence: MemberEvidence): boolean {
  return evidence.decision.kind === "approved" && evidence.rulesOnto !== null && !sameRules(evidence.decision.rules, evidence.rulesOnto);
}

/**
 * The verdict on a group, from its members' evidence in queue order (the group's own pull request last). Evidence for a member
 * that needs a re-evaluation and has none is incomplete.
 */
export function judgeGroup(evidence: readonly MemberEvidence[]): GroupVerdict {
  const members = evidence.map((item, index) => judgeMember(item, evidence.slice(0, index)));
  const own = members.at(-1);
  if (own === undefined) return { kind: "incomplete", reason: "group_not_found", pullNumber: null, members };
  if (own.outcome === "refused") return { kind: "failure", refused: own, members };
  const ahead = members.find((member) => member.outcome === "refused");
  if (ahead !== undefined) return { kind: "incomplete", reason: "refused_ahead", pullNumber: ahead.pullNumber, members };
  const incomplete = members.find((member) => member.outcome === "incomplete");
  if (incomplete !== undefined) return { kind: "incomplete", reason: incomplete.reason as IncompleteReason, pullNumber: incomplete.pullNumber, members };
  return { kind: "success", members };
}

function judgeMember(item: MemberEvidence, ahead: readonly MemberEvidence[]): JudgedMember {
  const { member, decision } = item;
  const judged = (outcome: JudgedMember["outcome"], reason: JudgedMember["reason"], extra: Partial<JudgedMember> = {}): JudgedMember => ({
    pullNumber: member.pullNumber, headSha: member.headSha, recordId: "recordId" in decision ? decision.recordId : null,
    ruleSource: null, outcome, reason, changedBy: null, ...extra,
  });
  switch (decision.kind) {
    case "pending": return judged("incomplete", "decision_pending");
    case "none": return judged("refused", "no_decision");
    case "refused": return judged("refused", "not_approved");
    case "revoked": return judged("refused", "approval_revoked");
    case "approved": break;
  }
  if (item.rulesOnto === null) return judged("incomplete", "rules_unavailable");
  if (sameRules(decision.rules, item.rulesOnto)) return judged("passed", null, { ruleSource: "recorded" });
  const again = item.reevaluation;
  if (again === undefined || again.kind === "incomplete") return judged("incomplete", "reevaluation_incomplete");
  if (again.kind === "success") return judged("passed", null, { ruleSource: "reevaluated" });
  const changedBy = changerAhead(item, ahead);
  const reason: GroupReason = changedBy === null ? "rules_changed" : "rules_changed_ahead";
  return judged("refused", reason, { ruleSource: "reevaluated", changedBy });
}

/**
 * The pull request ahead whose merge changed the rules the member merges onto: the nearest entry ahead whose own merge moves
 * the rules (the rules onto it differ from the rules onto the entry after it). Null when no entry ahead changed them (the
 * base branch did, since the member was approved), or when the rules along the way are unknown.
 */
function changerAhead(item: MemberEvidence, ahead: readonly MemberEvidence[]): number | null {
  const onto = [...ahead.map((entry) => entry.rulesOnto), item.rulesOnto];
  for (let index = ahead.length - 1; index >= 0; index--) {
    const before = onto[index];
    const after = onto[index + 1];
    if (before === null || before === undefined || after === null || after === undefined) return null;
    if (!sameRules(before, after)) return ahead[index]!.member.pullNumber;
  }
  return null;
}

/** The check's title and summary for a verdict (numbers and commit IDs only: nothing from a pull request's text). */
export function groupCheckText(verdict: GroupVerdict): { readonly title: string; readonly summary: string } {
  const lines = verdict.members.map((member) => `- #${member.pullNumber} (${member.headSha.slice(0, 12)}): ${memberLine(member)}`);
  const listing = `Pull requests of this group, in queue order:\n${lines.join("\n")}`;
  const count = verdict.members.length;
  switch (verdict.kind) {
    case "success":
      return { title: `Merge group verified: ${count} pull request${count === 1 ? "" : "s"}`, summary: `Every pull request of this group is approved under the rules it merges onto.\n\n${listing}` };
    case "failure": {
      const { refused } = verdict;
      return { title: `Pull request #${refused.pullNumber} may not merge: ${REASON_TEXT[refused.reason as GroupReason]}`, summary: `${refusalSentence(refused)}\n\n${listing}` };
    }
    case "incomplete":
      return {
        title: verdict.pullNumber === null ? `Merge group not verified: ${INCOMPLETE_TEXT[verdict.reason]}` : `Merge group not verified: pull request #${verdict.pullNumber}: ${INCOMPLETE_TEXT[verdict.reason]}`,
        summary: `The group cannot be verified yet; the service tries again, and never passes a group it could not verify.\n\n${listing}`,
      };
  }
}

const REASON_TEXT: Record<GroupReason, string> = {
  not_approved: "not approved",
  no_decision: "no approval decision on its head",
  approval_revoked: "approval revoked after it was queued",
  rules_changed_ahead: "rules changed ahead of it in the queue",
  rules_changed: "rules changed on its base since approval",
};

const INCOMPLETE_TEXT: Record<IncompleteReason, string> = {
  queue_unavailable: "the merge queue could not be read",
  queue_over_bound: "the merge queue holds more entries than are read",
  group_not_found: "the group is not in the merge queue",
  queue_malformed: "the merge queue's answer is malformed",
  decision_pending: "its approval decision is not settled yet",
  rules_unavailable: "the rules it merges onto could not be read",
  reevaluation_incomplete: "its re-evaluation under the rules it merges onto is incomplete",
  refused_ahead: "it may not merge, and the queue rebuilds this group without it",
};

function memberLine(member: JudgedMember): string {
  if (member.outcome === "passed") return member.ruleSource === "reevaluated" ? "approved (re-evaluated under the rules it merges onto)" : "approved";
  if (member.outcome === "incomplete") return INCOMPLETE_TEXT[member.reason as IncompleteReason];
  return refusalSentence(member);
}

function refusalSentence(member: JudgedMember): string {
  const reason = member.reason as GroupReason;
  if (reason === "rules_changed_ahead") return `Pull request #${member.pullNumber}: pull request #${member.changedBy} ahead of it changes the code-owner rules, and its owners under them have not approved it.`;
  return `Pull request #${member.pullNumber}: ${REASON_TEXT[reason]}.`;
}

/** The rules a decision record was decided under (its code-owners file and repository policy, by blob SHA). */
export function rulesOfRecord(record: Pick<DecisionRecord, "codeowners" | "repository_policy">): RuleSource {
  const codeowners = record.codeowners === null ? null : { path: record.codeowners.path, blobSha: record.codeowners.blob_sha };
  const policyBlobSha = record.repository_policy?.blob_sha ?? null;
  return { codeowners, policyBlobSha, known: (codeowners === null || codeowners.blobSha !== null) && (record.repository_policy === null || policyBlobSha !== null) };
}

/**
 * The rules at a commit from the reads of its code-owners locations (in precedence order: the first that is not missing
 * applies) and of its repository policy; null when a read is incomplete. A file over its bound, or one the forge named no
 * blob for, makes them unknown (never equal to a decision's: a re-evaluation decides). `forgeDirectory` places the first
 * code-owners location, as the decision's settings do.
 */
export function rulesOfReads(codeowners: CodeownersEvidence, repositoryPolicy: FileRead, forgeDirectory: string): RuleSource | null {
  let chosen: FileRead | null = null;
  for (const location of codeownersLocations(forgeDirectory)) {
    const read = codeowners[location];
    if (read === undefined) return null;
    if (read.kind !== "missing") {
      chosen = read;
      break;
    }
  }
  if (chosen?.kind === "incomplete" || repositoryPolicy.kind === "incomplete") return null;
  const codeownersRule = chosen === null ? null : chosen.kind === "found" ? { path: chosen.path, blobSha: chosen.blobSha ?? null } : { path: chosen.path, blobSha: null };
  const policyBlobSha = repositoryPolicy.kind === "found" ? repositoryPolicy.blobSha ?? null : null;
  const known = (codeownersRule === null || codeownersRule.blobSha !== null) && (repositoryPolicy.kind === "missing" || policyBlobSha !== null);
  return { codeowners: codeownersRule, policyBlobSha, known };
}

/**
 * What a re-evaluation under the rules a pull request merges onto evaluates: its decision's recorded inputs (reviews, changed
 * files, directory facts, as replay takes them), with the code-owners files and repository policy read at that commit and the
 * organization policy as it is now. Null when the record kept no inputs (summarised past its bound): then it cannot be
 * re-evaluated, which is incomplete evidence.
 */
export function reevaluationEvidence(record: Pick<DecisionRecord, "inputs" | "summarised">, onto: { readonly codeowners: CodeownersEvidence; readonly repositoryPolicy: FileRead }, organizationPolicy: FileRead): Evidence | null {
  if (record.inputs === null || (record.summarised !== null && !record.summarised.replayable)) return null;
  return { ...record.inputs, codeowners: onto.codeowners, repositoryPolicy: onto.repositoryPolicy, organizationPolicy };
}

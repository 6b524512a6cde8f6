// Decision and merge records in plain words (`service history`, issue 28 item 3): who approved what, on which commit, under
// which CODEOWNERS path and blob; an unconfirmed record said as such; an unapproved merge said plainly. Lines of text only:
// the command passes each through visible() (logins, paths and titles may hold terminal escapes).
import {
  type DecisionRecord, type HistoryRecord, type MergeGroupRecord, type MergeRecord, type RecordedApproval, type RecordedFile, type RecordedGroupMember, recordedForgeDirectory,
} from "./schema.ts";

/** Per owner set, at most this many paths are listed (the record and `--json` have them all). */
export const LISTED_PATHS_PER_SET = 10;

const RULE_WORDS: Record<RecordedApproval["rule"], string> = {
  direct_owner: "as a direct owner",
  team_membership: "as a member of",
  app_delegation: "for the App delegation to",
  break_glass: "as a break-glass override by a member of",
};

/** Words after a refusal code where the code alone does not say it (the docs list every code). */
const REFUSAL_WORDS: Partial<Record<NonNullable<DecisionRecord["break_glass_refusals"]>[number]["code"], string>> = {
  edited: " (its body was edited after it was submitted, so it is not the reviewer's own)",
  membership_incomplete: " (the reviewer's team membership, or whether the review was edited, could not be established)",
};

const file = (what: string, read: RecordedFile | null) =>
  read === null ? `${what}: none read` : `${what}: ${read.path} (${read.bytes} bytes) at blob ${read.blob_sha ?? "unknown (the forge did not say)"}`;

function approvalLine(approval: RecordedApproval): string {
  const via = approval.rule === "direct_owner" ? `${RULE_WORDS.direct_owner} (${approval.via})` : `${RULE_WORDS[approval.rule]} ${approval.via}`;
  const on = approval.commit_id === null ? "on an unnamed commit" : `on commit ${approval.commit_id}`;
  const when = approval.submitted_at === null ? "" : `, submitted ${approval.submitted_at}`;
  return `approved by @${approval.reviewer_login} (user ${approval.reviewer_id}) ${via}: review ${approval.review_id} ${on}${when}`;
}

/** A decision record, for a person. */
export function describeDecisionRecord(record: DecisionRecord): string[] {
  const where = `${record.repository.full_name}#${record.pull_request}`;
  const lines = [`decision ${record.id} on ${where}: ${record.conclusion}, published ${record.published_at}`];
  if (!record.confirmed) {
    lines.push("  NOT CONFIRMED: written before the check write and never confirmed after it; the check may not have reached the forge");
  }
  lines.push(`  head ${record.head_sha}, base ${record.base_sha}, check run ${record.check_run_id ?? "unknown"}`);
  lines.push(`  title: ${record.title}`);
  lines.push(`  by service ${record.service.version}${record.service.revision === null ? "" : ` (revision ${record.service.revision})`}`);
  lines.push(`  forge directory: ${recordedForgeDirectory(record)}${record.settings?.forge_directory === undefined ? " (recorded before the directory was a setting)" : ""}`);
  lines.push(`  ${file("CODEOWNERS", record.codeowners)}`);
  lines.push(`  ${file("repository policy", record.repository_policy)}`);
  const org = record.organization_policy;
  lines.push(org === null ? "  organization policy: none read" : `  organization policy: ${org.repository} ${org.path} at commit ${org.commit_sha ?? "unknown"}, blob ${org.blob_sha ?? "unknown"}`);
  if (record.reasons.length > 0) lines.push(`  reasons: ${record.reasons.join(", ")}`);
  record.owner_sets.forEach((set, index) => {
    const owners = set.owners.length === 0 ? "(no owners)" : set.owners.join(" ");
    const patterns = set.patterns.length === 0 ? "" : ` under ${set.patterns.join(" ")}`;
    lines.push(`  owner set ${index + 1}: ${owners}${patterns}: ${set.status}, ${set.approvals} of ${set.required} approvals, ${set.path_count} paths`);
    for (const approval of set.satisfied_by) lines.push(`    ${approvalLine(approval)}`);
    for (const path of set.paths.slice(0, LISTED_PATHS_PER_SET)) lines.push(`    path ${path}`);
    if (set.paths.length > LISTED_PATHS_PER_SET) lines.push(`    and ${set.paths.length - LISTED_PATHS_PER_SET} more paths`);
  });
  if (record.owner_sets.length === 0) lines.push("  no owner set");
  lines.push(`  unowned paths: ${record.unowned_path_count}; non-delegable paths: ${record.non_delegable_path_count}`);
  const glass = record.break_glass;
  if (glass !== null) {
    lines.push(`  BREAK-GLASS OVERRIDE by @${glass.reviewer_login} (user ${glass.reviewer_id}, review ${glass.review_id}) as a member of ${glass.team}: ${glass.reason}`);
    if (glass.unsatisfied_owner_sets.length > 0) lines.push(`    in place of owner sets ${glass.unsatisfied_owner_sets.map((i) => i + 1).join(", ")}`);
  }
  for (const refusal of record.break_glass_refusals ?? []) {
    lines.push(`  break-glass request by @${refusal.reviewer_login} (review ${refusal.review_id}) refused: ${refusal.code}${REFUSAL_WORDS[refusal.code] ?? ""}`);
  }
  if (record.summarised !== null) {
    lines.push(`  summarised to stay within the record bound: ${record.summarised.omitted === "inputs" ? "the inputs left out" : "the owner sets' paths left out"}${record.summarised.replayable ? "" : "; it cannot be replayed"}`);
  }
  return lines;
}

/**
 * A merge record, for a person: who merged what, and whether the service's success was current for the head at merge;
 * `decision` (the record it names, read: null when it is no longer kept) follows it in full; undefined leaves it out.
 */
export function describeMergeRecord(merge: MergeRecord, decision: DecisionRecord | null | undefined): string[] {
  const where = `${merge.repository.full_name}#${merge.pull_request}`;
  const by = merge.merged_by === null ? "by an unknown user" : `by @${merge.merged_by.login} (user ${merge.merged_by.id})`;
  const lines = [`merge ${merge.id} of ${where}: merge commit ${merge.merge_commit_sha ?? "unknown"}, merged ${by} at ${merge.merged_at ?? "an unknown time"}`];
  lines.push(`  head at merge ${merge.head_sha}`);
  if (merge.enrollment === "not_enrolled") {
    lines.push(`  NOT ENROLLED: the repository policy at the base commit ${merge.base_sha ?? "(unknown)"} does not enable the service, so this merge is not an unapproved merge`);
  } else if (merge.unapproved && merge.reset_at !== null) {
    lines.push(`  UNAPPROVED MERGE: the success ${merge.decision_id ?? "(no longer kept)"} was withdrawn: the service reset the check to in progress at ${merge.reset_at}, and the head merged before the next confirmed success: an administrator bypass, or the check was not required`);
  } else if (merge.unapproved) {
    const last = merge.decision_id === null ? "no decision of the service was recorded for that head" : `the service's current decision for that head was ${merge.decision_conclusion ?? "unknown"} (${merge.decision_id})`;
    lines.push(`  UNAPPROVED MERGE: no confirmed success of the service was current for the head at merge (${last}): an administrator bypass, or the check was not required`);
  } else {
    lines.push(`  approved: the service's check concluded success on the head at merge (${merge.decision_id})`);
  }
  if (merge.merge_group_id !== undefined && merge.merge_group_id !== null) {
    lines.push(`  merged through the merge queue: the group verified in ${merge.merge_group_id} held this pull request at this head`);
  }
  if (merge.break_glass) lines.push("  merged under a break-glass override");
  if (merge.recovered) lines.push("  recovered by the reconciler from the recently closed pull requests (its closed delivery was missed)");
  if (merge.enrollment === "pending") lines.push("  enrollment not read yet: whether the service was enabled at the base commit is read shortly; until then an unapproved merge is not counted");
  lines.push(`  recorded ${merge.recorded_at}`);
  if (decision === undefined) return lines; // the caller shows it elsewhere
  if (decision !== null) lines.push(...describeDecisionRecord(decision).map((line) => `  ${line}`));
  else if (merge.decision_id !== null) lines.push(`  the decision ${merge.decision_id} is no longer kept (pruned after the retention period)`);
  return lines;
}

const SOURCE_WORDS: Record<NonNullable<RecordedGroupMember["rule_source"]>, string> = {
  recorded: "approved under the rules it merges onto",
  reevaluated: "re-evaluated with its recorded reviews under the rules it merges onto, which differ from those it was decided under",
};

function memberLine(member: RecordedGroupMember): string {
  const decision = member.decision_id === null ? "no decision" : `decision ${member.decision_id}`;
  const why = member.outcome === "passed"
    ? (member.rule_source === null ? "passed" : `passed: ${SOURCE_WORDS[member.rule_source]}`)
    : `${member.outcome === "refused" ? "REFUSED" : "not judged"}: ${member.reason ?? "no reason recorded"}${member.changed_by === null ? "" : ` (the rules were changed by #${member.changed_by} ahead in the queue)`}`;
  return `#${member.pull_request} at ${member.head_sha} (${decision}): ${why}`;
}

/** A merge group's record, for a person: the group's commit and verdict, and each pull request of the group with why. */
export function describeMergeGroupRecord(record: MergeGroupRecord): string[] {
  const lines = [`merge group ${record.id} on ${record.repository.full_name} into ${record.base_ref}: ${record.conclusion}, published ${record.published_at}`];
  lines.push(`  group commit ${record.head_sha}, parent ${record.base_sha}, check run ${record.check_run_id ?? "unknown"}`);
  lines.push(`  title: ${record.title}`);
  lines.push(`  by service ${record.service.version}${record.service.revision === null ? "" : ` (revision ${record.service.revision})`}`);
  for (const member of record.members) lines.push(`  ${memberLine(member)}`);
  if (record.members.length === 0) lines.push("  no pull request was judged (the queue's entries could not be read)");
  return lines;
}

export function describeRecord(record: HistoryRecord, related?: DecisionRecord | null): string[] {
  if (record.kind === "decision") return describeDecisionRecord(record);
  if (record.kind === "merge_group") return describeMergeGroupRecord(record);
  return describeMergeRecord(record, related);
}

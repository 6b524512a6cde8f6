#!/usr/bin/env bun
/**
 * Seeds the decisions page's Playwright run (e2e/decisions.spec.ts): `bun e2e/support/seed-decisions.ts SQLITE_URL` writes
 * decision and merge records into the service's database through the writers' own operations, each decision built by the
 * record builder from a playground scenario the decision core really evaluated, and prints what it wrote as JSON.
 *   - acme/widgets #42: a confirmed success (alice approved the head), then its merge (approved);
 *   - acme/widgets #43: an unconfirmed failure (approval of an older head), then its merge: an unapproved merge;
 *   - acme/gadgets #7: a confirmed success with no merge;
 *   - acme/widgets #44: a break-glass override (sam of the team on-call), then its merge: merged on the override;
 *   - acme/gadgets #8: an override whose reason is hostile (markup, and far longer than the record keeps), no merge;
 *   - acme/tools #3: an override never confirmed, then its merge: an unapproved merge whose decision carried an override;
 *   - acme/legacy #5: a merge in a repository whose policy does not enable the service: not enrolled, not unapproved;
 *   - acme/queue #45 and #46: a merge queue's group verified (#45 approved under the rules it merges onto, #46 re-evaluated
 *     under rules changed ahead), written by the merge-group worker's own record builder and judgement, then #46's merge
 *     through the queue, which names the group (the oldest records).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { parseDatabaseUrl } from "../../server/config/index.ts";
import { evaluate } from "../../server/evaluation/evaluate.ts";
import type { EvaluationSettings, Evidence, FileRead } from "../../server/evaluation/evidence.ts";
import { renderCheck } from "../../server/evaluation/render-check.ts";
import { buildDecisionRecord } from "../../server/records/build.ts";
import type { JudgedMember } from "../../server/merge-queue/shapes.ts";
import { listHistory, openStore, recordGroupJudgement } from "../../server/store/index.ts";
import { groupRecordBody } from "../../server/worker/jobs/judge-merge-group.ts";
import { SCENARIOS } from "../../web/src/scenarios.ts";
import { seedDecision, seedMerge } from "./decision-records.ts";

const url = process.argv[2];
if (!url?.startsWith("sqlite:")) {
  console.error("usage: bun e2e/support/seed-decisions.ts sqlite:PATH");
  process.exit(2);
}

export const SEEDED_BLOBS = { codeowners: "1".repeat(40), repositoryPolicy: "2".repeat(40), organizationPolicy: "3".repeat(40) } as const;
export const ORGANIZATION_POLICY_COMMIT = "4".repeat(40);

/** The scenario's evidence as the forge fetcher gives it: found files carry their blob SHAs, the organization policy its commit. */
function evidenceOf(scenarioId: string, over: (evidence: Evidence) => Evidence = (e) => e): { evidence: Evidence; settings: EvaluationSettings } {
  const scenario = SCENARIOS.find((s) => s.id === scenarioId);
  if (scenario === undefined) throw new Error(`no scenario ${scenarioId}`);
  const { evidence, settings } = scenario.build();
  const withSha = (read: FileRead, blobSha: string, commitSha?: string): FileRead => (read.kind === "found" ? { ...read, blobSha, ...(commitSha ? { commitSha } : {}) } : read);
  return {
    settings,
    evidence: over({
      ...evidence,
      codeowners: Object.fromEntries(Object.entries(evidence.codeowners).map(([location, read]) => [location, withSha(read, SEEDED_BLOBS.codeowners)])),
      repositoryPolicy: withSha(evidence.repositoryPolicy, SEEDED_BLOBS.repositoryPolicy),
      organizationPolicy: withSha(evidence.organizationPolicy, SEEDED_BLOBS.organizationPolicy, ORGANIZATION_POLICY_COMMIT),
    }),
  };
}

function record(scenarioId: string, repository: { id: number; full_name: string }, publishedAtMs: number, over?: (evidence: Evidence) => Evidence) {
  const { evidence, settings } = evidenceOf(scenarioId, over);
  const decision = evaluate(evidence, settings);
  return buildDecisionRecord(decision, evidence, {
    installationId: 4, repository, checkRunId: 900 + evidence.pullRequest.number, title: renderCheck(decision).title, publishedAtMs,
    service: { version: "0.0.0-e2e", revision: null }, settings, organizationPolicyRepository: ".forge",
  });
}

// Playwright runs beforeAll again in a new worker after a failed test: the records are written once per database, and what
// was written is kept beside it and printed again.
const written = `${url.slice("sqlite:".length)}.decisions-seed.json`;
if (existsSync(written)) {
  console.log(readFileSync(written, "utf8"));
  process.exit(0);
}

const store = openStore(parseDatabaseUrl(url, false));
try {
  const widgets = { id: 501, full_name: "acme/widgets" };
  const t = Date.parse("2026-11-20T10:00:00Z");
  const approvedBody = record("owner-approves-head", widgets, t);
  const approved = await seedDecision(store, t, approvedBody);
  const merged = await seedMerge(store, t + 60_000, { repository: widgets.full_name, repositoryId: widgets.id, pull: 42, head: approvedBody.head_sha, mergeCommit: "5".repeat(40), mergedBy: { id: 102, login: "bob" } });
  const failedBody = record("older-head", widgets, t + 3_600_000, (e) => ({ ...e, pullRequest: { ...e.pullRequest, number: 43, headSha: "6".repeat(40) }, sameHeadPullRequests: { complete: true, items: [{ number: 43, headSha: "6".repeat(40) }] } }));
  const failed = await seedDecision(store, t + 3_600_000, { ...failedBody, confirmed: false });
  const bypass = await seedMerge(store, t + 3_660_000, { repository: widgets.full_name, repositoryId: widgets.id, pull: 43, head: failedBody.head_sha, mergeCommit: "7".repeat(40), mergedBy: { id: 102, login: "bob" } });
  const gadgetsBody = record("owner-approves-head", { id: 502, full_name: "acme/gadgets" }, t + 7_200_000, (e) => ({ ...e, repository: { ...e.repository, name: "gadgets" }, pullRequest: { ...e.pullRequest, number: 7, headSha: "8".repeat(40) }, sameHeadPullRequests: { complete: true, items: [{ number: 7, headSha: "8".repeat(40) }] } }));
  const gadgets = await seedDecision(store, t + 7_200_000, gadgetsBody);
  // Another pull request and head, its reviews of the scenario's head moved to the new head with it.
  const onPull = (number: number, head: string) => (e: Evidence): Evidence => ({
    ...e, pullRequest: { ...e.pullRequest, number, headSha: head }, sameHeadPullRequests: { complete: true, items: [{ number, headSha: head }] },
    reviews: e.reviews.complete ? { ...e.reviews, items: e.reviews.items.map((r) => (r.commitId === e.pullRequest.headSha ? { ...r, commitId: head } : r)) } : e.reviews,
  });
  const overrideBody = record("break-glass", widgets, t + 10_800_000, onPull(44, "9".repeat(40)));
  const override = await seedDecision(store, t + 10_800_000, overrideBody);
  const overrideMerge = await seedMerge(store, t + 10_860_000, { repository: widgets.full_name, repositoryId: widgets.id, pull: 44, head: overrideBody.head_sha, mergeCommit: "b".repeat(40), mergedBy: { id: 102, login: "bob" } });
  // The review's first line as a hostile pull request would write it: markup that must stay text, and 3,000 more characters.
  const hostileReason = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b> ${"W".repeat(3000)}`;
  const hostileBody = record("break-glass", { id: 502, full_name: "acme/gadgets" }, t + 14_400_000, (e) => {
    const moved = onPull(8, "d".repeat(40))({ ...e, repository: { ...e.repository, name: "gadgets" } });
    if (!moved.reviews.complete) throw new Error("the break-glass scenario's reviews are incomplete");
    const items = moved.reviews.items.map((review) => (review.bodyFirstLine?.startsWith("break-glass:") ? { ...review, bodyFirstLine: `break-glass: ${hostileReason}` } : review));
    return { ...moved, reviews: { ...moved.reviews, items } };
  });
  if (hostileBody.break_glass === null || overrideBody.break_glass === null) throw new Error("the break-glass scenario did not override");
  const hostile = await seedDecision(store, t + 14_400_000, hostileBody);
  const tools = { id: 503, full_name: "acme/tools" };
  const unconfirmedBody = record("break-glass", tools, t + 18_000_000, (e) => onPull(3, "e".repeat(40))({ ...e, repository: { ...e.repository, name: "tools" } }));
  const unconfirmed = await seedDecision(store, t + 18_000_000, { ...unconfirmedBody, confirmed: false });
  const unconfirmedMerge = await seedMerge(store, t + 18_060_000, { repository: tools.full_name, repositoryId: tools.id, pull: 3, head: unconfirmedBody.head_sha, mergeCommit: "f0".repeat(20), mergedBy: { id: 102, login: "bob" } });
  const legacy = { id: 504, full_name: "acme/legacy" };
  const notEnrolled = await seedMerge(store, t + 21_660_000, { repository: legacy.full_name, repositoryId: legacy.id, pull: 5, head: "9a".repeat(20), mergeCommit: "9b".repeat(20), mergedBy: { id: 102, login: "bob" }, baseSha: "9c".repeat(20), enrollment: "not_enrolled" });
  const queue = { id: 505, full_name: "acme/queue" };
  const groupAt = t - 7_200_000;
  const queued = [{ pull: 45, head: "45".repeat(20) }, { pull: 46, head: "46".repeat(20) }];
  const queuedDecisions: number[] = [];
  for (const [index, q] of queued.entries()) {
    const body = record("owner-approves-head", queue, groupAt - 600_000 + index * 60_000, (e) => onPull(q.pull, q.head)({ ...e, repository: { ...e.repository, name: "queue" } }));
    queuedDecisions.push(Number((await seedDecision(store, groupAt - 600_000 + index * 60_000, body)).slice(1)));
  }
  const groupRow = { headSha: "47".repeat(20), headRef: `refs/heads/gh-readonly-queue/main/pr-46-${"46".repeat(20)}`, baseRef: "main", baseSha: "48".repeat(20) };
  const groupMembers: JudgedMember[] = queued.map((q, index) => ({
    pullNumber: q.pull, headSha: q.head, recordId: queuedDecisions[index]!, ruleSource: index === 0 ? "recorded" : "reevaluated", outcome: "passed", reason: null, changedBy: null,
  }));
  const groupRepository = { installationId: 4, repositoryId: queue.id, owner: "acme", name: "queue" };
  await store.execute(() => recordGroupJudgement({
    ...groupRepository, headSha: groupRow.headSha, success: true, members: queued.map((q) => ({ pullNumber: q.pull, headSha: q.head })), now: groupAt,
    record: { body: groupRecordBody(groupRepository, { ...groupRow, installationId: 4, repositoryId: queue.id, state: "queued", destroyedReason: null, requestedAtMs: groupAt, resetPending: false }, 947, "success", "Merge group verified: 2 pull requests", groupMembers, groupAt), sharedGeneration: 1, digest: "seeded" },
  }));
  const group = (await store.execute(() => listHistory({ commit: groupRow.headSha }, null, 1))).items[0]!.id;
  const queueMerge = await seedMerge(store, groupAt + 60_000, { repository: queue.full_name, repositoryId: queue.id, pull: 46, head: queued[1]!.head, mergeCommit: groupRow.headSha, mergedBy: { id: 102, login: "bob" } });
  const output = JSON.stringify({
    approved: { id: approved, head: approvedBody.head_sha, base: approvedBody.base_sha, title: approvedBody.title, conclusion: approvedBody.conclusion },
    merged: { id: merged, mergeCommit: "5".repeat(40) },
    failed: { id: failed, head: failedBody.head_sha, title: failedBody.title, conclusion: failedBody.conclusion },
    bypass: { id: bypass, mergeCommit: "7".repeat(40) },
    gadgets: { id: gadgets },
    override: { id: override, head: overrideBody.head_sha, breakGlass: overrideBody.break_glass, ownerSets: overrideBody.owner_sets.map((set) => set.owners) },
    overrideMerge: { id: overrideMerge, mergeCommit: "b".repeat(40) },
    hostile: { id: hostile, reason: hostileReason, recorded: hostileBody.break_glass.reason },
    unconfirmed: { id: unconfirmed },
    unconfirmedMerge: { id: unconfirmedMerge },
    notEnrolled: { id: notEnrolled, mergeCommit: "9b".repeat(20), base: "9c".repeat(20) },
    group: { id: group, head: groupRow.headSha, decisions: queuedDecisions.map((n) => `d${n}`) },
    queueMerge: { id: queueMerge },
    blobs: SEEDED_BLOBS,
    organizationPolicyCommit: ORGANIZATION_POLICY_COMMIT,
  });
  writeFileSync(written, output);
  console.log(output);
} finally {
  await store.close();
}

import { describe, expect, test } from "bun:test";
import { evaluate } from "../evaluation/evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence, type FileRead } from "../evaluation/evidence.ts";
import {
  approve, BASE_CODEOWNERS, BASE_ORGANIZATION_POLICY, baseEvidence, directoryFromPlan, ENABLED_POLICY, HEAD, review, unedited, USERS, withFiles, withOrganizationPolicy, withReviews,
} from "../evaluation/evidence-fixture.ts";
import { buildDecisionRecord, type PublicationFacts, recordBytes } from "./build.ts";
import { gitBlobSha } from "./record-fixture.ts";
import { decodeRecordBody, encodeRecordBody } from "./codec.ts";
import type { RecordedFileRead, RecordedInputs } from "./schema.ts";

/** The decision record's content and bounds (DESIGN 3.10, issue 28 items 1 and 6). */
const blobSha = (text: string) => gitBlobSha(Buffer.from(text));
const withBlob = (read: FileRead, commitSha?: string): FileRead => (read.kind === "found" ? { ...read, blobSha: blobSha(read.text), ...(commitSha ? { commitSha } : {}) } : read);
const POLICY_COMMIT = "e".repeat(40);

/** Evidence as the forge fetcher gives it: blob SHAs on found files, the organization policy's commit, submitted times. */
function fetched(evidence: Evidence): Evidence {
  return {
    ...evidence,
    codeowners: Object.fromEntries(Object.entries(evidence.codeowners).map(([location, read]) => [location, withBlob(read)])),
    repositoryPolicy: withBlob(evidence.repositoryPolicy),
    organizationPolicy: withBlob(evidence.organizationPolicy, POLICY_COMMIT),
    reviews: evidence.reviews.complete ? { complete: true, items: evidence.reviews.items.map((r, i) => ({ ...r, submittedAt: `2026-11-01T10:0${i}:00Z` })) } : evidence.reviews,
  };
}

const facts: PublicationFacts = {
  installationId: 4, repository: { id: 40, full_name: "acme/widgets" }, checkRunId: 900, title: "title", publishedAtMs: Date.UTC(2026, 10, 1, 12),
  service: { version: "1.2.3", revision: null }, settings: DEFAULT_EVALUATION_SETTINGS, organizationPolicyRepository: ".forge",
};

/** A typical pull request: 50 files in three owner sets (src/ by @alice, docs/ by @acme/docs, the rest by @acme/core). */
function typical(): Evidence {
  const files = [
    ...Array.from({ length: 25 }, (_, i) => `src/components/widget-${i}/index.tsx`),
    ...Array.from({ length: 15 }, (_, i) => `docs/guides/chapter-${i}.md`),
    ...Array.from({ length: 10 }, (_, i) => `tools/scripts/task-${i}.ts`),
  ];
  return fetched(directoryFromPlan(withReviews(withFiles(baseEvidence(), files), approve(USERS.alice), approve(USERS.bob), approve(USERS.erin), review(USERS.carol, "COMMENTED"))));
}

/** Replay as DESIGN 3.10 says: the recorded inputs, each file read again by its blob SHA. */
function replayed(inputs: RecordedInputs, blobs: ReadonlyMap<string, string>): Evidence {
  const read = (recorded: RecordedFileRead): FileRead => (recorded.kind === "found" ? { kind: "found", path: recorded.path, bytes: recorded.bytes, text: blobs.get(recorded.blob_sha!)! } : recorded);
  return {
    ...inputs,
    codeowners: Object.fromEntries(Object.entries(inputs.codeowners).map(([location, recorded]) => [location, read(recorded)])),
    repositoryPolicy: read(inputs.repositoryPolicy),
    organizationPolicy: read(inputs.organizationPolicy),
  };
}

describe("decision records", () => {
  test("a typical record (50 files, 3 owner sets) is at most 2 KiB stored", () => {
    const evidence = typical();
    const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
    expect(decision.conclusion).toBe("success");
    expect(decision.ownerSets).toHaveLength(3);
    const body = buildDecisionRecord(decision, evidence, facts);
    const stored = encodeRecordBody(body).bytes.byteLength;
    console.log(JSON.stringify({ typical_record: { json_bytes: recordBytes(body), stored_bytes: stored } }));
    expect(body.summarised).toBeNull();
    expect(stored).toBeLessThanOrEqual(2048);
  });

  test("a success names each owner set's patterns and the reviews that satisfied it, with the rule, and the files by blob SHA, never their text", () => {
    const evidence = typical();
    const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
    const body = buildDecisionRecord(decision, evidence, facts);
    expect(body).toMatchObject({
      schema_version: 1, kind: "decision", installation_id: 4, repository: { id: 40, full_name: "acme/widgets" }, pull_request: 7, head_sha: HEAD,
      check_run_id: 900, conclusion: "success", title: "title", reasons: [], published_at: "2026-11-01T12:00:00.000Z", service: { version: "1.2.3", revision: null },
      codeowners: { path: "CODEOWNERS", blob_sha: blobSha(BASE_CODEOWNERS) },
      repository_policy: { path: ".forge/service-policy.toml", blob_sha: blobSha(ENABLED_POLICY) },
      organization_policy: { repository: "acme/.forge", blob_sha: blobSha(BASE_ORGANIZATION_POLICY), commit_sha: POLICY_COMMIT },
      unowned_path_count: 0, non_delegable_path_count: 0, break_glass: null, summarised: null,
    });
    const reviews = evidence.reviews.complete ? evidence.reviews.items : [];
    const found = (login: string) => reviews.find((r) => r.user?.login === login)!;
    const by = (login: string) => ({ id: found(login).id, submittedAt: found(login).submittedAt ?? null });
    expect(body.owner_sets.map((set) => [set.patterns, set.owners, set.path_count, set.status, set.satisfied_by])).toEqual([
      [["*"], ["@acme/core"], 10, "satisfied", [{ review_id: by("bob").id, reviewer_id: USERS.bob.id, reviewer_login: "bob", commit_id: HEAD, submitted_at: by("bob").submittedAt, rule: "team_membership", via: "@acme/core" }]],
      [["/docs/"], ["@acme/docs"], 15, "satisfied", [{ review_id: by("erin").id, reviewer_id: USERS.erin.id, reviewer_login: "erin", commit_id: HEAD, submitted_at: by("erin").submittedAt, rule: "team_membership", via: "@acme/docs" }]],
      [["/src/"], ["@alice"], 25, "satisfied", [{ review_id: by("alice").id, reviewer_id: USERS.alice.id, reviewer_login: "alice", commit_id: HEAD, submitted_at: by("alice").submittedAt, rule: "direct_owner", via: "@alice" }]],
    ]);
    expect(body.owner_sets[2]!.paths).toHaveLength(25);
    const json = JSON.stringify(body);
    expect(json).not.toContain("enabled = true");
    expect(json).not.toContain("@alice\n");
    expect(body.inputs?.directory).toEqual(evidence.directory);
    expect(decodeRecordBody(encodeRecordBody(body).bytes)).toEqual(body);
  });

  test("the recorded inputs replay to the same conclusion, owner sets and reasons, for a failure too", () => {
    const blobs = new Map([BASE_CODEOWNERS, ENABLED_POLICY, BASE_ORGANIZATION_POLICY].map((text) => [blobSha(text), text]));
    const failing = fetched(directoryFromPlan(withReviews(withFiles(baseEvidence(), ["src/a.ts", "deploy/x.yaml", "vendor/lib.js"]), approve(USERS.alice))));
    for (const evidence of [typical(), failing]) {
      const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
      const body = buildDecisionRecord(decision, evidence, facts);
      const again = evaluate(replayed(body.inputs!, blobs), DEFAULT_EVALUATION_SETTINGS);
      expect([again.conclusion, again.ownerSets, again.reasons]).toEqual([decision.conclusion, decision.ownerSets, decision.reasons]);
    }
    const failure = buildDecisionRecord(evaluate(failing, DEFAULT_EVALUATION_SETTINGS), failing, facts);
    expect(failure).toMatchObject({ conclusion: "failure", unowned_path_count: 1, non_delegable_path_count: 1 });
    expect(failure.owner_sets.map((set) => set.status)).toEqual(["missing", "satisfied"]);
  });

  test("past the bound the owner sets' paths go first and the record stays replayable; past it again the inputs go too", () => {
    const evidence = typical();
    const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
    const whole = recordBytes(buildDecisionRecord(decision, evidence, facts));
    const pathBytes = decision.ownerSets.flatMap((set) => set.paths).reduce((sum, path) => sum + path.length + 3, 0);
    expect(buildDecisionRecord(decision, evidence, facts, whole).summarised).toBeNull();
    const lighter = buildDecisionRecord(decision, evidence, facts, whole - 1);
    expect(lighter.summarised).toEqual({ omitted: "owner_set_paths", replayable: true });
    expect(lighter.owner_sets.map((set) => [set.path_count, set.paths])).toEqual([[10, []], [15, []], [25, []]]);
    expect(lighter.inputs).not.toBeNull();
    expect(recordBytes(lighter)).toBeLessThanOrEqual(whole - 1);
    const smallest = buildDecisionRecord(decision, evidence, facts, whole - pathBytes - 1);
    expect(smallest.summarised).toEqual({ omitted: "inputs", replayable: false });
    expect(smallest.inputs).toBeNull();
    expect(smallest.owner_sets[0]!.satisfied_by).toHaveLength(1);
  });

  test("a pull request of 3,000 files stays within MAX_RECORD_BYTES", () => {
    const files = Array.from({ length: 2_999 }, (_, i) => `src/very/deep/directory/structure/for/many/files/number-${String(i).padStart(5, "0")}/component-implementation.tsx`);
    const evidence = fetched(directoryFromPlan(withReviews(withFiles(baseEvidence(), files), approve(USERS.alice))));
    const body = buildDecisionRecord(evaluate(evidence, DEFAULT_EVALUATION_SETTINGS), evidence, facts);
    expect(body.summarised).not.toBeNull();
    expect(recordBytes(body)).toBeLessThanOrEqual(256 * 1024);
  });

  test("a break-glass override is recorded with its reviewer, team and reason, and stands in the sets it lifted as a break_glass approval", () => {
    const ONCALL = { id: 30, login: "oncall", type: "User" } as const;
    const base = withOrganizationPolicy(baseEvidence(), `${BASE_ORGANIZATION_POLICY}[break_glass]\nteams = ["sre"]\n`);
    const teams = base.directory.teams;
    const notOwner = (team: string) => ({ ...teams[team]!, memberships: { ...teams[team]!.memberships, oncall: { kind: "not_found" as const } } });
    const reason = `prod is down ${"x".repeat(600)}`;
    const request = { ...review(ONCALL, "APPROVED"), bodyFirstLine: `break-glass: ${reason}`, submittedAt: "2026-11-01T11:00:00Z" };
    const evidence: Evidence = unedited({
      ...withReviews(base, request),
      directory: { ...base.directory, teams: { "acme/core": notOwner("acme/core"), "acme/docs": notOwner("acme/docs"), "acme/sre": { memberships: { oncall: { kind: "found", value: { state: "active" } } } } } },
    });
    const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
    expect(decision.breakGlass).not.toBeNull();
    const body = buildDecisionRecord(decision, evidence, facts);
    expect(body.break_glass).toEqual({ review_id: request.id, reviewer_id: ONCALL.id, reviewer_login: "oncall", reason: decision.breakGlass!.reason.trim().slice(0, 500), team: decision.breakGlass!.team, unsatisfied_owner_sets: decision.breakGlass!.unsatisfiedOwnerSets });
    expect(body.break_glass!.reason).toHaveLength(500);
    const lifted = decision.breakGlass!.unsatisfiedOwnerSets;
    expect(lifted.length).toBeGreaterThan(0);
    for (const [index, set] of body.owner_sets.entries()) {
      const standIn = set.satisfied_by.filter((approval) => approval.rule === "break_glass");
      expect(standIn).toEqual(lifted.includes(index) ? [{ review_id: request.id, reviewer_id: ONCALL.id, reviewer_login: "oncall", commit_id: HEAD, submitted_at: "2026-11-01T11:00:00Z", rule: "break_glass", via: decision.breakGlass!.team }] : []);
    }
    // Without an override, nothing of it.
    expect(buildDecisionRecord(evaluate(typical(), DEFAULT_EVALUATION_SETTINGS), typical(), facts).break_glass).toBeNull();
    expect(body.break_glass_refusals).toBeUndefined();
  });

  test("a refused break-glass request is recorded with its code: an edited review as edited", () => {
    const ONCALL = { id: 30, login: "oncall", type: "User" } as const;
    const base = withOrganizationPolicy(baseEvidence(), `${BASE_ORGANIZATION_POLICY}[break_glass]\nteams = ["sre"]\n`);
    const request = { ...review(ONCALL, "APPROVED"), bodyFirstLine: "break-glass: prod is down and the owners are asleep" };
    const withRequest = withReviews(base, request);
    const evidence: Evidence = { ...withRequest, directory: { ...withRequest.directory, teams: { ...base.directory.teams, "acme/sre": { memberships: { oncall: { kind: "found", value: { state: "active" } } } } }, reviewEdits: { [String(request.id)]: { kind: "found", value: { lastEditedAt: "2026-11-28T12:00:00Z" } } } } };
    const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
    const body = buildDecisionRecord(decision, evidence, facts);
    expect(body.conclusion).toBe("failure");
    expect(body.break_glass).toBeNull();
    expect(body.break_glass_refusals).toEqual([{ review_id: request.id, reviewer_login: "oncall", code: "edited" }]);
    // The answer it was decided on is in the inputs, for replay.
    expect(body.inputs?.directory.reviewEdits).toEqual({ [String(request.id)]: { kind: "found", value: { lastEditedAt: "2026-11-28T12:00:00Z" } } });
  });

  test("only a conclusive decision is recorded", () => {
    const evidence = { ...typical(), reviews: { complete: false as const, cause: "transient" as const, detail: "timeout" } };
    expect(() => buildDecisionRecord(evaluate(evidence, DEFAULT_EVALUATION_SETTINGS), evidence, facts)).toThrow(/conclusive/);
  });
});

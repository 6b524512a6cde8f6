import type { DecisionRecordBody } from "./codec.ts";
import { RECORD_SCHEMA_VERSION } from "./schema.ts";

/**
 * A decision record body for tests (store writers and readers, history commands and routes): a success on pull request 7
 * of acme/web approved by one direct owner. Override any field; the defaults are plausible, never a real record.
 */
export function sampleDecisionBody(overrides: Partial<DecisionRecordBody> = {}): DecisionRecordBody {
  return {
    schema_version: RECORD_SCHEMA_VERSION,
    kind: "decision",
    installation_id: 4,
    repository: { id: 40, full_name: "acme/web" },
    pull_request: 7,
    head_sha: "d".repeat(40),
    base_sha: "b".repeat(40),
    check_run_id: 900,
    conclusion: "success",
    title: "Code owners approved",
    reasons: [],
    published_at: "2026-11-01T12:00:00.000Z",
    service: { version: "0.0.0-test", revision: null },
    codeowners: { path: ".github/CODEOWNERS", blob_sha: "c".repeat(40), bytes: 42 },
    repository_policy: null,
    organization_policy: null,
    owner_sets: [{
      patterns: ["/src/"], owners: ["@alice"], required: 1, approvals: 1, status: "satisfied",
      satisfied_by: [{ review_id: 11, reviewer_id: 101, reviewer_login: "alice", commit_id: "d".repeat(40), submitted_at: "2026-11-01T11:59:00Z", rule: "direct_owner", via: "@alice" }],
      path_count: 1, paths: ["src/a.ts"],
    }],
    unowned_path_count: 0,
    non_delegable_path_count: 0,
    break_glass: null,
    summarised: null,
    inputs: null,
    ...overrides,
  };
}

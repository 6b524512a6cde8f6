import { t } from "elysia";

/**
 * Route models of `GET /api/decisions` and `GET /api/decisions/{id}` (they document the routes in the OpenAPI document). The
 * record's own shape is server/records/schema.ts; these models name its fields for readers of the document, and leave the
 * evidence detail (`owner_sets`, `inputs`, …) described rather than spelled out field by field.
 */
const sha = t.String({ pattern: "^[0-9a-f]{40}([0-9a-f]{24})?$" });
const repository = t.Object({ id: t.Integer(), full_name: t.String({ description: "owner/name when the record was written" }) });

const DecisionSummary = t.Object({
  schema_version: t.Literal(1),
  kind: t.Literal("decision"),
  id: t.String({ pattern: "^d[1-9][0-9]*$" }),
  confirmed: t.Boolean({ description: "false: written before the completing check write and never confirmed after it; the write may not have reached the forge" }),
  repository,
  pull_request: t.Integer(),
  head_sha: sha,
  conclusion: t.Union([t.Literal("success"), t.Literal("failure")]),
  title: t.String(),
  published_at: t.String({ format: "date-time" }),
  break_glass: t.Boolean({ description: "the decision was reached by a break-glass override" }),
});

const mergeFields = {
  schema_version: t.Literal(1),
  kind: t.Literal("merge"),
  id: t.String({ pattern: "^m[1-9][0-9]*$" }),
  repository,
  pull_request: t.Integer(),
  head_sha: t.String({ description: "the head at merge" }),
  merge_commit_sha: t.Union([t.String(), t.Null()]),
  merged_by: t.Union([t.Object({ id: t.Integer(), login: t.String() }), t.Null()]),
  merged_at: t.Union([t.String({ format: "date-time" }), t.Null()]),
  decision_id: t.Union([t.String({ pattern: "^d[1-9][0-9]*$" }), t.Null()], { description: "the decision record current for the head at merge" }),
  decision_conclusion: t.Union([t.Literal("success"), t.Literal("failure"), t.Null()]),
  unapproved: t.Boolean({ description: "no current success from the service for the head at merge: an administrator bypass, or the check not required" }),
  reset_at: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "when the service reset the head's check to in progress after the decision's success, withdrawing it (the merge is then unapproved); null: no reset followed it" }),
  base_sha: t.Union([t.String(), t.Null()], { description: "the base commit it merged onto" }),
  enrollment: t.Union([t.Literal("enrolled"), t.Literal("not_enrolled"), t.Literal("pending")], { description: "whether the repository policy at the base commit enables the service: not_enrolled merges are never unapproved; pending: not read yet" }),
  break_glass: t.Boolean(),
  recovered: t.Boolean({ description: "found by the reconciler among recently closed pull requests (the closed delivery was missed)" }),
  recorded_at: t.String({ format: "date-time" }),
  merge_group_id: t.Optional(t.Union([t.String({ pattern: "^d[1-9][0-9]*$" }), t.Null()], { description: "the merge-group record that verified this pull request at this head (a merge through the merge queue)" })),
};
const MergeSummary = t.Object(mergeFields);

const groupFields = {
  schema_version: t.Literal(1),
  kind: t.Literal("merge_group"),
  id: t.String({ pattern: "^d[1-9][0-9]*$" }),
  confirmed: t.Boolean(),
  repository,
  head_sha: t.String({ description: "the merge queue's group commit, on which the check was published" }),
  base_ref: t.String(),
  conclusion: t.Union([t.Literal("success"), t.Literal("failure")]),
  title: t.String(),
  published_at: t.String({ format: "date-time" }),
};
const MergeGroupSummary = t.Object({
  ...groupFields,
  break_glass: t.Literal(false),
  pull_requests: t.Array(t.Integer(), { description: "the pull requests of the group, in queue order" }),
});
const MergeGroupRecordModel = t.Object({
  ...groupFields,
  installation_id: t.Integer(),
  base_sha: t.String({ description: "the group's parent commit" }),
  check_run_id: t.Union([t.Integer(), t.Null()]),
  service: t.Object({ version: t.String(), revision: t.Union([t.String(), t.Null()]) }),
  members: t.Array(t.Object({
    pull_request: t.Integer(),
    head_sha: t.String(),
    decision_id: t.Union([t.String({ pattern: "^d[1-9][0-9]*$" }), t.Null()]),
    rule_source: t.Union([t.Literal("recorded"), t.Literal("reevaluated"), t.Null()]),
    outcome: t.Union([t.Literal("passed"), t.Literal("refused"), t.Literal("incomplete")]),
    reason: t.Union([t.String(), t.Null()]),
    changed_by: t.Union([t.Integer(), t.Null()]),
  }), { description: "each pull request of the group, the decision the judgement took and why it passed or was refused" }),
});

export const HistoryPageModel = t.Object({
  schema_version: t.Literal(1),
  items: t.Array(t.Union([DecisionSummary, MergeSummary, MergeGroupSummary]), { description: "newest first: decisions by publication time, merges by the time they were recorded" }),
  next_cursor: t.Union([t.String(), t.Null()], { description: "pass as `cursor` for the next page; null after the last" }),
});

export const HistoryRecordModel = t.Union([
  t.Object(
    {
      ...DecisionSummary.properties,
      installation_id: t.Integer(),
      base_sha: sha,
      check_run_id: t.Union([t.Integer(), t.Null()]),
      reasons: t.Array(t.String()),
      service: t.Object({ version: t.String(), revision: t.Union([t.String(), t.Null()]) }),
      codeowners: t.Union([t.Object({ path: t.String(), blob_sha: t.Union([t.String(), t.Null()]), bytes: t.Integer() }), t.Null()], { description: "the code-owners file read at the base commit (by blob SHA; contents are never stored)" }),
      repository_policy: t.Union([t.Object({ path: t.String(), blob_sha: t.Union([t.String(), t.Null()]), bytes: t.Integer() }), t.Null()]),
      organization_policy: t.Union([t.Object({ path: t.String(), blob_sha: t.Union([t.String(), t.Null()]), bytes: t.Integer(), repository: t.String(), commit_sha: t.Union([t.String(), t.Null()]) }), t.Null()]),
      owner_sets: t.Array(t.Object({}, { additionalProperties: true, description: "patterns, owners, required, approvals, status, satisfied_by (the reviews that satisfied it and the rule that made each count), path_count, paths" })),
      unowned_path_count: t.Integer(),
      non_delegable_path_count: t.Integer(),
      break_glass: t.Union([t.Object({}, { additionalProperties: true }), t.Null()], { description: "the break-glass override that reached the decision: reviewer, reason, team, and the owner sets its owners did not satisfy" }),
      summarised: t.Union([t.Object({ omitted: t.String(), replayable: t.Boolean() }), t.Null()]),
      inputs: t.Union([t.Object({}, { additionalProperties: true, description: "the evaluation's inputs as recorded, file texts replaced by blob SHAs (for replay)" }), t.Null()]),
    },
    { additionalProperties: true },
  ),
  t.Object({ ...mergeFields, installation_id: t.Integer() }),
  MergeGroupRecordModel,
]);

export const HistoryError = t.Object({
  error: t.String({ description: "invalid_parameter, invalid_id, not_found, unauthorized (no valid credential), too_many_repositories, forge (the forge did not say what the reader may read) or database" }),
  parameter: t.Optional(t.String({ description: "the query parameter refused" })),
  detail: t.Optional(t.String({ description: "the rule it broke" })),
});

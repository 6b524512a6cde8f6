// Bounds of the decision core (DESIGN 3.6 "Bounds"). Work beyond any of them blocks authorization (fail closed): the
// evaluation publishes failure naming the bound; it never proceeds on a partial view.

/** Repository and organization policy files: 64 KiB of UTF-8 (DESIGN 3.6). */
export const MAX_POLICY_FILE_BYTES = 64 * 1024;

/** CODEOWNERS must be under 3,000,000 bytes; at or over it nothing is loaded (DESIGN 3.6; the forge documents a 3 MB limit). */
export const MAX_CODEOWNERS_BYTES = 3_000_000;

/** Rules (non-comment lines) in one CODEOWNERS file (DESIGN 3.6). */
export const MAX_CODEOWNERS_RULES = 100_000;

/** A pull request with this many changed files or more is rejected: the forge lists at most 3,000 (spec "Limits"). */
export const MAX_PULL_REQUEST_FILES = 3_000;

/** Reviews of one pull request (DESIGN 3.6). */
export const MAX_REVIEWS = 1_000;

/** Open pull requests on one head, for the shared-head check and exact-head invalidation (DESIGN 3.6, 3.9). */
export const MAX_OPEN_PULL_REQUESTS = 1_000;

/** Distinct owners resolved in one evaluation (DESIGN 3.6). */
export const MAX_RESOLVED_OWNERS = 200;

/**
 * Owner tokens (DESIGN 3.6): the forge's own limits, so a longer token can name no one and is an invalid line. Logins of
 * users and organizations have at most 39 characters, team slugs at most 255; an e-mail address has at most 254 (RFC 5321's
 * path limit less its angle brackets).
 */
export const MAX_LOGIN_CHARS = 39;
export const MAX_TEAM_SLUG_CHARS = 255;
export const MAX_EMAIL_CHARS = 254;

/** `trusted_apps` entries of the organization policy (DESIGN 3.6). */
export const MAX_TRUSTED_APPS = 50;

/** `delegations` entries of the repository policy (DESIGN 3.6). */
export const MAX_DELEGATIONS = 100;

/** `guardrails.non_delegable_paths` patterns of the organization policy (DESIGN 3.6). */
export const MAX_GUARDRAIL_PATTERNS = 500;

/** Patterns of one delegation's `paths` (not in DESIGN 3.6; bounded like guardrails so path-pattern work stays bounded). */
export const MAX_DELEGATION_PATTERNS = 500;

/**
 * Path-matching steps one evaluation may spend (issue 16 item 2; match-budget.ts says what a step is): parsing the CODEOWNERS
 * file (issue 25 item 5), the CODEOWNERS match of every changed path plus the delegation and guardrail checks. Each pattern
 * matches in time linear in pattern × path, but rules, paths and delegation patterns still multiply; past this the
 * evaluation fails closed with `matching_budget_exceeded` instead of holding a worker. With their 2,999 paths the
 * benchmark's 10,000-rule file costs about 1,340,000 steps and its 3 MB file about 9,240,000, nearly all of it parsing;
 * 20,000,000 steps take about a quarter to a third of a second on the 2-core benchmark machine.
 */
export const MAX_MATCH_STEPS = 20_000_000;

/**
 * Path-matching steps the change preview may spend, both sides together (issue 25 item 1): a quarter of MAX_MATCH_STEPS, so
 * the preview of a hostile head file adds at most a quarter of a decision's matching work. Past it the preview compares no
 * owner sets and says why; the decision is unaffected.
 */
export const MAX_PREVIEW_MATCH_STEPS = MAX_MATCH_STEPS / 4;

/** `required_approvals` range (DESIGN 3.1). */
export const MIN_REQUIRED_APPROVALS = 1;
export const MAX_REQUIRED_APPROVALS = 10;

/** The forge's check-run output limit: 65,535 characters per field (title, summary, text). */
export const MAX_CHECK_OUTPUT_CHARS = 65_535;

/** Paths listed per owner set in the check output before "and N more". */
export const MAX_RENDERED_PATHS_PER_SET = 20;

/** A path longer than this many code points is shown in the check output as its head and tail around "…". */
export const MAX_RENDERED_PATH_CHARS = 200;

/** Owners listed per owner set in the check output (and per side of a preview's change) before "and N more". */
export const MAX_RENDERED_OWNERS_PER_SET = 20;

/** An owner longer than this many code points is shown in the check output as its head and tail around "…". */
export const MAX_RENDERED_OWNER_CHARS = 100;

/** Reviews listed per owner set under "did not count"; the rest are counted, not listed (keeps decisions small). */
export const MAX_LISTED_REVIEWS_PER_SET = 50;

/**
 * Path-matching steps `service validate` may spend on its tree checks (issue 19 item 1; not in DESIGN 3.6): every rule against
 * every path of a whole tree, so ten times one evaluation's MAX_MATCH_STEPS. The benchmark's 10,000-file tree with 2,000 rules
 * needs under 100,000 steps (e2e/bench/validate-bench.ts); spending all of this bound takes a few seconds, after which the
 * validator reports it as a finding instead of holding a CI job on a hostile pattern.
 */
export const MAX_VALIDATION_MATCH_STEPS = 200_000_000;

/** `[break_glass] min_reason_length` of the organization policy: default and range (DESIGN 3.11). */
export const DEFAULT_BREAK_GLASS_REASON_LENGTH = 20;
export const MIN_BREAK_GLASS_REASON_LENGTH = 10;
export const MAX_BREAK_GLASS_REASON_LENGTH = 500;

/**
 * `[break_glass] teams` of the organization policy (not in DESIGN 3.11): each listed team costs one membership lookup per
 * override request, so the list is short; an organization names its on-call teams, not every team.
 */
export const MAX_BREAK_GLASS_TEAMS = 10;

/**
 * Override requests (reviews whose body starts with `break-glass:`) judged per evaluation, the most recent first (not in
 * DESIGN 3.11). Anyone who can review may write the marker, so the membership lookups they cause are bounded: at most
 * MAX_BREAK_GLASS_REQUESTS × MAX_BREAK_GLASS_TEAMS. Older requests are refused as `too_many_requests`.
 */
export const MAX_BREAK_GLASS_REQUESTS = 10;

/**
 * Characters of a review body's first line that the evidence keeps (the only part of a body the service reads: the
 * break-glass marker and reason). A body is hostile input of up to 65,536 characters; this keeps the marker, the longest
 * reason counted (MAX_BREAK_GLASS_REASON_LENGTH) and room for the whitespace around it.
 */
export const MAX_REVIEW_BODY_LINE_CHARS = 1_024;

/** Characters of a break-glass reason shown in the check output before "…" (DESIGN 3.11). */
export const MAX_RENDERED_BREAK_GLASS_REASON_CHARS = 500;

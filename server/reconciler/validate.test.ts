import { describe, expect, test } from "bun:test";
import { HEAD_A, HEAD_B, installationItem, pullItem, repositoryItem } from "./test-support.ts";
import { isZonedTimestamp, type RejectionReason, validateClosedPullRequests, validateInstallations, validateOpenPullRequests, validateRepositories } from "./validate.ts";

const rejected = (reason: RejectionReason) => ({ kind: "rejected" as const, reason });

describe("reconciliation input validation (spec \"Reconciliation attempt\")", () => {
  test("valid lists map to the fields the scan needs", () => {
    expect(validateInstallations([installationItem(1), installationItem(2, { suspended_at: "2026-11-22T20:00:00Z" })])).toEqual({
      kind: "valid", items: [{ id: 1, suspended: false }, { id: 2, suspended: true }],
    });
    expect(validateRepositories([repositoryItem(10, "web"), repositoryItem(11, "old", { archived: true })])).toEqual({
      kind: "valid", items: [{ id: 10, owner: "acme", name: "web", archived: false }, { id: 11, owner: "acme", name: "old", archived: true }],
    });
    expect(validateOpenPullRequests([pullItem(1, HEAD_A), pullItem(2, HEAD_B)])).toEqual({
      kind: "valid", items: [{ number: 1, headSha: HEAD_A, baseSha: null, baseRef: null, updatedAtMs: null }, { number: 2, headSha: HEAD_B, baseSha: null, baseRef: null, updatedAtMs: null }],
    });
    expect(validateInstallations([])).toEqual({ kind: "valid", items: [] });
  });

  test("an open pull request's base commit, base branch and updated_at are read; missing or malformed ones are null (changed), never a rejection", () => {
    const base = { ref: "main", sha: HEAD_B };
    expect(validateOpenPullRequests([
      pullItem(1, HEAD_A, { base, updated_at: "2026-11-22T20:00:05Z" }),
      pullItem(2, HEAD_A, { base: { ref: "main", sha: "abc1234" }, updated_at: "2026-11-22T20:00:05" }),
      pullItem(3, HEAD_A, { base: "main", updated_at: 1732300000 }),
      pullItem(4, HEAD_A, { base, updated_at: "2026-11-22T21:00:05+01" }),
    ])).toEqual({
      kind: "valid", items: [
        { number: 1, headSha: HEAD_A, baseSha: HEAD_B, baseRef: "main", updatedAtMs: Date.UTC(2026, 10, 22, 20, 0, 5) },
        { number: 2, headSha: HEAD_A, baseSha: null, baseRef: "main", updatedAtMs: null },
        { number: 3, headSha: HEAD_A, baseSha: null, baseRef: null, updatedAtMs: null },
        { number: 4, headSha: HEAD_A, baseSha: HEAD_B, baseRef: "main", updatedAtMs: null },
      ],
    });
  });

  test.each([true, false, "1", null, 0, -1, 1.5, 2 ** 53, undefined])("an installation ID of %p is rejected", (id) => {
    expect(validateInstallations([installationItem(1), { ...installationItem(2), id }])).toEqual(rejected("installation_id_invalid"));
  });

  test.each([true, false, "7", null, 0, -3, 2.5])("a pull-request number of %p is rejected", (number) => {
    expect(validateOpenPullRequests([pullItem(1, HEAD_A), { ...pullItem(2, HEAD_A), number }])).toEqual(rejected("pull_request_number_invalid"));
  });

  test.each([true, "1", null, 0, -10])("a repository ID of %p is rejected", (id) => {
    expect(validateRepositories([{ ...repositoryItem(10, "web"), id }])).toEqual(rejected("repository_id_invalid"));
  });

  test.each(["2026-11-22T20:00:00Z", "2026-11-22T20:00:00.123Z", "2026-11-22T20:00:00+02:00", "2026-11-22T20:00-0530", "2024-02-29T23:59:59+14"])(
    "suspended_at %p is a timezone-aware timestamp",
    (value) => expect(isZonedTimestamp(value)).toBe(true),
  );

  test.each(["2026-11-22T20:00:00", "2026-11-22", "2026-11-22 20:00:00Z", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-22T24:00:00Z",
    "2026-11-22T20:00:00+25:00", "yesterday", "", 0, 1732300000, true, {}, undefined])("suspended_at %p is rejected", (value) => {
    expect(validateInstallations([{ ...installationItem(1), suspended_at: value }])).toEqual(rejected("installation_suspended_at_invalid"));
  });

  test.each([null, "false", 0, 1, undefined])("archived %p (not a JSON boolean) is rejected", (archived) => {
    expect(validateRepositories([{ ...repositoryItem(10, "web"), archived }])).toEqual(rejected("repository_archived_invalid"));
  });

  test.each([null, "abc", [HEAD_A], undefined])("a pull request whose head is %p (not an object) is rejected", (head) => {
    expect(validateOpenPullRequests([{ ...pullItem(1, HEAD_A), head }])).toEqual(rejected("pull_request_head_invalid"));
  });

  test.each([HEAD_A.toUpperCase(), "a".repeat(39), "a".repeat(41), "a".repeat(63), "g".repeat(40), null, 12, undefined])("a head ID of %p is rejected", (sha) => {
    expect(validateOpenPullRequests([{ ...pullItem(1, HEAD_A), head: { sha } }])).toEqual(rejected("pull_request_head_sha_invalid"));
  });

  test("repository name and owner are required to address the repository", () => {
    expect(validateRepositories([{ ...repositoryItem(10, "web"), name: 5 }])).toEqual(rejected("repository_name_invalid"));
    expect(validateRepositories([{ ...repositoryItem(10, "web"), owner: null }])).toEqual(rejected("repository_owner_invalid"));
  });

  test("a response that is not the expected list is rejected before field validation", () => {
    for (const body of [null, {}, "[]", 3, { installations: [] }]) {
      expect(validateInstallations(body)).toEqual(rejected("installations_not_list"));
      expect(validateRepositories(body)).toEqual(rejected("repositories_not_list"));
      expect(validateOpenPullRequests(body)).toEqual(rejected("pull_requests_not_list"));
    }
  });

  test("a non-object item is rejected before any field of any item is looked at", () => {
    // The first item has an invalid ID; the non-object item later in the list still decides the reason.
    expect(validateInstallations([{ ...installationItem(1), id: 0 }, 5])).toEqual(rejected("installation_not_object"));
    expect(validateRepositories([repositoryItem(10, "web"), null])).toEqual(rejected("repository_not_object"));
    expect(validateOpenPullRequests([[pullItem(1, HEAD_A)]])).toEqual(rejected("pull_request_not_object"));
  });

  test("one bad item rejects the whole list", () => {
    const result = validateInstallations([installationItem(1), installationItem(2), { ...installationItem(3), id: "3" }]);
    expect(result.kind).toBe("rejected");
  });
});

describe("recently closed pull requests (the merge recovery)", () => {
  const BASE = "c".repeat(40);
  const closed = (number: number, extra: Record<string, unknown> = {}) => ({ number, head: { sha: "a".repeat(40) }, base: { sha: BASE }, merged_at: null, merge_commit_sha: null, ...extra });
  test("a merged one carries its merge; an unmerged one none; malformed merge facts are null, not a rejection", () => {
    const page = validateClosedPullRequests([
      closed(1, { merged_at: "2026-11-20T10:00:00Z", merge_commit_sha: "b".repeat(40) }),
      closed(2),
      closed(3, { merged_at: "2026-11-20T10:00:00Z", merge_commit_sha: "nope" }),
    ], 100);
    expect(page).toEqual({ kind: "valid", items: [
      { number: 1, headSha: "a".repeat(40), merge: { mergeCommitSha: "b".repeat(40), baseSha: BASE, mergedBy: null, mergedAtMs: Date.parse("2026-11-20T10:00:00Z") } },
      { number: 2, headSha: "a".repeat(40), merge: null },
      { number: 3, headSha: "a".repeat(40), merge: { mergeCommitSha: null, baseSha: BASE, mergedBy: null, mergedAtMs: Date.parse("2026-11-20T10:00:00Z") } },
    ] });
  });
  test("a page over its size, not a list, or with a bad number or head is rejected whole", () => {
    expect(validateClosedPullRequests(Array.from({ length: 101 }, (_, i) => closed(i + 1)), 100)).toEqual({ kind: "rejected", reason: "pull_requests_not_list" });
    expect(validateClosedPullRequests({ items: [] }, 100)).toEqual({ kind: "rejected", reason: "pull_requests_not_list" });
    expect(validateClosedPullRequests([closed(1), closed(0)], 100)).toEqual({ kind: "rejected", reason: "pull_request_number_invalid" });
    expect(validateClosedPullRequests([closed(1, { head: { sha: "x" } })], 100)).toEqual({ kind: "rejected", reason: "pull_request_head_sha_invalid" });
  });
});

import { describe, expect, test } from "bun:test";
import { DEFAULT_EVALUATION_SETTINGS, type FileRead } from "../evaluation/evidence.ts";
import { evaluate } from "../evaluation/evaluate.ts";
import { approve, baseEvidence, BOT, delegationPolicy, ENABLED_POLICY, found, USERS, withCodeowners, withFiles, withRepositoryPolicy, withReviews } from "../evaluation/evidence-fixture.ts";
import { MAX_CODEOWNERS_BYTES, MAX_POLICY_FILE_BYTES } from "../policy/bounds.ts";
import { recordFixture } from "./record-fixture.ts";
import { type BlobLocation, type ReadBlob, replayRecord, replaySettings } from "./replay.ts";
import type { DecisionRecord } from "./schema.ts";

/** A forge holding `blobs`: what it was asked for, and the files' texts. */
function forgeOf(blobs: Map<string, Uint8Array>) {
  const asked: BlobLocation[] = [];
  const readBlob: ReadBlob = async (at) => {
    asked.push(at);
    const bytes = blobs.get(at.blobSha);
    return bytes === undefined ? { kind: "gone" } : { kind: "found", text: new TextDecoder().decode(bytes), bytes: bytes.length };
  };
  return { asked, readBlob };
}

const approved = () => withReviews(withFiles(baseEvidence(), ["src/app.ts", "docs/guide.md"]), approve(USERS.alice), approve(USERS.erin));

describe("replay of a decision record", () => {
  test("a record replays to the same conclusion, owner sets and reasons, reading each recorded file at its blob SHA", async () => {
    const { record, blobs } = recordFixture(approved());
    expect(record.conclusion).toBe("success");
    const forge = forgeOf(blobs);
    const outcome = await replayRecord(record, DEFAULT_EVALUATION_SETTINGS, forge.readBlob);
    expect(outcome.kind).toBe("same");
    expect(forge.asked.map((at) => [`${at.owner}/${at.repo}`, at.path, at.maxBytes])).toEqual([
      ["acme/widgets", "CODEOWNERS", MAX_CODEOWNERS_BYTES - 1],
      ["acme/widgets", ".forge/service-policy.toml", MAX_POLICY_FILE_BYTES],
      ["acme/.forge", ".forge/service-policy.toml", MAX_POLICY_FILE_BYTES],
    ]);
  });

  test("a failure record replays to the same failure", async () => {
    const { record, blobs } = recordFixture(withFiles(baseEvidence(), ["src/app.ts"]));
    expect(record.conclusion).toBe("failure");
    expect((await replayRecord(record, DEFAULT_EVALUATION_SETTINGS, forgeOf(blobs).readBlob)).kind).toBe("same");
  });

  test("a tampered conclusion is reported as a difference", async () => {
    const { record, blobs } = recordFixture(withFiles(baseEvidence(), ["src/app.ts"]));
    const tampered: DecisionRecord = { ...record, conclusion: "success" };
    const outcome = await replayRecord(tampered, DEFAULT_EVALUATION_SETTINGS, forgeOf(blobs).readBlob);
    expect(outcome.kind).toBe("different");
    expect(outcome.kind === "different" && outcome.differences).toContain("conclusion: recorded success, today failure");
  });

  test("a review the record does not hold changes the replayed owner sets, and the difference names the set", async () => {
    const { record, blobs } = recordFixture(approved());
    const inputs = record.inputs!;
    const withoutErin: DecisionRecord = { ...record, inputs: { ...inputs, reviews: { complete: true, items: inputs.reviews.complete ? inputs.reviews.items.filter((r) => r.user?.login !== "erin") : [] } } };
    const outcome = await replayRecord(withoutErin, DEFAULT_EVALUATION_SETTINGS, forgeOf(blobs).readBlob);
    expect(outcome.kind).toBe("different");
    if (outcome.kind !== "different") return;
    expect(outcome.differences).toContain("conclusion: recorded success, today failure");
    expect(outcome.differences).toContain("owner set @acme/docs: recorded satisfied, today missing");
  });

  test("a different file behind the blob SHA gives another decision (the record names its inputs, replay reads them)", async () => {
    const { record, blobs } = recordFixture(approved());
    const sha = (record.inputs!.codeowners.CODEOWNERS as { blob_sha: string }).blob_sha;
    const other = new TextEncoder().encode("* @mallory\n");
    blobs.set(sha, other);
    const changed = { ...record, inputs: { ...record.inputs!, codeowners: { ...record.inputs!.codeowners, CODEOWNERS: { kind: "found" as const, path: "CODEOWNERS", bytes: other.length, blob_sha: sha } } } };
    const outcome = await replayRecord(changed, DEFAULT_EVALUATION_SETTINGS, forgeOf(blobs).readBlob);
    expect(outcome.kind).toBe("different");
    expect(outcome.kind === "different" && outcome.differences.some((d) => d.startsWith("owner set @mallory: absent from the record"))).toBe(true);
  });

  test("who satisfied a set is compared: a record naming another review differs", async () => {
    const { record, blobs } = recordFixture(approved());
    const sets = record.owner_sets.map((set) => ({ ...set, satisfied_by: set.satisfied_by.map((a) => ({ ...a, review_id: a.review_id + 1000 })) }));
    const outcome = await replayRecord({ ...record, owner_sets: sets }, DEFAULT_EVALUATION_SETTINGS, forgeOf(blobs).readBlob);
    expect(outcome.kind).toBe("different");
    expect(outcome.kind === "different" && outcome.differences.filter((d) => d.includes(": recorded satisfied by @"))).toHaveLength(2);
  });

  test("the break-glass override is compared: a recorded override today's evaluation does not apply differs", async () => {
    const { record, blobs } = recordFixture(withFiles(baseEvidence(), ["src/app.ts"]));
    const glass = { review_id: 77, reviewer_id: 15, reviewer_login: "mallory", reason: "prod is down", team: "sre", unsatisfied_owner_sets: [0] };
    const outcome = await replayRecord({ ...record, break_glass: glass }, DEFAULT_EVALUATION_SETTINGS, forgeOf(blobs).readBlob);
    expect(outcome.kind === "different" && outcome.differences).toEqual(["break-glass override: recorded by @mallory (review 77), today none"]);
  });

  test("reasons are compared: a recorded reason today's decision does not give is a difference", async () => {
    const { record, blobs } = recordFixture(withFiles(baseEvidence(), ["src/app.ts"]));
    const outcome = await replayRecord({ ...record, reasons: ["reviews_incomplete"] }, DEFAULT_EVALUATION_SETTINGS, forgeOf(blobs).readBlob);
    expect(outcome.kind === "different" && outcome.differences).toContain("reasons: recorded reviews_incomplete; today none");
  });

  test("a record summarised without its inputs cannot be replayed, and nothing is read", async () => {
    const { record, blobs } = recordFixture(approved());
    const forge = forgeOf(blobs);
    const outcome = await replayRecord({ ...record, inputs: null, summarised: { omitted: "inputs", replayable: false } }, DEFAULT_EVALUATION_SETTINGS, forge.readBlob);
    expect(outcome).toEqual({ kind: "cannot_replay", why: expect.stringContaining("summarised without its inputs") });
    expect(forge.asked).toEqual([]);
  });

  test("a blob gone from the forge, or not as recorded, or unreadable, stops the replay with the file it concerns", async () => {
    const { record, blobs } = recordFixture(approved());
    const cases: [ReadBlob, string][] = [
      [async () => ({ kind: "gone" }), "is gone from acme/widgets"],
      [async () => ({ kind: "not_as_recorded", detail: "over the bound" }), "is not the recorded file: over the bound"],
      [async () => ({ kind: "unavailable", detail: "the forge request failed (transient)" }), "could not be read: the forge request failed (transient)"],
      [async () => ({ kind: "found", text: "x", bytes: 1 }), "has 1 bytes, the record says"],
    ];
    for (const [readBlob, why] of cases) {
      const outcome = await replayRecord(record, DEFAULT_EVALUATION_SETTINGS, readBlob);
      expect(outcome.kind).toBe("cannot_replay");
      expect(outcome.kind === "cannot_replay" && outcome.why).toContain(why);
      expect(outcome.kind === "cannot_replay" && outcome.why).toContain("CODEOWNERS");
    }
    expect(blobs.size).toBe(3);
  });

  test("a found file the record names without a blob SHA cannot be replayed", async () => {
    const { record, blobs } = recordFixture(approved());
    const inputs = record.inputs!;
    const outcome = await replayRecord({ ...record, inputs: { ...inputs, repositoryPolicy: { ...(inputs.repositoryPolicy as { kind: "found"; path: string; bytes: number }), blob_sha: null } } }, DEFAULT_EVALUATION_SETTINGS, forgeOf(blobs).readBlob);
    expect(outcome.kind === "cannot_replay" && outcome.why).toContain("names no blob for the repository policy");
  });

  test("a record replays under the settings it was written with (check name, policy path, insecure changes), not today's", async () => {
    // The policy file is non-delegable unless SERVICE_ALLOW_INSECURE_CHANGES: the App's approval counts for it only then.
    const evidence = withReviews(withRepositoryPolicy(withCodeowners(withFiles(baseEvidence(), [".forge/service-policy.toml"]), "* @alice\n"), delegationPolicy(["**"])), approve(BOT));
    const then = { checkName: "Legacy / owners", policyPath: ".forge/service-policy.toml", forgeDirectory: ".forge", allowInsecureChanges: true };
    const { record, blobs } = recordFixture(evidence, { settings: then });
    expect(record.conclusion).toBe("success");
    expect(record.settings).toEqual({ check_name: "Legacy / owners", policy_path: ".forge/service-policy.toml", forge_directory: ".forge", allow_insecure_changes: true });
    const today = { ...DEFAULT_EVALUATION_SETTINGS, allowInsecureChanges: false };
    expect(evaluate(recordFixture(evidence).evidence, today).conclusion).toBe("failure");
    expect((await replayRecord(record, today, forgeOf(blobs).readBlob)).kind).toBe("same");
  });

  test("a record written before settings were recorded replays under today's settings", async () => {
    const evidence = withReviews(withRepositoryPolicy(withCodeowners(withFiles(baseEvidence(), [".forge/service-policy.toml"]), "* @alice\n"), delegationPolicy(["**"])), approve(BOT));
    const { record: whole, blobs } = recordFixture(evidence, { settings: { ...DEFAULT_EVALUATION_SETTINGS, allowInsecureChanges: true } });
    const { settings: _settings, ...older } = whole;
    expect((await replayRecord(older, { ...DEFAULT_EVALUATION_SETTINGS, allowInsecureChanges: true }, forgeOf(blobs).readBlob)).kind).toBe("same");
    const outcome = await replayRecord(older, DEFAULT_EVALUATION_SETTINGS, forgeOf(blobs).readBlob);
    expect(outcome.kind === "different" && outcome.differences).toContain("conclusion: recorded success, today failure");
  });

  test("a record made under the forge directory .github replays under .github, whatever today's directory, reading .github/CODEOWNERS", async () => {
    const github = { ...DEFAULT_EVALUATION_SETTINGS, forgeDirectory: ".github", policyPath: ".github/service-policy.toml" };
    const base = withReviews(withFiles(baseEvidence(), [".github/workflows/x.yml"]), approve(USERS.bob));
    const evidence = { ...base, codeowners: { ".github/CODEOWNERS": found(".github/CODEOWNERS", "* @bob\n") }, repositoryPolicy: found(".github/service-policy.toml", ENABLED_POLICY) };
    const { record, blobs } = recordFixture(evidence, { settings: github });
    expect(record.conclusion).toBe("success");
    expect(record.settings?.forge_directory).toBe(".github");
    expect(record.codeowners?.path).toBe(".github/CODEOWNERS");
    const forge = forgeOf(blobs);
    expect((await replayRecord(record, DEFAULT_EVALUATION_SETTINGS, forge.readBlob)).kind).toBe("same");
    expect(forge.asked.map((at) => at.path)).toContain(".github/CODEOWNERS");
    // Under .forge the same inputs would fail closed (.forge/CODEOWNERS was never read): replay did not use today's directory.
    expect(evaluate(recordFixture(evidence).evidence, DEFAULT_EVALUATION_SETTINGS).conclusion).toBe("failure");
  });

  test("a record without a recorded forge directory replays under .forge, whatever today's directory", async () => {
    const { record: whole, blobs } = recordFixture(approved());
    const { forge_directory: _directory, ...older } = whole.settings!;
    const record = { ...whole, settings: older };
    expect(replaySettings(record, { ...DEFAULT_EVALUATION_SETTINGS, forgeDirectory: ".github" }).forgeDirectory).toBe(".forge");
    const { settings: _settings, ...oldest } = whole;
    expect(replaySettings(oldest, { ...DEFAULT_EVALUATION_SETTINGS, forgeDirectory: ".github" }).forgeDirectory).toBe(".forge");
    expect((await replayRecord(record, { ...DEFAULT_EVALUATION_SETTINGS, forgeDirectory: ".github" }, forgeOf(blobs).readBlob)).kind).toBe("same");
  });

  test("a record naming a forge directory the service refuses cannot be replayed", async () => {
    const { record, blobs } = recordFixture(approved());
    for (const bad of ["..", "a/b", ""]) {
      const outcome = await replayRecord({ ...record, settings: { ...record.settings!, forge_directory: bad } }, DEFAULT_EVALUATION_SETTINGS, forgeOf(blobs).readBlob);
      expect(outcome.kind === "cannot_replay" && outcome.why).toMatch(/^the record's forge directory is not one the service accepts/);
    }
  });

  test("the policy path is the one the record read, not today's setting", async () => {
    // The policy file is non-delegable at its own path: the App's approval does not count for it there, and would elsewhere.
    const evidence = withReviews(withRepositoryPolicy(withCodeowners(withFiles(baseEvidence(), [".forge/service-policy.toml"]), "* @alice\n"), delegationPolicy(["**"])), approve(BOT));
    const { record, blobs } = recordFixture(evidence);
    expect(record.conclusion).toBe("failure");
    const moved = { ...DEFAULT_EVALUATION_SETTINGS, policyPath: "elsewhere.toml" };
    expect(evaluate({ ...evidence, repositoryPolicy: { ...(evidence.repositoryPolicy as FileRead & { kind: "found" }), path: "elsewhere.toml" } }, moved).conclusion).toBe("success");
    expect((await replayRecord(record, moved, forgeOf(blobs).readBlob)).kind).toBe("same");
  });
});

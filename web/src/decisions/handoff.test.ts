import { expect, test } from "bun:test";
import { evaluate } from "../../../server/evaluation/evaluate.ts";
import type { Evidence, FileRead } from "../../../server/evaluation/evidence.ts";
import { renderCheck } from "../../../server/evaluation/render-check.ts";
import { buildDecisionRecord } from "../../../server/records/build.ts";
import type { DecisionRecord } from "../../../server/records/schema.ts";
import { decodeState } from "../codec.ts";
import { readState } from "../read-state.ts";
import { SCENARIOS } from "../scenarios.ts";
import { handoffOf, playgroundHref } from "./handoff.ts";
import { blobUrl, commitUrl, forgeOrigin, pullUrl } from "./links.ts";

/** "Open in playground" (issue 28 item 5): a record's inputs become a playground state; files arrive as named placeholders. */
const BLOB = "1".repeat(40);
const ORG_COMMIT = "4".repeat(40);

function scenarioRecord(id: string): { record: DecisionRecord; evidence: Evidence } {
  const { evidence: plain, settings } = SCENARIOS.find((s) => s.id === id)!.build();
  const sha = (read: FileRead, commitSha?: string): FileRead => (read.kind === "found" ? { ...read, blobSha: BLOB, ...(commitSha ? { commitSha } : {}) } : read);
  const evidence: Evidence = {
    ...plain,
    codeowners: Object.fromEntries(Object.entries(plain.codeowners).map(([location, read]) => [location, sha(read)])),
    repositoryPolicy: sha(plain.repositoryPolicy),
    organizationPolicy: sha(plain.organizationPolicy, ORG_COMMIT),
  };
  const decision = evaluate(evidence, settings);
  const body = buildDecisionRecord(decision, evidence, {
    installationId: 4, repository: { id: 9, full_name: "acme/widgets" }, checkRunId: 1, title: renderCheck(decision).title, publishedAtMs: 0,
    service: { version: "test", revision: null }, settings, organizationPolicyRepository: ".forge",
  });
  return { record: { ...body, id: "d5", confirmed: true }, evidence };
}

test("a record's inputs open in the playground as recorded, each file the decision read a placeholder naming its blob and commit", () => {
  const { record, evidence } = scenarioRecord("owner-approves-head");
  const handoff = handoffOf(record, "https://forge.example");
  if (handoff.kind !== "ready") throw new Error(handoff.why);
  expect(readState(handoff.state).ok).toBe(true);
  const { codeowners, repositoryPolicy, organizationPolicy, ...rest } = handoff.state.evidence;
  const { codeowners: _c, repositoryPolicy: _r, organizationPolicy: _o, headFiles: _h, ...recorded } = evidence;
  expect(rest).toEqual(recorded);
  expect(codeowners[".forge/CODEOWNERS"]).toEqual({ kind: "missing" });
  const file = codeowners.CODEOWNERS!;
  expect(file.kind).toBe("found");
  const text = file.kind === "found" ? file.text : "";
  expect(text).toContain(`Decision record d5 keeps this file by its blob SHA`);
  expect(text).toContain(`blob ${BLOB}`);
  expect(text).toContain(`https://forge.example/acme/widgets/blob/${record.base_sha}/CODEOWNERS`);
  expect(text).toContain("service history replay d5 --json");
  expect(text.split("\n").filter((line) => line !== "").every((line) => line.startsWith("#"))).toBe(true);
  expect(organizationPolicy.kind === "found" && organizationPolicy.text).toContain(`in acme/.forge at commit ${ORG_COMMIT}`);
  expect(repositoryPolicy.kind === "found" && repositoryPolicy.path).toBe(".forge/service-policy.toml");
  expect(handoff.missing.map((m) => [m.role, m.path, m.link])).toEqual([
    ["code-owners file", "CODEOWNERS", `https://forge.example/acme/widgets/blob/${record.base_sha}/CODEOWNERS`],
    ["repository policy", ".forge/service-policy.toml", `https://forge.example/acme/widgets/blob/${record.base_sha}/.forge/service-policy.toml`],
    ["organization policy", ".forge/service-policy.toml", `https://forge.example/acme/.forge/blob/${ORG_COMMIT}/.forge/service-policy.toml`],
  ]);
  expect(handoff.state.settings.policyPath).toBe(".forge/service-policy.toml");
});

test("with the recorded files pasted back, the playground reaches the recorded conclusion", () => {
  for (const id of ["owner-approves-head", "older-head", "changes-requested"]) {
    const { record, evidence } = scenarioRecord(id);
    const handoff = handoffOf(record, null);
    if (handoff.kind !== "ready") throw new Error(handoff.why);
    const pasted: Evidence = { ...handoff.state.evidence, codeowners: evidence.codeowners, repositoryPolicy: evidence.repositoryPolicy, organizationPolicy: evidence.organizationPolicy };
    const decision = evaluate(pasted, handoff.state.settings);
    expect({ id, conclusion: decision.conclusion, title: renderCheck(decision).title }).toEqual({ id, conclusion: record.conclusion, title: record.title });
  }
});

test("the playground opens under the settings the record was evaluated with; an older record without them under the defaults", () => {
  const { record } = scenarioRecord("owner-approves-head");
  const recorded = handoffOf({ ...record, settings: { check_name: "Legacy / owners", policy_path: ".forge/service-policy.toml", allow_insecure_changes: true } }, null);
  if (recorded.kind !== "ready") throw new Error(recorded.why);
  expect(recorded.state.settings).toEqual({ checkName: "Legacy / owners", policyPath: ".forge/service-policy.toml", forgeDirectory: ".forge", allowInsecureChanges: true });
  const { settings: _settings, ...older } = record;
  const handoff = handoffOf(older, null);
  if (handoff.kind !== "ready") throw new Error(handoff.why);
  expect(handoff.state.settings.allowInsecureChanges).toBe(false);
});

test("the playground link carries the state in its fragment, and it decodes to the same state", async () => {
  const { record } = scenarioRecord("owner-approves-head");
  const handoff = handoffOf(record, null);
  if (handoff.kind !== "ready") throw new Error(handoff.why);
  const href = await playgroundHref(handoff.state);
  expect(href).toMatch(/^\/playground\/#v1\.[dj]\./);
  const decoded = await decodeState(href.slice(href.indexOf("#")));
  expect(decoded.ok && decoded.state).toEqual(handoff.state);
});

test("without a forge web address the placeholders name the blob and no link", () => {
  const { record } = scenarioRecord("owner-approves-head");
  const handoff = handoffOf(record, null);
  if (handoff.kind !== "ready") throw new Error(handoff.why);
  expect(handoff.missing.every((m) => m.link === null)).toBe(true);
  const file = handoff.state.evidence.codeowners.CODEOWNERS!;
  expect(file.kind === "found" && file.text).toContain("Paste the file as it was at that commit here,");
});

test("a record summarised without its inputs has nothing to hand over, and says why", () => {
  const { record } = scenarioRecord("owner-approves-head");
  const handoff = handoffOf({ ...record, inputs: null, summarised: { omitted: "inputs", replayable: false } }, null);
  expect(handoff).toEqual({ kind: "unavailable", why: expect.stringContaining("keeps no inputs") });
});

test("forge links are built only from parts of the shape the forge gives them", () => {
  const web = forgeOrigin("https://forge.example/");
  expect(web).toBe("https://forge.example");
  expect(forgeOrigin("javascript:alert(1)")).toBeNull();
  expect(forgeOrigin("")).toBeNull();
  expect(forgeOrigin("not a url")).toBeNull();
  const sha = "a".repeat(40);
  expect(blobUrl(web, "acme/web", sha, "docs/a b#c?.md")).toBe(`https://forge.example/acme/web/blob/${sha}/docs/a%20b%23c%3F.md`);
  expect(blobUrl(web, "acme/web", sha, "../../evil")).toBeNull();
  expect(blobUrl(web, "acme/web", sha, "/abs")).toBeNull();
  expect(blobUrl(web, "acme/web/../x", sha, "a")).toBeNull();
  expect(blobUrl(web, "acme/web", "main", "a")).toBeNull();
  expect(blobUrl(web, "acme/web", null, "a")).toBeNull();
  expect(blobUrl(null, "acme/web", sha, "a")).toBeNull();
  expect(pullUrl(web, "acme/web", 7)).toBe("https://forge.example/acme/web/pull/7");
  expect(pullUrl(web, "acme/web", 0)).toBeNull();
  expect(commitUrl(web, "acme/web", sha)).toBe(`https://forge.example/acme/web/commit/${sha}`);
  expect(commitUrl(web, "acme/web", "A".repeat(40))).toBeNull();
});

import { evaluate } from "../../server/evaluation/evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence, type FileRead } from "../../server/evaluation/evidence.ts";
import { approve, baseEvidence, directoryFromPlan, review, USERS, withFiles, withReviews } from "../../server/evaluation/evidence-fixture.ts";
import { buildDecisionRecord } from "../../server/records/build.ts";
import { gitBlobSha } from "../../server/records/record-fixture.ts";

/** Decision record bodies for the history benchmarks: what the record builder writes for a typical pull request. */
const found = (read: FileRead): FileRead => (read.kind === "found" ? { ...read, blobSha: gitBlobSha(new TextEncoder().encode(read.text)) } : read);

/** A typical pull request's record (50 files in three owner sets), variant `v`: its paths and reviews differ per variant. */
export function typicalBody(v: number, publishedAtMs: number) {
  const files = [
    ...Array.from({ length: 25 }, (_, i) => `src/components/widget-${v}-${i}/index.tsx`),
    ...Array.from({ length: 15 }, (_, i) => `docs/guides/chapter-${v}-${i}.md`),
    ...Array.from({ length: 10 }, (_, i) => `tools/scripts/task-${v}-${i}.ts`),
  ];
  const base = directoryFromPlan(withReviews(withFiles(baseEvidence(), files), approve(USERS.alice), approve(USERS.bob), approve(USERS.erin), review(USERS.carol, "COMMENTED")));
  const evidence: Evidence = {
    ...base,
    pullRequest: { ...base.pullRequest, number: 100 + v },
    codeowners: Object.fromEntries(Object.entries(base.codeowners).map(([location, read]) => [location, found(read!)])),
    repositoryPolicy: found(base.repositoryPolicy), organizationPolicy: found(base.organizationPolicy),
  };
  const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
  return buildDecisionRecord(decision, evidence, {
    installationId: 4, repository: { id: 40 + v, full_name: `acme/repo-${v}` }, checkRunId: 9000 + v, title: "All owner sets approved", publishedAtMs: publishedAtMs + v,
    service: { version: "0.1.0", revision: "bench" }, settings: DEFAULT_EVALUATION_SETTINGS, organizationPolicyRepository: ".forge",
  });
}

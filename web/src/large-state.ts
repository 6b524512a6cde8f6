// A large playground state for the performance checks (issue 10 item 8): a CODEOWNERS of `rules` rules and a pull request of
// `files` changed files spread over them, with a few approvals. Deterministic.
import { baseEvidence, HEAD, USERS } from "./scenarios.ts";
import { DEFAULT_SETTINGS, foundFile, STATE_VERSION, type PlaygroundState } from "./state.ts";

export function largeCodeowners(rules: number): string {
  const lines = ["# generated: many directories, a few extension rules", "* @acme/core"];
  for (let i = 0; i < rules - 1; i++) {
    if (i % 50 === 0) lines.push(`*.gen${i} @acme/docs`);
    else lines.push(`/services/svc${i % 500}/module${i}/ @alice @acme/team${i % 40}`);
  }
  return `${lines.join("\n")}\n`;
}

export function largeState(rules: number, files: number): PlaygroundState {
  const base = baseEvidence();
  const items = Array.from({ length: files }, (_, i) => {
    const module = (i * 7) % (rules - 1);
    return { filename: `services/svc${module % 500}/module${module}/file${i}.ts`, status: "modified" };
  });
  return {
    version: STATE_VERSION,
    settings: DEFAULT_SETTINGS,
    evidence: {
      ...base,
      codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: foundFile("CODEOWNERS", largeCodeowners(rules)) },
      files: { complete: true, items },
      pullRequest: { ...base.pullRequest, changedFiles: files },
      reviews: { complete: true, items: [{ id: 1, user: { ...USERS.alice }, state: "APPROVED", commitId: HEAD }] },
    },
  };
}

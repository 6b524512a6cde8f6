// `service explain --repository OWNER/NAME --pull N [--json] [--installation ID]` (issue 10 item 7): gathers the very evidence
// the worker would (same forge client, same planLookups, same bounds), evaluates it with the same engine and prints the
// decision for a person, or with --json an evidence document the playground imports. Read-only: it publishes nothing.
// The document holds evidence and settings only: no token, key, secret or request header ever enters Evidence.
import type { Config } from "../config/index.ts";
import { evaluationSettingsOf } from "../config/index.ts";
import { decideCheck, planLookups, plain, publicationOf, renderCheck, visible, visibleJson, type CheckPublication, type Decision, type EvaluationSettings, type Evidence, type OwnerSetLabel, type PreviewResult } from "../evaluation/index.ts";
import { createForgeClient, type ForgeClient } from "../forge/index.ts";
import { createLogger } from "../observability/logger.ts";
import { validateInstallations, validateRepositories } from "../reconciler/validate.ts";
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, type ExitCodes, exitCodesLine } from "./exit-codes.ts";

export const EXPLAIN_EXIT_CODES: ExitCodes = [[0, "decision printed"], [1, "the evidence could not be gathered"], [2, "usage or configuration error"]];

export const EXPLAIN_USAGE = `usage: service explain --repository OWNER/NAME --pull N [--json] [--installation ID]

Gathers the evidence the worker would use for that pull request, with the configured App credentials, and prints the decision.
--json prints an evidence document instead; load it in the playground (/playground/) to replay and edit the decision.
--installation skips looking up which installation of the App covers the repository.

${exitCodesLine(EXPLAIN_EXIT_CODES)}`;

/** Format tag of the evidence document; the playground reads it (web/src/read-state.ts). */
export const EVIDENCE_DOCUMENT_FORMAT = "service-evidence";

/** Bound on each forge request (as in `serve`). */
const REQUEST_TIMEOUT_MS = 10_000;

export interface ExplainOutput {
  stdout(line: string): void;
  stderr(line: string): void;
}

export interface ExplainDeps {
  /** Injected in tests; by default a client over the configured App credentials. */
  readonly forge?: Pick<ForgeClient, "listInstallations" | "listInstallationRepositories" | "gatherEvidence">;
}

interface ExplainArgs {
  owner: string;
  repo: string;
  number: number;
  json: boolean;
  installationId: number | null;
}

export function parseExplainArgs(args: readonly string[]): ExplainArgs | string {
  let repository: string | null = null;
  let pull: string | null = null;
  let installation: string | null = null;
  let json = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => inline ?? args[++i] ?? null;
    if (flag === "--json" && inline === undefined) json = true;
    else if (flag === "--repository") repository = value();
    else if (flag === "--pull") pull = value();
    else if (flag === "--installation") installation = value();
    else return `unknown argument: ${arg}`;
  }
  const match = repository === null ? null : /^([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))\/([A-Za-z0-9._-]{1,100})$/.exec(repository);
  if (match === null) return "--repository OWNER/NAME is required";
  if (pull === null || !/^[1-9]\d{0,9}$/.test(pull)) return "--pull N (a pull request number) is required";
  if (installation !== null && !/^[1-9]\d{0,15}$/.test(installation)) return "--installation must be a positive integer";
  return { owner: match[1]!, repo: match[2]!, number: Number(pull), json, installationId: installation === null ? null : Number(installation) };
}

/** The App installation covering owner/repo, by listing installations and their repositories (bounded lists). */
async function findInstallation(forge: NonNullable<ExplainDeps["forge"]>, owner: string, repo: string): Promise<number | string> {
  const listed = await forge.listInstallations();
  if (!listed.complete) return `the App's installations could not be listed (${listed.detail})`;
  const installations = validateInstallations(listed.items);
  if (installations.kind !== "valid") return `the App's installations could not be read (${installations.reason})`;
  for (const installation of installations.items) {
    const repositories = await forge.listInstallationRepositories(installation.id);
    if (!repositories.complete) return `the repositories of installation ${installation.id} could not be listed (${repositories.detail})`;
    const valid = validateRepositories(repositories.items);
    if (valid.kind !== "valid") return `the repositories of installation ${installation.id} could not be read (${valid.reason})`;
    if (valid.items.some((item) => item.owner.toLowerCase() === owner.toLowerCase() && item.name.toLowerCase() === repo.toLowerCase())) return installation.id;
  }
  return `no installation of this App covers ${owner}/${repo}`;
}

export function evidenceDocument(evidence: Evidence, settings: EvaluationSettings, decision: Decision, generatedBy = "service explain") {
  return {
    format: EVIDENCE_DOCUMENT_FORMAT,
    version: 1,
    generatedBy,
    settings,
    decision: { kind: decision.kind, conclusion: decision.conclusion, title: renderCheck(decision).title },
    evidence,
  };
}

/**
 * The decision in plain text for a terminal, from the Decision (the same facts the check output renders), and the check the
 * worker would leave when that is not the decision's own (a shared head stays in progress).
 */
export function describeDecision(decision: Decision, where: string, published?: CheckPublication): string[] {
  const verdict = decision.kind === "conclusive" ? decision.conclusion! : decision.kind === "retry" ? "retry (transient: nothing would be published)" : "not enabled (no managed check)";
  const lines = [`${where} at ${decision.headSha}`, `decision: ${verdict}`, `title: ${renderCheck(decision).title}`];
  if (published?.kind === "in_progress") lines.push(`check: in progress: ${published.output.title}`);
  for (const reason of decision.reasons) {
    lines.push(`reason: ${plain(reason.message)}${reason.transient ? " (transient)" : ""}`);
    for (const detail of (reason.details ?? []).slice(0, 20)) lines.push(`  - ${plain(detail)}`);
  }
  decision.ownerSets.forEach((set, index) => {
    lines.push(`owner set ${index + 1}: ${set.status}, ${set.counted.length} of ${set.required} approvals; owners ${set.owners.join(" ")}`);
    for (const path of set.paths.slice(0, 20)) lines.push(`  path ${path}${set.nonDelegablePaths.includes(path) ? " (non-delegable)" : ""}`);
    if (set.paths.length > 20) lines.push(`  and ${set.paths.length - 20} more paths`);
    for (const approval of set.counted) lines.push(`  counted: ${approval.reviewer} ${approval.via.kind === "app" ? `for the App delegation ${approval.via.app}` : `as ${approval.via.owner}`}`);
    for (const entry of set.notCounted) lines.push(`  not counted: ${entry.reviewer}: ${plain(entry.why)}`);
    if (set.blockedBy.length > 0) lines.push(`  changes requested by: ${set.blockedBy.join(", ")}`);
    for (const entry of set.unresolved) lines.push(`  could not be established: ${plain(entry)}`);
  });
  if (decision.kind === "conclusive") lines.push(`unowned changed paths: ${decision.unownedPathCount}`);
  if (decision.suggestedReviewers.length > 0) lines.push(`suggested reviewers: ${decision.suggestedReviewers.join(", ")}`);
  return lines;
}

/** Where the files were looked for: the forge directory (SERVICE_FORGE_DIRECTORY) decides the first code-owners location. */
export function settingsLine(decision: Decision, settings: EvaluationSettings): string {
  return `read under the forge directory ${settings.forgeDirectory}: code owners from ${decision.codeownersPath ?? "no code-owners file"}, repository policy ${settings.policyPath}`;
}

const labelText = (label: OwnerSetLabel) =>
  `${label.owners.length === 0 ? "(no owners)" : label.owners.join(" ")}${label.apps.length > 0 ? ` (or App ${label.apps.join(", ")})` : ""}`;

/** The change preview in plain text (the check output's preview section, for a terminal). */
export function describePreview(preview: PreviewResult): string[] {
  const lines = ["preview of this pull request's policy change (not part of the decision, which uses the base commit):"];
  if (preview.kind === "unavailable") return [...lines, `  left out: ${plain(preview.why)}`];
  const { before, after } = preview.codeownersPath;
  if (before !== after) lines.push(`  code-owners file: ${before ?? "none"} -> ${after ?? "none"}`);
  for (const problem of preview.invalid) lines.push(`  invalid: ${problem.file}${problem.line === null ? "" : ` line ${problem.line}`}: ${problem.message}`);
  if (preview.invalidOmitted > 0) lines.push(`  and ${preview.invalidOmitted} more invalid`);
  for (const reason of preview.problems) lines.push(`  would fail: ${plain(reason.message)}`);
  if (preview.requiredApprovals !== null) lines.push(`  required approvals: ${preview.requiredApprovals.before} -> ${preview.requiredApprovals.after}`);
  for (const change of preview.ownershipChanges) lines.push(`  owners change: ${change.path}: ${labelText(change.before)} -> ${labelText(change.after)}`);
  if (preview.ownershipChangesOmitted > 0) lines.push(`  and ${preview.ownershipChangesOmitted} more changed files whose owners would change`);
  for (const note of preview.notes) lines.push(`  note: ${plain(note)}`);
  if (lines.length === 1) lines.push("  the new files are valid and no changed file's owners would change");
  return lines;
}

/**
 * What explain prints goes through visible() line by line: file names, logins and forge details may hold terminal escape
 * codes, bidi overrides or line breaks (issue 16 item 6). Multi-line text of our own is printed one line at a time.
 */
function printable(out: ExplainOutput): ExplainOutput {
  return { stdout: (line) => out.stdout(visible(line)), stderr: (line) => out.stderr(visible(line)) };
}

export async function runExplain(args: readonly string[], config: Config, rawOut: ExplainOutput, deps: ExplainDeps = {}): Promise<number> {
  const out = printable(rawOut);
  if (args.includes("--help") || args.includes("-h")) {
    for (const line of EXPLAIN_USAGE.split("\n")) out.stdout(line);
    return EXIT_OK;
  }
  const parsed = parseExplainArgs(args);
  if (typeof parsed === "string") {
    for (const line of [parsed, "", ...EXPLAIN_USAGE.split("\n")]) out.stderr(line);
    return EXIT_USAGE;
  }
  let forge = deps.forge;
  if (forge === undefined) {
    if (config.forge.appId === null || config.forge.privateKey === null) {
      out.stderr("explain needs the App credentials: set SERVICE_FORGE_APP_ID and the App private key (see docs/operations.md, Settings)");
      return EXIT_USAGE;
    }
    forge = createForgeClient({ apiUrl: config.forge.apiUrl, appId: config.forge.appId, privateKey: config.forge.privateKey, requestTimeoutMs: REQUEST_TIMEOUT_MS, checkName: config.checkName, logger: createLogger("silent") });
  }
  const settings = evaluationSettingsOf(config);
  const where = `${parsed.owner}/${parsed.repo}#${parsed.number}`;
  try {
    const installationId = parsed.installationId ?? (await findInstallation(forge, parsed.owner, parsed.repo));
    if (typeof installationId === "string") {
      out.stderr(`cannot explain ${where}: ${installationId}`);
      return EXIT_FAILURE;
    }
    const gathered = await forge.gatherEvidence(
      { installationId, owner: parsed.owner, repo: parsed.repo, number: parsed.number, policyPath: config.policyPath, forgeDirectory: config.forgeDirectory, organizationPolicyRepository: config.organizationPolicyRepository },
      { planLookups: (evidence, known) => planLookups(evidence, settings, known) },
    );
    if (gathered.kind === "unavailable") {
      out.stderr(`cannot explain ${where}: the pull request could not be read (${gathered.error.kind})`);
      return EXIT_FAILURE;
    }
    // The evidence carries the head's policy files when the pull request changes one (Evidence.headFiles): the document
    // takes them along, so the playground shows the same preview.
    const { decision, preview, output } = decideCheck(gathered.evidence, settings);
    if (parsed.json) rawOut.stdout(visibleJson(JSON.stringify(evidenceDocument(gathered.evidence, settings, decision), null, 2)));
    else {
      const published = publicationOf(decision, output, gathered.evidence.pullRequest.state);
      for (const line of [...describeDecision(decision, where, published), settingsLine(decision, settings), ...(preview ? describePreview(preview) : [])]) out.stdout(line);
    }
    return EXIT_OK;
  } catch (error) {
    // Forge errors carry a kind; their messages never hold credentials, but print only the kind to be sure (DESIGN 5).
    const kind = typeof error === "object" && error !== null && "kind" in error ? String((error as { kind: unknown }).kind) : "unexpected";
    out.stderr(`cannot explain ${where}: the forge request failed (${kind})`);
    return EXIT_FAILURE;
  }
}

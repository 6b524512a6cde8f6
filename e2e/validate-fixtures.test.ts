// `service validate` over the project's own CODEOWNERS and policy fixtures (issue 19 item 4): what the validator calls an
// error must be exactly what the service's evaluation rejects, line for line and message for message, and a fixture the
// service accepts must come out clean. The service side is evaluate() on the same texts; the validator side is the command.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { runValidate } from "../server/commands/validate.ts";
import { codeownersLocations, DEFAULT_EVALUATION_SETTINGS, evaluate, plain, type Evidence, type FileRead } from "../server/evaluation/index.ts";
import * as core from "../server/evaluation/evidence-fixture.ts";
import { clientFor } from "../server/forge/test-support.ts";
import { MAX_CODEOWNERS_BYTES, MAX_POLICY_FILE_BYTES } from "../server/policy/bounds.ts";
import * as playground from "../web/src/scenarios.ts";
import { createScenario, generateAppKeys, POLICY_PATH } from "../server/simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../server/simulator/simulator.ts";

const CODEOWNERS_LOCATIONS = codeownersLocations(DEFAULT_EVALUATION_SETTINGS.forgeDirectory);

interface Files {
  readonly codeowners: Partial<Record<string, string>>;
  readonly policy: string | null;
  readonly organization: string | null;
}

type Judgment = readonly string[] | "not enabled";

/** The reasons of the evaluation that judge the files themselves, as `code: detail` (or the code when it has no details). */
const FILE_REASONS = new Set([
  "codeowners_invalid", "codeowners_too_large", "repository_policy_invalid", "organization_policy_invalid", "delegation_app_not_enrolled",
  "codeowners_incomplete", "repository_policy_incomplete", "organization_policy_incomplete",
]);

function serviceJudgment(files: Files): Judgment {
  const codeowners: Record<string, FileRead> = {};
  for (const location of CODEOWNERS_LOCATIONS) {
    const text = files.codeowners[location];
    codeowners[location] = text === undefined ? { kind: "missing" } : core.found(location, text);
  }
  return judgmentOfReads({
    codeowners,
    repositoryPolicy: files.policy === null ? { kind: "missing" } : core.found(POLICY_PATH, files.policy),
    organizationPolicy: files.organization === null ? { kind: "missing" } : core.found(POLICY_PATH, files.organization),
  });
}

function judgmentOfReads(reads: Pick<Evidence, "codeowners" | "repositoryPolicy" | "organizationPolicy">): Judgment {
  const evidence: Evidence = { ...core.baseEvidence(), ...reads };
  const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
  if (decision.kind === "not_enabled") return "not enabled";
  return decision.reasons
    .filter((reason) => FILE_REASONS.has(reason.code))
    .flatMap((reason) => ((reason.details ?? []).length > 0 ? reason.details!.map((detail) => `${reason.code}: ${plain(detail)}`) : [reason.code]))
    .sort();
}

interface Finding {
  kind: string;
  severity: string;
  file: string | null;
  line: number | null;
  message: string;
}

let root: string;
let counter = 0;

async function runValidator(files: Files, tree?: readonly string[]): Promise<{ exitCode: number; findings: Finding[] }> {
  const dir = join(root, `repo-${++counter}`);
  const write = (path: string, text: string) => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  };
  for (const [location, text] of Object.entries(files.codeowners)) write(join(dir, location), text!);
  if (files.policy !== null) write(join(dir, POLICY_PATH), files.policy);
  const args = [dir, "--format", "json"];
  if (files.organization !== null) {
    write(join(root, `organization-${counter}`, POLICY_PATH), files.organization);
    args.push("--organization-policy", join(root, `organization-${counter}`, POLICY_PATH));
  }
  if (tree !== undefined) args.push("--files-from", "-");
  const stdout: string[] = [];
  const exitCode = await runValidate(args, { stdout: (line) => stdout.push(line), stderr: () => {} }, { stdin: async () => (tree ?? []).join("\n") });
  return { exitCode, findings: JSON.parse(stdout.join("\n")).findings };
}

/** The validator's errors in the evaluation's terms: the reason code of the file, and its detail. */
function validatorJudgment(findings: readonly Finding[]): Judgment {
  if (findings.some((finding) => finding.kind === "policy_not_enabled")) return "not enabled";
  return findings
    .filter((finding) => finding.severity === "error")
    .map((finding) => {
      if (finding.kind === "unreadable_file") {
        if ((CODEOWNERS_LOCATIONS as readonly (string | null)[]).includes(finding.file)) return "codeowners_incomplete";
        return finding.file === POLICY_PATH ? "repository_policy_incomplete" : "organization_policy_incomplete";
      }
      if (finding.kind === "delegation_app_not_enrolled") return `delegation_app_not_enrolled: ${finding.message}`;
      if ((CODEOWNERS_LOCATIONS as readonly (string | null)[]).includes(finding.file)) {
        return finding.line === null ? "codeowners_too_large" : `codeowners_invalid: line ${finding.line}: ${finding.message}`;
      }
      const code = finding.file === POLICY_PATH ? "repository_policy_invalid" : "organization_policy_invalid";
      // The evaluation checks a policy's size itself and names no field; the validator's hint on trusted_apps is its own.
      return finding.kind === "bound_exceeded" ? code : `${code}: ${finding.message.replace(/ \(a repository policy cannot enroll Apps.*\)$/, "")}`;
    })
    .sort();
}

const ENABLED = core.ENABLED_POLICY;
const CASES: readonly [string, Files][] = [
  ["the decision core's base fixture", { codeowners: { CODEOWNERS: core.BASE_CODEOWNERS }, policy: ENABLED, organization: core.BASE_ORGANIZATION_POLICY }],
  ["the decision core's delegation fixture", { codeowners: { CODEOWNERS: core.BASE_CODEOWNERS }, policy: core.delegationPolicy(["docs/**", "/Makefile"]), organization: core.BASE_ORGANIZATION_POLICY }],
  ["the playground's base scenario", { codeowners: { CODEOWNERS: playground.BASE_CODEOWNERS }, policy: playground.BASE_REPOSITORY_POLICY, organization: playground.BASE_ORGANIZATION_POLICY }],
  ["the evaluation tests' invalid lines", { codeowners: { CODEOWNERS: "* @alice\n\n*.[ch] @bob\n!x @a\n/src/ bob\na#b @c\n/x/ @acme/core @acme\n" }, policy: ENABLED, organization: null }],
  ["an invalid file at a location the service does not read", { codeowners: { ".forge/CODEOWNERS": "* @a\n", "docs/CODEOWNERS": "!x @a\n" }, policy: ENABLED, organization: null }],
  ["a code-owners file at the size bound", { codeowners: { CODEOWNERS: "* @alice\n" + "#".repeat(MAX_CODEOWNERS_BYTES - 10) + "\n" }, policy: ENABLED, organization: null }],
  ["a repository policy with schema errors", { codeowners: { CODEOWNERS: "* @a\n" }, policy: "schema_version = 9\nenabled = true\nbogus = 1\n", organization: null }],
  ["a repository policy that enrolls Apps", { codeowners: { CODEOWNERS: "* @a\n" }, policy: `${ENABLED}[[trusted_apps]]\nslug = "x"\napp_id = 1\n`, organization: null }],
  ["a repository policy with a TOML syntax error", { codeowners: { CODEOWNERS: "* @a\n" }, policy: `${ENABLED}required_approvals = \n`, organization: null }],
  ["a repository policy over the size bound", { codeowners: { CODEOWNERS: "* @a\n" }, policy: ENABLED + "#".repeat(70_000) + "\n", organization: null }],
  ["invalid delegation patterns and owners", { codeowners: { CODEOWNERS: "* @a\n" }, policy: core.delegationPolicy(["docs/**", "!x", "a[b]"], 'owners = ["nope", "@ok"]'), organization: core.BASE_ORGANIZATION_POLICY }],
  ["a delegation to an App the organization did not enroll", { codeowners: { CODEOWNERS: "* @a\n" }, policy: core.delegationPolicy(["docs/**"]).replace(`"${core.APP_SLUG}"`, '"other-bot"'), organization: core.BASE_ORGANIZATION_POLICY }],
  ["an organization policy enrolling an App twice with an invalid guardrail", { codeowners: { CODEOWNERS: "* @a\n" }, policy: ENABLED, organization: `${core.BASE_ORGANIZATION_POLICY}`.replace('"/Makefile"', '"!Makefile"') + '[[trusted_apps]]\nslug = "docs-review-bot"\napp_id = 2\n' }],
  ["a repository that opted out", { codeowners: { CODEOWNERS: "!x\n" }, policy: "schema_version = 1\nenabled = false\nbogus = 2\n", organization: null }],
  ["a policy that does not enable the service", { codeowners: { CODEOWNERS: "* @a\n" }, policy: "schema_version = 1\n", organization: null }],
  ["no repository policy", { codeowners: { CODEOWNERS: "* @a\n" }, policy: null, organization: null }],
];

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "svc-validate-fixtures-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the project's fixtures come out of service validate as the service judges them", () => {
  for (const [name, files] of CASES) {
    test(name, async () => {
      const service = serviceJudgment(files);
      const { exitCode, findings } = await runValidator(files);
      expect(validatorJudgment(findings)).toEqual(service);
      expect(exitCode).toBe(findings.some((finding) => finding.severity === "error") ? 1 : 0);
    });
  }

  test("the cases cover both verdicts: clean fixtures and fixtures the service rejects", () => {
    const verdicts = CASES.map(([, files]) => serviceJudgment(files));
    expect(verdicts.filter((verdict) => verdict !== "not enabled" && verdict.length === 0).length).toBeGreaterThanOrEqual(3);
    expect(verdicts.filter((verdict) => verdict !== "not enabled" && verdict.length > 0).length).toBeGreaterThanOrEqual(8);
  });
});

describe("the forge simulator's scenario repository", () => {
  let sim: ForgeSimulator;
  beforeAll(() => {
    sim = startForgeSimulator({});
  });
  afterAll(() => sim.stop());

  test("its files are clean for the validator, as for the service, over the pull request's tree", async () => {
    await createScenario(sim, { keys: generateAppKeys() });
    const state = sim.control.state;
    const treeAt = (owner: string, name: string, branch: string) => {
      const repository = state.repo(owner, name)!;
      return state.commits.get(repository.branches.get(branch)!)!.tree;
    };
    const read = (tree: Map<string, string>, path: string) => {
      const blob = tree.get(path);
      return blob === undefined ? undefined : new TextDecoder().decode(state.blobs.get(blob));
    };
    const head = treeAt("acme", "web", "feature");
    const organizationTree = treeAt("acme", ".forge", state.repo("acme", ".forge")!.defaultBranch);
    const codeowners: Record<string, string> = {};
    for (const location of CODEOWNERS_LOCATIONS) {
      const text = read(head, location);
      if (text !== undefined) codeowners[location] = text;
    }
    const files: Files = { codeowners, policy: read(head, POLICY_PATH) ?? null, organization: read(organizationTree, POLICY_PATH) ?? null };
    expect(Object.keys(codeowners)).toEqual([".forge/CODEOWNERS"]);
    expect(files.policy).toContain("[[delegations]]");
    expect(files.organization).toContain("[[trusted_apps]]");

    expect(serviceJudgment(files)).toEqual([]);
    const { exitCode, findings } = await runValidator(files, [...head.keys()]);
    expect(findings).toEqual([]);
    expect(exitCode).toBe(0);
  });
});

describe("bytes that are not UTF-8 fail the validator as they fail the service's forge reader", () => {
  let sim: ForgeSimulator;
  let scenario: Awaited<ReturnType<typeof createScenario>>;
  beforeAll(async () => {
    sim = startForgeSimulator({});
    scenario = await createScenario(sim, { keys: generateAppKeys() });
  });
  afterAll(() => sim.stop());

  const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((part) => (typeof part === "string" ? Buffer.from(part) : Buffer.from(part))));
  const INVALID: readonly [string, number[]][] = [
    ["a Latin-1 byte", [0xe9]],
    ["a bad continuation byte", [0xc3, 0x28]],
    ["an overlong encoding", [0xc0, 0xaf]],
    ["an encoded surrogate", [0xed, 0xa0, 0x80]],
    ["a sequence cut short", [0xe2, 0x82]],
  ];
  const CASES: [string, Record<string, Buffer>][] = INVALID.flatMap(([what, invalid]): [string, Record<string, Buffer>][] => [
    [`a CODEOWNERS with ${what} in a comment`, { CODEOWNERS: bytes("# caf", invalid, "\n* @alice\n"), [POLICY_PATH]: bytes(ENABLED) }],
    [`a repository policy with ${what} in a comment`, { CODEOWNERS: bytes("* @alice\n"), [POLICY_PATH]: bytes(ENABLED, "# ", invalid, "\n") }],
    [`a CODEOWNERS with ${what} before a valid docs/CODEOWNERS`, { CODEOWNERS: bytes("* @", invalid, "\n"), "docs/CODEOWNERS": bytes("* @alice\n"), [POLICY_PATH]: bytes(ENABLED) }],
  ]);

  let branch = 0;
  /** The service's judgment: the bytes committed to the simulator, read by the service's forge reader, then evaluated. */
  async function serviceReads(files: Record<string, Buffer>): Promise<Judgment> {
    // The scenario's own files at these locations are deleted, so the branch holds exactly `files` there.
    const placeholders: Record<string, string | null> = Object.fromEntries([...CODEOWNERS_LOCATIONS, POLICY_PATH].map((path) => [path, null]));
    for (const path of Object.keys(files)) placeholders[path] = "placeholder\n";
    const { sha } = await sim.control.commit({ owner: scenario.org, repo: scenario.repo, branch: `bytes-${++branch}`, from: "main", files: placeholders });
    const commit = sim.control.state.commits.get(sha)!;
    for (const [path, content] of Object.entries(files)) {
      const blob = new Bun.CryptoHasher("sha1").update(content).digest("hex");
      sim.control.state.blobs.set(blob, new Uint8Array(content));
      commit.tree.set(path, blob);
    }
    const client = clientFor(sim, scenario);
    const at = (path: string) => ({ installationId: scenario.installationId, owner: scenario.org, repo: scenario.repo, path, ref: sha });
    const codeowners: Record<string, FileRead> = {};
    for (const location of CODEOWNERS_LOCATIONS) codeowners[location] = await client.readFile(at(location), MAX_CODEOWNERS_BYTES - 1);
    return judgmentOfReads({ codeowners, repositoryPolicy: await client.readFile(at(POLICY_PATH), MAX_POLICY_FILE_BYTES), organizationPolicy: { kind: "missing" } });
  }

  for (const [name, files] of CASES) {
    test(name, async () => {
      const service = await serviceReads(files);
      const dir = join(root, `bytes-${++counter}`);
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), content);
      }
      const stdout: string[] = [];
      const exitCode = await runValidate([dir, "--format", "json"], { stdout: (line) => stdout.push(line), stderr: () => {} });
      const findings: Finding[] = JSON.parse(stdout.join("\n")).findings;
      expect(service).not.toEqual([]);
      expect(validatorJudgment(findings)).toEqual(service);
      expect(exitCode).toBe(1);
    });
  }
});

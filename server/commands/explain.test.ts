import { describe, expect, test } from "bun:test";
import { loadConfig } from "../config/index.ts";
import { NO_DIRECTORY_FACTS, type Evidence } from "../evaluation/index.ts";
import { baseEvidence, ENABLED_POLICY, found, withFiles } from "../evaluation/evidence-fixture.ts";
import { ForgeError } from "../forge/index.ts";
import type { ExplainDeps } from "./explain.ts";
import { EVIDENCE_DOCUMENT_FORMAT, parseExplainArgs, runExplain } from "./explain.ts";
import { EVIDENCE_DOCUMENT_FORMAT as PLAYGROUND_FORMAT, readState } from "../../web/src/read-state.ts";
import { SCENARIOS } from "../../web/src/scenarios.ts";

const config = loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:" });
const scenario = (id: string) => SCENARIOS.find((s) => s.id === id)!.build().evidence;

function capture() {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { out: { stdout: (line: string) => stdout.push(line), stderr: (line: string) => stderr.push(line) }, stdout, stderr };
}

function fakeForge(evidence: Evidence | "unavailable", repositories = [{ id: 3, name: "widgets", owner: { login: "acme" }, archived: false }]) {
  const requests: unknown[] = [];
  const forge: NonNullable<ExplainDeps["forge"]> = {
    listInstallations: async () => ({ complete: true, items: [{ id: 77, suspended_at: null }] }),
    listInstallationRepositories: async (id) => (id === 77 ? { complete: true, items: repositories } : { complete: true, items: [] }),
    gatherEvidence: async (request, options) => {
      requests.push(request);
      expect(options.planLookups(evidence === "unavailable" ? scenario("owner-approves-head") : evidence, NO_DIRECTORY_FACTS)).toBeDefined();
      if (evidence === "unavailable") return { kind: "unavailable", error: new ForgeError("not_found", "pull request not found"), requests: 1 };
      return { kind: "gathered", evidence, pullRequest: {} as never, retryAfterMs: null, requests: 12, notModified: 0 };
    },
  };
  return { forge, requests };
}

describe("service explain", () => {
  test("arguments: repository and pull are required, --json and --installation are optional", () => {
    expect(parseExplainArgs(["--repository", "acme/widgets", "--pull", "42"])).toEqual({ owner: "acme", repo: "widgets", number: 42, json: false, installationId: null });
    expect(parseExplainArgs(["--repository=acme/widgets", "--pull=42", "--json", "--installation", "7"])).toEqual({ owner: "acme", repo: "widgets", number: 42, json: true, installationId: 7 });
    expect(parseExplainArgs(["--pull", "42"])).toBe("--repository OWNER/NAME is required");
    expect(parseExplainArgs(["--repository", "acme", "--pull", "42"])).toBe("--repository OWNER/NAME is required");
    expect(parseExplainArgs(["--repository", "acme/widgets", "--pull", "0"])).toBe("--pull N (a pull request number) is required");
    expect(parseExplainArgs(["--repository", "acme/widgets", "--pull", "4", "--verbose"])).toBe("unknown argument: --verbose");
  });

  test("a usage error exits 2 and prints the usage", async () => {
    const { out, stderr } = capture();
    expect(await runExplain(["--pull", "1"], config, out, { forge: fakeForge(scenario("older-head")).forge })).toBe(2);
    expect(stderr.join("\n")).toContain("usage: service explain");
  });

  test("without App credentials it says which settings are missing", async () => {
    const { out, stderr } = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42"], config, out)).toBe(2);
    expect(stderr.join("\n")).toContain("SERVICE_FORGE_APP_ID");
  });

  test("prints the decision for a person, finding the installation that covers the repository", async () => {
    const { forge, requests } = fakeForge(scenario("older-head"));
    const { out, stdout } = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42"], config, out, { forge })).toBe(0);
    expect(requests).toEqual([{ installationId: 77, owner: "acme", repo: "widgets", number: 42, policyPath: ".forge/service-policy.toml", forgeDirectory: ".forge", organizationPolicyRepository: ".forge" }]);
    const text = stdout.join("\n");
    expect(text).toContain("decision: failure");
    expect(text).toContain("title: 1 of 1 owner set not yet approved");
    expect(text).toContain("not counted: alice: approved 9a8b7c6, not the current head 4f2c9e1");
  });

  test("under SERVICE_FORGE_DIRECTORY=.github it reads .github's files, decides on .github/CODEOWNERS and says so", async () => {
    const github = loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:", SERVICE_FORGE_DIRECTORY: ".github" });
    const evidence: Evidence = { ...baseEvidence(), codeowners: { ".github/CODEOWNERS": found(".github/CODEOWNERS", "* @bob\n") }, repositoryPolicy: found(".github/service-policy.toml", ENABLED_POLICY) };
    const { forge, requests } = fakeForge(evidence);
    const human = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42", "--installation", "77"], github, human.out, { forge })).toBe(0);
    expect(requests).toEqual([{ installationId: 77, owner: "acme", repo: "widgets", number: 42, policyPath: ".github/service-policy.toml", forgeDirectory: ".github", organizationPolicyRepository: ".github" }]);
    const text = human.stdout.join("\n");
    expect(text).toContain("owners @bob");
    expect(text).toContain("read under the forge directory .github: code owners from .github/CODEOWNERS, repository policy .github/service-policy.toml");
    const json = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42", "--json", "--installation", "77"], github, json.out, { forge })).toBe(0);
    const document = JSON.parse(json.stdout.join("\n"));
    expect(document.settings.forgeDirectory).toBe(".github");
    const read = readState(document);
    expect(read.ok && read.state.settings.forgeDirectory).toBe(".github");
  });

  test("a shared head: the decision fails, and the check is the one the worker leaves in progress", async () => {
    const { forge } = fakeForge(scenario("shared-head"));
    const { out, stdout } = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42"], config, out, { forge })).toBe(0);
    expect(stdout).toContain("decision: failure");
    expect(stdout).toContain("check: in progress: Waiting: this commit is also the head of #43");
  });

  test("--json prints an evidence document the playground reads back to the same decision", async () => {
    const evidence = scenario("two-owner-sets");
    const { out, stdout } = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42", "--json", "--installation", "77"], config, out, { forge: fakeForge(evidence).forge })).toBe(0);
    const document = JSON.parse(stdout.join("\n"));
    expect(document.format).toBe(EVIDENCE_DOCUMENT_FORMAT);
    expect(PLAYGROUND_FORMAT).toBe(EVIDENCE_DOCUMENT_FORMAT);
    expect(document.decision).toEqual({ kind: "conclusive", conclusion: "failure", title: "1 of 2 owner sets not yet approved" });
    const read = readState(document);
    expect(read.ok).toBe(true);
    if (read.ok) expect(read.state.evidence).toEqual(evidence);
  });

  test("a pull request that changes CODEOWNERS: the document carries the head's file and the decision is printed with the preview", async () => {
    const changed = withFiles(baseEvidence(), ["CODEOWNERS", "src/app.ts"]);
    const evidence: Evidence = { ...changed, headFiles: { codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: found("CODEOWNERS", "* @bob\n/x not-an-owner\n") }, repositoryPolicy: changed.repositoryPolicy } };
    const json = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42", "--json", "--installation", "77"], config, json.out, { forge: fakeForge(evidence).forge })).toBe(0);
    const document = JSON.parse(json.stdout.join("\n"));
    expect(document.evidence.headFiles).toEqual(evidence.headFiles);
    expect(document.decision).toEqual({ kind: "conclusive", conclusion: "failure", title: "2 of 2 owner sets not yet approved" });

    const human = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42", "--installation", "77"], config, human.out, { forge: fakeForge(evidence).forge })).toBe(0);
    const text = human.stdout.join("\n");
    expect(text).toContain("decision: failure");
    expect(text).toContain("preview of this pull request's policy change");
    expect(text).toContain("  invalid: CODEOWNERS line 2: invalid owner 'not-an-owner'");
    expect(text).toContain("  owners change: src/app.ts: @alice -> @bob");
    expect(text.indexOf("decision: failure")).toBeLessThan(text.indexOf("preview of"));
  });

  test("a pull request that changes no policy file prints no preview", async () => {
    const { out, stdout } = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42", "--installation", "77"], config, out, { forge: fakeForge(baseEvidence()).forge })).toBe(0);
    expect(stdout.join("\n")).not.toContain("preview");
  });

  test("the document carries no credential", async () => {
    const secretConfig = loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:" });
    const { out, stdout, stderr } = capture();
    await runExplain(["--repository", "acme/widgets", "--pull", "42", "--json"], { ...secretConfig, forge: { ...secretConfig.forge, privateKey: "-----BEGIN PRIVATE KEY-----SECRET" } } as never, out, { forge: fakeForge(scenario("app-docs")).forge });
    const all = [...stdout, ...stderr].join("\n");
    expect(all).not.toContain("SECRET");
    expect(all).not.toContain("PRIVATE KEY");
    expect(all.toLowerCase()).not.toContain("token");
  });

  test("a hostile file name reaches the terminal with its escape codes, bidi overrides and line breaks made visible", async () => {
    const evidence = withFiles(baseEvidence(), ["src/\u001b[2J\u001b]0;pwned\u0007clear.ts", "src/\u202Egnp.ts\u009B31m", "src/a.ts\ndecision: success"]);
    const { out, stdout, stderr } = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42", "--installation", "77"], config, out, { forge: fakeForge(evidence).forge })).toBe(0);
    const printed = [...stdout, ...stderr].join("\n");
    expect(printed).not.toMatch(/[\u001b\u0007\u009B\u202E]/);
    expect(printed).toContain("src/\\u{001B}[2J\\u{001B}]0;pwned\\u{0007}clear.ts");
    expect(printed).toContain("src/\\u{202E}gnp.ts\\u{009B}31m");
    expect(stdout.filter((line) => line.startsWith("decision:"))).toEqual(["decision: failure"]);
    expect(printed).toContain("src/a.ts\\u{000A}decision: success");
  });

  test("--json escapes invisible characters the terminal would act on and still reads back to the same evidence", async () => {
    const evidence = withFiles(baseEvidence(), ["src/\u001b[2J.ts", "src/\u202Egnp.ts\u009B31m\u2028\u{E0041}"]);
    const { out, stdout } = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42", "--json", "--installation", "77"], config, out, { forge: fakeForge(evidence).forge })).toBe(0);
    const printed = stdout.join("\n");
    expect(printed).not.toMatch(/[\u001b\u009B\u202E\u2028\u{E0041}]/u);
    expect(printed).toContain("src/\\u202Egnp.ts\\u009B31m\\u2028\\uDB40\\uDC41");
    expect(JSON.parse(printed).evidence).toEqual(evidence);
  });

  test("a repository no installation covers, or an unreadable pull request, exits 1 with the reason", async () => {
    const { out, stderr } = capture();
    expect(await runExplain(["--repository", "acme/other", "--pull", "42"], config, out, { forge: fakeForge(scenario("older-head")).forge })).toBe(1);
    expect(stderr.join("\n")).toContain("no installation of this App covers acme/other");
    const second = capture();
    expect(await runExplain(["--repository", "acme/widgets", "--pull", "42"], config, second.out, { forge: fakeForge("unavailable").forge })).toBe(1);
    expect(second.stderr.join("\n")).toContain("the pull request could not be read (not_found)");
  });
});

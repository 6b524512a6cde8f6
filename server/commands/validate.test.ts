import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { MAX_POLICY_FILE_BYTES } from "../policy/bounds.ts";
import { githubAnnotation, runnerSafe, runValidate, treePaths, unquoteGitPath, type ValidateDeps } from "./validate.ts";

const POLICY = ".forge/service-policy.toml";
const ENABLED = "schema_version = 1\nenabled = true\n";

let root: string;
let counter = 0;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "svc-validate-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A fresh repository directory with these files (path → content). */
function repository(files: Record<string, string>): string {
  const dir = join(root, `repo-${++counter}`);
  mkdirSync(dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

async function validate(args: string[], deps: ValidateDeps = {}) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const exitCode = await runValidate(args, { stdout: (line) => stdout.push(line), stderr: (line) => stderr.push(line) }, deps);
  return { exitCode, stdout: stdout.join("\n"), stderr: stderr.join("\n"), lines: stdout };
}

const CLEAN = { CODEOWNERS: "* @acme/core\n/docs/ @alice\n", [POLICY]: ENABLED };

describe("exit codes", () => {
  test("a clean repository exits 0", async () => {
    const dir = repository(CLEAN);
    const result = await validate([dir]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe("0 errors, 0 warnings, 0 notices (CODEOWNERS: 2 rules)");
  });

  test("an invalid CODEOWNERS line exits 1", async () => {
    expect((await validate([repository({ ...CLEAN, CODEOWNERS: "* @acme/core\n/src/ bob\n" })])).exitCode).toBe(1);
  });

  test("warnings alone exit 0, and 1 with --strict", async () => {
    const dir = repository({ ...CLEAN, CODEOWNERS: "/docs/ @a\n/docs/ @b\n" });
    expect((await validate([dir])).exitCode).toBe(0);
    expect((await validate([dir, "--strict"])).exitCode).toBe(1);
  });

  test("notices never fail, even with --strict", async () => {
    const result = await validate([repository({ CODEOWNERS: "* @a\n" }), "--strict"]);
    expect(result.stdout).toContain("notice: no repository policy at .forge/service-policy.toml");
    expect(result.exitCode).toBe(0);
  });
});

describe("usage errors exit 2 with the reason and the usage on stderr", () => {
  const cases: [string, (dir: string) => string[], string][] = [
    ["an unknown flag", (dir) => [dir, "--fix"], "unknown argument: --fix"],
    ["a bad format value", (dir) => [dir, "--format", "xml"], "--format must be text, json or github, not 'xml'"],
    ["a flag without its value", (dir) => [dir, "--files-from"], "--files-from needs a value"],
    ["a missing --files-from file", (dir) => [dir, "--files-from", join(dir, "absent.txt")], "--files-from: no such file"],
    ["a missing --policy file", (dir) => [dir, "--policy", join(dir, "absent.toml")], "--policy: no such file"],
    ["a missing --organization-policy file", (dir) => [dir, "--organization-policy", join(dir, "absent.toml")], "--organization-policy: no such file"],
    ["a directory that does not exist", (dir) => [join(dir, "absent")], "no such directory"],
    ["a file given as the directory", (dir) => [join(dir, "CODEOWNERS")], "not a directory"],
    ["two directories", (dir) => [dir, dir], "only one directory may be given"],
    ["--forge-directory without its value", (dir) => [dir, "--forge-directory"], "--forge-directory needs a value"],
    ["an empty --forge-directory", (dir) => [dir, "--forge-directory="], "--forge-directory must not be empty"],
    ["a --forge-directory of ..", (dir) => [dir, "--forge-directory", ".."], "--forge-directory must name a directory, not '.' or '..'"],
    ["a --forge-directory of .", (dir) => [dir, "--forge-directory", "."], "--forge-directory must name a directory, not '.' or '..'"],
    ["a --forge-directory with /", (dir) => [dir, "--forge-directory", ".github/workflows"], "--forge-directory must be a single directory name"],
    ["a --forge-directory with \\", (dir) => [dir, "--forge-directory", ".github\\x"], "--forge-directory must be a single directory name"],
    ["a --forge-directory not starting with .", (dir) => [dir, "--forge-directory", "github"], "--forge-directory must start with '.'"],
    ["a --forge-directory with a control character", (dir) => [dir, "--forge-directory", ".git\u001bhub"], "--forge-directory may contain only letters, digits"],
    ["a --forge-directory too long", (dir) => [dir, "--forge-directory", "." + "a".repeat(100)], "--forge-directory must be at most 100 characters"],
  ];
  for (const [name, args, message] of cases) {
    test(name, async () => {
      const result = await validate(args(repository(CLEAN)));
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stderr).toContain("usage: service validate");
      expect(result.stdout).toBe("");
    });
  }

  test("--help prints the usage on stdout and exits 0", async () => {
    const result = await validate(["--help"]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toStartWith("usage: service validate");
  });
});

describe("formats", () => {
  const files = { ...CLEAN, CODEOWNERS: "* @acme/core\n/src/ bob\n/nothing/ @x\n", "docs/CODEOWNERS": "* @d\n", [POLICY]: "schema_version = 1\nenabled = yes\n" };

  test("text groups findings under their file, with lines and kinds, and ends with the summary", async () => {
    const dir = repository(files);
    writeFileSync(join(dir, "tree.txt"), "a.ts\nsrc/b.ts\n");
    const result = await validate([dir, "--files-from", join(dir, "tree.txt")]);
    expect(result.lines).toEqual([
      ".forge/service-policy.toml",
      "  line 2: error: line 2, column 11: Invalid TOML document: invalid value [policy_error]",
      "CODEOWNERS",
      "  line 2: error: invalid owner 'bob' [invalid_codeowners_line]",
      "  line 3: warning: '/nothing/' matches no path of the tree [rule_owns_nothing]",
      "docs/CODEOWNERS",
      "  warning: the service reads CODEOWNERS, which takes precedence; this file is ignored [shadowed_codeowners]",
      "2 errors, 2 warnings, 0 notices (CODEOWNERS: 2 rules; 2 paths checked, 0 unowned)",
    ]);
    expect(result.exitCode).toBe(1);
  });

  test("json prints the documented shape: format, version, exit code, findings and summary", async () => {
    const dir = repository(files);
    const result = await validate([dir, "--format", "json", "--files-from", "-"], { stdin: async () => "a.ts\nsrc/b.ts\n" });
    const document = JSON.parse(result.stdout);
    expect(Object.keys(document)).toEqual(["format", "version", "exitCode", "findings", "summary"]);
    expect(document).toMatchObject({ format: "service-validate", version: 1, exitCode: 1 });
    expect(document.findings[1]).toEqual({ kind: "invalid_codeowners_line", severity: "error", file: "CODEOWNERS", line: 2, message: "invalid owner 'bob'" });
    expect(document.findings.map((finding: { kind: string }) => finding.kind)).toEqual(["policy_error", "invalid_codeowners_line", "rule_owns_nothing", "shadowed_codeowners"]);
    expect(document.summary).toEqual({ errors: 2, warnings: 2, notices: 0, codeowners: "CODEOWNERS", rules: 2, paths: 2, unownedPaths: 0, matchSteps: document.summary.matchSteps });
    expect(document.summary.matchSteps).toBeGreaterThan(0);
  });

  test("github prints one workflow command per finding, then the summary", async () => {
    const result = await validate([repository(files), "--format", "github"]);
    expect(result.lines).toEqual([
      "::error file=.forge/service-policy.toml,line=2,title=policy_error::line 2, column 11: Invalid TOML document: invalid value",
      "::error file=CODEOWNERS,line=2,title=invalid_codeowners_line::invalid owner 'bob'",
      "::warning file=docs/CODEOWNERS,title=shadowed_codeowners::the service reads CODEOWNERS, which takes precedence; this file is ignored",
      "2 errors, 1 warning, 0 notices (CODEOWNERS: 2 rules)",
    ]);
  });

  test("github annotates e-mail owners as warnings and unchecked delegations as a notice naming --organization-policy", async () => {
    const dir = repository({ CODEOWNERS: "* @acme/core\n/legal/ legal@example.com\n", [POLICY]: `${ENABLED}[[delegations]]\napp = "docs-bot"\npaths = ["docs/**"]\n` });
    const result = await validate([dir, "--format", "github"]);
    expect(result.lines).toEqual([
      "::notice file=.forge/service-policy.toml,line=4,title=delegation_apps_unchecked::delegations name the App docs-bot, whose enrollment was not checked: give the organization policy with --organization-policy FILE (an App it does not enroll fails the check on every pull request)",
      "::warning file=CODEOWNERS,line=2,title=email_owner_never_approves::owner 'legal@example.com' is an e-mail address: the service cannot resolve it to an account, so it never approves (no owner of this rule can approve); name the account (@login) instead",
      "0 errors, 1 warning, 1 notice (CODEOWNERS: 2 rules)",
    ]);
    expect(result.exitCode).toBe(0);
    expect((await validate([dir, "--strict"])).exitCode).toBe(1);
    const text = await validate([dir]);
    expect(text.stdout).toContain("  line 2: warning: owner 'legal@example.com' is an e-mail address");
    expect(text.stdout).toContain("  line 4: notice: delegations name the App docs-bot, whose enrollment was not checked: give the organization policy with --organization-policy FILE");
  });

  test("github escapes '%' in the message and ',', ':' and '%' in properties; a line break never reaches the runner raw", () => {
    const line = githubAnnotation({ kind: "unowned_paths", severity: "warning", file: "a,b:c%d.txt", line: 3, message: "100% of\r\nx:y,z" });
    expect(line).toBe("::warning file=a%2Cb%3Ac%25d.txt,line=3,title=unowned_paths::100%25 of\\u{000D}\\u{000A}x:y,z");
    expect(githubAnnotation({ kind: "dead_rule", severity: "notice", file: null, line: null, message: "50%" })).toBe("::notice title=dead_rule::50%25");
  });

  test("a path with terminal escape codes is printed visibly, never raw", async () => {
    const dir = repository({ ...CLEAN, CODEOWNERS: "/docs/ @a\n" });
    const result = await validate([dir, "--files-from", "-"], { stdin: async () => "docs/ok.md\nevil\u001b[31m.txt\n" });
    expect(result.stdout).toContain("evil\\u{001B}[31m.txt");
    expect(result.stdout).not.toContain("\u001b");
  });
});

describe("inputs", () => {
  test("--files-from - reads the tree from standard input", async () => {
    const dir = repository({ ...CLEAN, CODEOWNERS: "/src/ @a\n" });
    const result = await validate([dir, "--files-from", "-", "--format", "json"], { stdin: async () => "src/a.ts\nREADME.md\n" });
    expect(JSON.parse(result.stdout).summary).toMatchObject({ paths: 2, unownedPaths: 1 });
  });

  test("a NUL-separated list (git ls-files -z) and git's quoted paths are read as the paths they name", async () => {
    expect(treePaths("a b.txt\0docs/\"q\".md\0")).toEqual(["a b.txt", 'docs/"q".md']);
    expect(treePaths('"docs/caf\\303\\251.md"\n"tab\\there"\nplain\n')).toEqual(["docs/café.md", "tab\there", "plain"]);
    expect(unquoteGitPath('"not\\qgit"')).toBe('"not\\qgit"');
  });

  test("--policy and --organization-policy are read from where they are given", async () => {
    const dir = repository({ CODEOWNERS: "* @a\n" });
    const elsewhere = repository({
      "policy.toml": `${ENABLED}[[delegations]]\napp = "bot"\npaths = ["docs/**"]\n`,
      "org.toml": 'schema_version = 1\n[[trusted_apps]]\nslug = "other"\napp_id = 1\n',
    });
    const result = await validate([dir, "--policy", join(elsewhere, "policy.toml"), "--organization-policy", join(elsewhere, "org.toml"), "--format", "json"]);
    const document = JSON.parse(result.stdout);
    expect(document.findings).toEqual([
      { kind: "delegation_app_not_enrolled", severity: "error", file: join(elsewhere, "policy.toml"), line: 4, message: "delegations[0].app: App bot is not enrolled in the organization policy's trusted_apps" },
    ]);
    expect(result.exitCode).toBe(1);
  });

  test("--forge-directory .github reads .github/CODEOWNERS first and .github/service-policy.toml, and protects .github/workflows", async () => {
    const policy = `${ENABLED}[[delegations]]\napp = "docs-bot"\npaths = ["**"]\n`;
    const organization = join(repository({ "org.toml": 'schema_version = 1\n[[trusted_apps]]\nslug = "docs-bot"\napp_id = 7\n' }), "org.toml");
    const dir = repository({ ".github/CODEOWNERS": "* @g\n", ".forge/CODEOWNERS": "!broken\n", CODEOWNERS: "* @root\n", ".github/service-policy.toml": policy, "tree.txt": ".github/workflows/ci.yml\nsrc/a.ts\n" });
    const github = JSON.parse((await validate([dir, "--forge-directory", ".github", "--organization-policy", organization, "--files-from", join(dir, "tree.txt"), "--format", "json"])).stdout);
    expect(github.summary.codeowners).toBe(".github/CODEOWNERS");
    expect(github.findings.filter((f: { kind: string }) => f.kind === "policy_error" || f.kind === "invalid_codeowners_line")).toEqual([]);
    expect(github.findings.find((f: { kind: string }) => f.kind === "delegation_non_delegable")?.message).toContain(".github/workflows/ci.yml");
    // Without the flag the same checkout is read as under .forge: its broken .forge/CODEOWNERS wins and no policy is found.
    const forge = JSON.parse((await validate([dir, "--format", "json"])).stdout);
    expect(forge.summary.codeowners).toBe(".forge/CODEOWNERS");
    expect(forge.findings.map((f: { kind: string }) => f.kind)).toContain("invalid_codeowners_line");
  });

  test("the CODEOWNERS location the service reads wins: .forge/CODEOWNERS before CODEOWNERS before docs/CODEOWNERS", async () => {
    const dir = repository({ [POLICY]: ENABLED, "docs/CODEOWNERS": "* @d\n", CODEOWNERS: "!broken\n" });
    const result = await validate([dir, "--format", "json"]);
    expect(JSON.parse(result.stdout).summary.codeowners).toBe("CODEOWNERS");
    writeFileSync(join(dir, ".forge", "CODEOWNERS"), "* @f\n");
    const after = JSON.parse((await validate([dir, "--format", "json"])).stdout);
    expect(after.summary.codeowners).toBe(".forge/CODEOWNERS");
    expect(after.findings.map((f: { kind: string; file: string }) => [f.kind, f.file])).toEqual([["shadowed_codeowners", "CODEOWNERS"], ["shadowed_codeowners", "docs/CODEOWNERS"]]);
  });
});

describe("only regular files inside the checkout are read (issue 25 item 3)", () => {
  // Lines an attacker would like CI to print: a pull request can point a location at any file of the CI machine.
  const SECRETS = ["DB_PASSWORD=s3cret canary-owner-one", "API_KEY=canary-pattern-two", "canary_toml_key = \"canary-three\""];
  const CANARIES = ["canary-owner-one", "canary-pattern-two", "canary_toml_key", "canary-three", "s3cret"];

  /** A directory out of the checkout whose files hold those lines. */
  const outside = () => repository({ "secret.env": `${SECRETS.join("\n")}\n`, "dir/CODEOWNERS": `${SECRETS.join("\n")}\n`, "dir/service-policy.toml": `${ENABLED}${SECRETS[2]}\n` });

  async function everyFormat(args: string[]) {
    const results = [];
    for (const format of ["text", "json", "github"]) results.push(await validate([...args, "--format", format, "--files-from", "-"], { stdin: async () => "a.ts\nsrc/b.ts\n" }));
    return results;
  }

  function expectNoCanary(results: { stdout: string; stderr: string }[]) {
    for (const result of results) for (const canary of CANARIES) expect(`${result.stdout}\n${result.stderr}`).not.toContain(canary);
  }

  const links: [string, string, (secret: string) => string][] = [
    ["CODEOWNERS", "CODEOWNERS", (secret) => join(secret, "secret.env")],
    [".forge/CODEOWNERS", ".forge/CODEOWNERS", (secret) => join(secret, "secret.env")],
    [POLICY, POLICY, (secret) => join(secret, "dir", "service-policy.toml")],
    ["the .forge directory", ".forge", (secret) => join(secret, "dir")],
  ];
  for (const [name, at, target] of links) {
    test(`${name} as a symbolic link out of the checkout is refused, and its target's lines appear in no format`, async () => {
      const secret = outside();
      const files: Record<string, string> = { CODEOWNERS: "* @a\n", [POLICY]: ENABLED };
      for (const path of Object.keys(files)) if (path === at || path.startsWith(`${at}/`)) delete files[path];
      const dir = repository(files);
      mkdirSync(dirname(join(dir, at)), { recursive: true });
      symlinkSync(target(secret), join(dir, at));
      const results = await everyFormat([dir]);
      expectNoCanary(results);
      for (const result of results) expect(result.exitCode).toBe(1);
      const findings = JSON.parse(results[1]!.stdout).findings;
      expect(findings).toContainEqual(expect.objectContaining({ kind: "unreadable_file", severity: "error", message: expect.stringContaining("symbolic link") }));
    });
  }

  test("a symbolic link to a file inside the checkout is refused too (the checkout may hold files git never tracked)", async () => {
    const dir = repository({ ".env": `${SECRETS.join("\n")}\n`, [POLICY]: ENABLED });
    symlinkSync(".env", join(dir, "CODEOWNERS"));
    const results = await everyFormat([dir]);
    expectNoCanary(results);
    expect(JSON.parse(results[1]!.stdout).findings).toContainEqual({ kind: "unreadable_file", severity: "error", file: "CODEOWNERS", line: null, message: expect.stringContaining("symbolic link") });
  });

  test("a symbolic link to a directory at a code-owners location is refused", async () => {
    const secret = outside();
    const dir = repository({ [POLICY]: ENABLED, "docs/CODEOWNERS": "* @a\n" });
    symlinkSync(join(secret, "dir"), join(dir, "CODEOWNERS"));
    const result = await validate([dir, "--format", "json"]);
    const document = JSON.parse(result.stdout);
    expect(document.findings).toContainEqual(expect.objectContaining({ kind: "unreadable_file", file: "CODEOWNERS" }));
    expect(document.summary.codeowners).toBeNull();
    expect(result.exitCode).toBe(1);
  });

  // In a child process with a deadline: a read that waited for a FIFO's writer would block this test process for good.
  test("a FIFO at a code-owners or policy location is refused without waiting for a writer", () => {
    const dir = repository({});
    mkdirSync(join(dir, ".forge"));
    for (const path of ["CODEOWNERS", POLICY]) expect(Bun.spawnSync(["mkfifo", join(dir, path)]).exitCode).toBe(0);
    const child = Bun.spawnSync([process.execPath, join(import.meta.dir, "..", "main.ts"), "validate", dir, "--format", "json"], { timeout: 20_000, stdout: "pipe", stderr: "pipe" });
    expect(child.signalCode ?? null).toBeNull();
    const findings = JSON.parse(child.stdout.toString()).findings;
    for (const file of ["CODEOWNERS", POLICY]) {
      expect(findings).toContainEqual({ kind: "unreadable_file", severity: "error", file, line: null, message: expect.stringContaining("not a regular file (a FIFO)") });
    }
    expect(child.exitCode).toBe(1);
  }, 30_000);

  test("a directory at a code-owners location is no file, as the service reads it: the next location is read", async () => {
    const dir = repository({ [POLICY]: ENABLED, "CODEOWNERS/x": "", "docs/CODEOWNERS": "* @a\n" });
    const result = await validate([dir, "--format", "json"]);
    expect(JSON.parse(result.stdout)).toMatchObject({ exitCode: 0, findings: [], summary: { codeowners: "docs/CODEOWNERS" } });
  });

  test("a code-owners file that is not valid UTF-8 is an error, as the service fails closed on it", async () => {
    const dir = repository({ [POLICY]: ENABLED });
    writeFileSync(join(dir, "CODEOWNERS"), Buffer.concat([Buffer.from("# caf"), Buffer.from([0xe9]), Buffer.from("\n* @a\n")]));
    const result = await validate([dir, "--format", "json"]);
    expect(JSON.parse(result.stdout).findings).toEqual([{ kind: "unreadable_file", severity: "error", file: "CODEOWNERS", line: null, message: expect.stringContaining("not valid UTF-8") }]);
    expect(result.exitCode).toBe(1);
  });

  test("a repository policy that is not valid UTF-8 is an error, not a policy the validator guessed at", async () => {
    const dir = repository({ CODEOWNERS: "* @a\n" });
    mkdirSync(join(dir, ".forge"));
    writeFileSync(join(dir, POLICY), Buffer.concat([Buffer.from(`${ENABLED}# `), Buffer.from([0xc3, 0x28]), Buffer.from("\n")]));
    const result = await validate([dir, "--format", "json"]);
    expect(JSON.parse(result.stdout).findings).toEqual([{ kind: "unreadable_file", severity: "error", file: POLICY, line: null, message: expect.stringContaining("not valid UTF-8") }]);
    expect(result.exitCode).toBe(1);
  });

  test("a byte order mark is dropped as the service's decoder drops it", async () => {
    const dir = repository({ [POLICY]: ENABLED });
    writeFileSync(join(dir, "CODEOWNERS"), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("/src/ @a\n")]));
    const result = await validate([dir, "--format", "json", "--files-from", "-"], { stdin: async () => "src/a.ts\n" });
    expect(JSON.parse(result.stdout)).toMatchObject({ findings: [], summary: { unownedPaths: 0 } });
  });

  // /proc files are regular files whose stat size is 0 whatever they hold: the read itself must stop at the bound.
  test.skipIf(!existsSync("/proc/kallsyms"))("a file whose size stat understates is read no further than its bound plus one byte", async () => {
    const dir = repository({ CODEOWNERS: "* @a\n", [POLICY]: ENABLED });
    expect(statSync("/proc/kallsyms").size).toBe(0);
    const result = await validate([dir, "--organization-policy", "/proc/kallsyms", "--format", "json"]);
    expect(JSON.parse(result.stdout).findings).toEqual([
      { kind: "bound_exceeded", severity: "error", file: "/proc/kallsyms", line: null, message: `file: policy file is ${MAX_POLICY_FILE_BYTES + 1} bytes; the limit is ${MAX_POLICY_FILE_BYTES}` },
    ]);
  });

  test("files named on the command line are the operator's choice: a --policy or --organization-policy link is followed", async () => {
    const elsewhere = repository({ "policy.toml": ENABLED, "org.toml": "schema_version = 1\n" });
    const dir = repository({ CODEOWNERS: "* @a\n" });
    symlinkSync(join(elsewhere, "policy.toml"), join(root, `policy-link-${counter}.toml`));
    symlinkSync(join(elsewhere, "org.toml"), join(root, `org-link-${counter}.toml`));
    const result = await validate([dir, "--policy", join(root, `policy-link-${counter}.toml`), "--organization-policy", join(root, `org-link-${counter}.toml`), "--format", "json"]);
    expect(JSON.parse(result.stdout)).toMatchObject({ exitCode: 0, findings: [] });
  });
});

describe("output cannot command the CI runner (issue 25 item 4)", () => {
  // What a pull request controls: CODEOWNERS tokens and the tree's file names. The Actions runner takes a line as a workflow
  // command when it starts (after white space) with `::`, and as a legacy command when it holds `##[` anywhere.
  const CODEOWNERS = "/src/ @a##[add-mask]x\nx##[error]y @a\n/lib/ ::stop-commands::tok\n/a/ @team/##[set-output name=x]v\n/docs/ @ok\n";
  const TREE = ["##[set-output name=leak]value", "::add-mask::secret.txt", "other/##[error]boom.md", " \u00a0::warning::indented", "lib/##[add-mask]"];
  const POLICY_NAME = "::error::x ##[add-mask]y.toml";

  /** Why the runner would act on `line` (a command of any name, registered or not), or null. */
  function runnerCommand(line: string): string | null {
    if (/^[\s\u0085]*::/.test(line)) return `workflow command in ${JSON.stringify(line)}`;
    if (line.includes("##[")) return `legacy command in ${JSON.stringify(line)}`;
    // The runner compares with .NET's culture-aware IndexOf, which skips ignorable characters: none may reach it raw.
    if (/[\p{Cf}\p{Default_Ignorable_Code_Point}]/u.test(line)) return `ignorable character in ${JSON.stringify(line)}`;
    return null;
  }

  async function hostile(format: string) {
    const dir = repository({ CODEOWNERS, [POLICY_NAME]: "schema_version = 1\nenabled = yes\n" });
    return validate([dir, "--policy", join(dir, POLICY_NAME), "--format", format, "--files-from", "-"], { stdin: async () => `${TREE.join("\n")}\n` });
  }

  test("text prints hostile tokens and file names without a line the runner would act on", async () => {
    const result = await hostile("text");
    expect(result.lines.map(runnerCommand).filter((why) => why !== null)).toEqual([]);
    expect(result.lines).toContain("\\u{003A}:error::x ##\\u{005B}add-mask]y.toml");
    expect(result.stdout).toContain("invalid owner '@a##\\u{005B}add-mask]x'");
    expect(result.stdout).toContain("other/##\\u{005B}error]boom.md");
    expect(result.exitCode).toBe(1);
  });

  test("json has no line the runner would act on, and parses back to the hostile values unchanged", async () => {
    const result = await hostile("json");
    expect(result.stdout.split("\n").map(runnerCommand).filter((why) => why !== null)).toEqual([]);
    const document = JSON.parse(result.stdout);
    const messages = document.findings.map((finding: { message: string }) => finding.message).join("\n");
    expect(messages).toContain("invalid owner '@a##[add-mask]x'");
    expect(messages).toContain("invalid owner '::stop-commands::tok'");
    expect(messages).toContain("other/##[error]boom.md");
    expect(document.findings.map((finding: { file: string }) => finding.file)).toContain(POLICY_NAME);
  });

  test("github prints only its own annotations, with no legacy command inside them", async () => {
    const result = await hostile("github");
    const [summary, ...annotations] = [...result.lines].reverse();
    expect(runnerCommand(summary!)).toBeNull();
    expect(annotations.length).toBeGreaterThan(3);
    for (const line of annotations) {
      expect(line).toMatch(/^::(error|warning|notice) [^:]*::/);
      expect(line.includes("##[")).toBe(false);
    }
  });

  test("usage errors on stderr echo hostile arguments without a line the runner would act on", async () => {
    for (const args of [["--##[add-mask]x"], [repository(CLEAN), "::stop-commands::x"], ["##[set-output name=x]"]]) {
      const result = await validate(args);
      expect(result.exitCode).toBe(2);
      expect(result.stderr.split("\n").map(runnerCommand).filter((why) => why !== null)).toEqual([]);
    }
  });

  test("every occurrence is neutralised, including runs of '#' and '::' after any white space", () => {
    expect(runnerSafe("###[a] ##[b]##[c]")).toBe("###\\u{005B}a] ##\\u{005B}b]##\\u{005B}c]");
    for (const line of ["::x::y", "  ::x::y", "\t::x::y", "\u00a0::x::y", "\u3000::x::y"]) expect(runnerCommand(runnerSafe(line))).toBeNull();
    expect(runnerSafe("a::b")).toBe("a::b");
  });
});

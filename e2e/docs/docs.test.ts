import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { KNOWN_VARIABLES } from "../../server/config/index.ts";
import { BINARY, cleanEnv, ensureBinary } from "../support/binary.ts";
import { documentationFiles, type Fence, fences, read, ROOT, shortName, tableAfter } from "./markdown.ts";

/**
 * The documentation cannot rot: every TOML policy and CODEOWNERS example in README.md and docs/ goes through the compiled
 * `service validate` (one marked `invalid=<kind>` must produce that error finding, the others none); the settings table of
 * docs/operations.md is exactly the configuration loader's SERVICE_* names; every internal link and anchor resolves.
 */
const FILES = documentationFiles();
const examples: Fence[] = FILES.flatMap(fences).filter((f) => /^(toml|codeowners)\b/.test(f.info));
const ORGANIZATION_POLICY = ".forge-organization-policy.toml";
type Finding = { kind: string; severity: string; file: string | null; line: number | null; message: string };

beforeAll(() => ensureBinary());

function validate(example: Fence): { exitCode: number; findings: Finding[]; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), "svc-docs-"));
  try {
    const role = example.info.split(/\s+/)[1] ?? "";
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    const args = [dir, "--format", "json"];
    if (example.info.startsWith("codeowners")) {
      write("CODEOWNERS", example.text);
      write(".forge/service-policy.toml", "schema_version = 1\nenabled = true\n");
    } else if (role === "repository-policy") {
      write(".forge/service-policy.toml", example.text);
      write("CODEOWNERS", "* @acme/core\n");
      // Enroll every App the example delegates to (a repository policy is judged against an organization's enrollment).
      const apps = [...example.text.matchAll(/^\s*app\s*=\s*"([^"]+)"/gm)].map((m, i) => `[[trusted_apps]]\nslug = "${m[1]}"\napp_id = ${i + 1}\n`);
      write(ORGANIZATION_POLICY, `schema_version = 1\n${apps.join("")}`);
      args.push("--organization-policy", join(dir, ORGANIZATION_POLICY));
    } else if (role === "organization-policy") {
      write(ORGANIZATION_POLICY, example.text);
      write(".forge/service-policy.toml", "schema_version = 1\nenabled = true\n");
      write("CODEOWNERS", "* @acme/core\n");
      args.push("--organization-policy", join(dir, ORGANIZATION_POLICY));
    } else {
      throw new Error(`${example.file}:${example.line}: a TOML example must say whether it is a repository-policy or an organization-policy (\`\`\`toml repository-policy)`);
    }
    const result = Bun.spawnSync([BINARY, "validate", ...args], { cwd: "/", env: cleanEnv(), stdout: "pipe", stderr: "pipe" });
    const stdout = result.stdout.toString();
    const findings = stdout ? (JSON.parse(stdout).findings as Finding[]) : [];
    return { exitCode: result.exitCode ?? -1, findings, stderr: `${result.signalCode ?? ""} ${result.stderr.toString()}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("policy and CODEOWNERS examples", () => {
  test("the guides hold examples of each kind, valid and invalid", () => {
    const infos = examples.map((e) => e.info);
    for (const kind of ["toml repository-policy", "toml organization-policy", "codeowners"]) expect(infos).toContain(kind);
    expect(infos.some((i) => /invalid=/.test(i))).toBe(true);
    expect(examples.length).toBeGreaterThan(8);
  });

  test("every example passes service validate, or produces the finding it is marked with", () => {
    const wrong: string[] = [];
    for (const example of examples) {
      const claimed = /invalid=([a-z_]+)/.exec(example.info)?.[1];
      const { exitCode, findings, stderr } = validate(example);
      const errors = findings.filter((f) => f.severity === "error");
      const where = `${example.file}:${example.line} (${example.info})`;
      if (claimed === undefined && (exitCode !== 0 || errors.length > 0)) wrong.push(`${where}: expected valid, got exit ${exitCode} ${JSON.stringify(errors)} ${stderr}`);
      if (claimed !== undefined && (exitCode !== 1 || !errors.some((f) => f.kind === claimed))) wrong.push(`${where}: expected ${claimed}, got exit ${exitCode} ${JSON.stringify(errors)} ${stderr}`);
    }
    expect(wrong).toEqual([]);
  });
});

describe("settings", () => {
  const rows = tableAfter(join(ROOT, "docs", "operations.md"), "Settings");
  const documented = rows.flatMap((r) => [...r[0]!.matchAll(/`(SERVICE_[A-Z0-9_]+)`/g)].map((m) => m[1]!));

  test("every SERVICE_* setting the configuration loader reads is in the settings table of docs/operations.md", () => {
    expect(KNOWN_VARIABLES.filter((v) => !documented.includes(v))).toEqual([]);
  });

  test("the loader's list is every SERVICE_* name the product's code mentions", () => {
    const sources = [...new Bun.Glob("server/**/*.ts").scanSync({ cwd: ROOT })].filter((f) => !f.endsWith(".test.ts"));
    const named = new Set(sources.flatMap((f) => [...read(join(ROOT, f)).matchAll(/["'`](SERVICE_[A-Z0-9_]*[A-Z0-9])["'`]/g)].map((m) => m[1]!)));
    expect([...named].filter((v) => !KNOWN_VARIABLES.includes(v)).sort()).toEqual([]);
    expect(KNOWN_VARIABLES.filter((v) => !named.has(v))).toEqual([]);
  });

  test("every setting the table documents exists", () => {
    expect(documented.filter((v) => !KNOWN_VARIABLES.includes(v))).toEqual([]);
    expect(new Set(documented).size).toBe(documented.length);
  });

  test("every SERVICE_* name anywhere in the documentation is a setting", () => {
    const unknown = FILES.flatMap((file) => [...read(file).matchAll(/\bSERVICE_[A-Z0-9_]*[A-Z0-9]\b/g)].map((m) => m[0]).filter((name) => !KNOWN_VARIABLES.includes(name)).map((name) => `${shortName(file)}: ${name}`));
    expect([...new Set(unknown)]).toEqual([]);
  });
});

/** GitHub's heading anchor: lowercase, punctuation but hyphens and underscores dropped, spaces to hyphens. */
const anchor = (heading: string) => heading.trim().toLowerCase().replace(/`/g, "").replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");

function anchorsOf(path: string): Set<string> {
  const text = read(path).replace(/^([ \t]*)(`{3,}|~{3,})[\s\S]*?^\1\2[ \t]*$/gm, "");
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)));
}

describe("links", () => {
  test("every internal link resolves to a file, and every anchor to a heading", () => {
    const broken: string[] = [];
    for (const file of FILES) {
      const text = read(file).replace(/^([ \t]*)(`{3,}|~{3,})[\s\S]*?^\1\2[ \t]*$/gm, "").replace(/`[^`\n]*`/g, "");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, fragment] = target!.split("#") as [string, string | undefined];
        const resolved = path === "" ? file : resolve(dirname(file), path);
        if (!existsSync(resolved)) {
          broken.push(`${shortName(file)}: ${target} (no such file)`);
          continue;
        }
        if (fragment !== undefined && (!resolved.endsWith(".md") || statSync(resolved).isDirectory() || !anchorsOf(resolved).has(fragment))) {
          broken.push(`${shortName(file)}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  test("the README is a front door of at most 150 lines that links every guide", () => {
    const readme = read(join(ROOT, "README.md"));
    expect(readme.split("\n").length).toBeLessThanOrEqual(150);
    for (const guide of ["getting-started", "policy", "operations", "security"]) expect(readme).toContain(`(docs/${guide}.md)`);
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, type TestDatabase } from "./support/databases.ts";
import { ensureBinary, runBinary, startBinary } from "./support/binary.ts";
import { MIGRATION_HEAD } from "../server/store/index.ts";

/** The compiled executable, run from another directory the way an operator runs it. */
let dir: string;
beforeAll(() => {
  ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "svc-bin-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("command line", () => {
  test("--version prints the package version", async () => {
    const pkg = await Bun.file(join(import.meta.dir, "..", "package.json")).json();
    const result = runBinary(["--version"], {});
    expect(result.exitCode).toBe(0);
    expect(result.stdout.trim()).toBe(pkg.version);
  });

  test("explain without a pull request exits 2 and explains its arguments", () => {
    const result = runBinary(["explain", "--repository", "acme/web"], {});
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain("--pull");
    expect(result.stderr).toContain("usage: service explain");
  });

  test("an unknown command exits 2 with the usage", () => {
    const result = runBinary(["launch"], {});
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain("usage: service");
  });

  test("database check on an unmigrated database exits non-zero and says to migrate", () => {
    const result = runBinary(["database", "check"], { SERVICE_DATABASE_URL: `sqlite:${join(dir, "absent.db")}` });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain("database migrate");
    expect(existsSync(join(dir, "absent.db"))).toBe(false);
  });

  test("database migrate then database check succeed, and a second migrate applies nothing", () => {
    const env = { SERVICE_DATABASE_URL: `sqlite:${join(dir, "cli.db")}` };
    expect(runBinary(["database", "migrate"], env).exitCode).toBe(0);
    expect(runBinary(["database", "check"], env).stdout).toContain(MIGRATION_HEAD);
    expect(runBinary(["database", "migrate"], env).stdout).toContain("nothing to apply");
  });

  test("config check prints the effective non-secret settings without connecting", () => {
    const result = runBinary(["config", "check"], { SERVICE_DATABASE_URL: "postgresql://svc:hunter2-password@db.invalid:5432/x", SERVICE_CHECK_NAME: "Owners" });
    expect(result.exitCode).toBe(0);
    const settings = JSON.parse(result.stdout);
    expect(settings).toMatchObject({ check_name: "Owners", database_backend: "postgresql", database: { host: "db.invalid" } });
    expect(result.stdout).not.toContain("hunter2-password");
  });

  test("config check exits 2 naming the variable and rule of an invalid production configuration", () => {
    const result = runBinary(["config", "check"], { SERVICE_ENVIRONMENT: "production", SERVICE_DATABASE_URL: "sqlite:./x.db" });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain("SERVICE_DATABASE_URL: the embedded sqlite database is for single-process development only");
  });

  test("serve with a decisions token file naming a reader twice, or none, stops at start naming the setting and the fault, never a token", () => {
    const token = "reader-token-0123456789abcdef0123456789";
    for (const [text, fault] of [[`ci:${token}\nci:${token}x\n`, "repeats the name ci"], [`:${token}\n`, "empty name"]] as const) {
      const file = join(dir, "decisions-tokens");
      writeFileSync(file, text);
      const result = runBinary(["serve"], { SERVICE_DATABASE_URL: `sqlite:${join(dir, "tokens.db")}`, SERVICE_PORT: "0", SERVICE_HOST: "127.0.0.1", SERVICE_DECISIONS_TOKEN_FILE: file });
      expect({ fault, exitCode: result.exitCode }).toEqual({ fault, exitCode: 2 });
      expect(result.stderr).toContain("SERVICE_DECISIONS_TOKEN_FILE");
      expect(result.stderr).toContain(fault);
      expect(result.stdout + result.stderr).not.toContain(token);
    }
  });

  test("serve refuses an unmigrated database and does not create it", () => {
    const path = join(dir, "never.db");
    const result = runBinary(["serve"], { SERVICE_DATABASE_URL: `sqlite:${path}`, SERVICE_PORT: "0", SERVICE_HOST: "127.0.0.1" });
    expect(result.exitCode).toBe(1);
    expect(result.stdout + result.stderr).toContain("database migrate");
    expect(existsSync(path)).toBe(false);
  });
});

describe("serve with nothing but an embedded database path", () => {
  test("every operator route answers with the spec's fields and headers, and SIGTERM exits 0 promptly", async () => {
    const env = { SERVICE_DATABASE_URL: `sqlite:${join(dir, "serve.db")}` };
    expect(runBinary(["database", "migrate"], env).exitCode).toBe(0);
    const service = await startBinary(env);
    try {
      const expectations: Array<[string, number, string]> = [
        ["/", 200, "application/json"],
        ["/api/runtime-identity", 200, "application/json"],
        ["/health/live", 200, "application/json"],
        ["/health/ready", 503, "application/json"], // no App credentials configured: not ready
        ["/metrics", 200, "text/plain"],
        ["/api/openapi.json", 200, "application/json"],
        ["/api/docs", 200, "text/html"],
        ["/docs/oauth2-redirect", 200, "text/html"],
        ["/api/docs/assets/swagger-ui-bundle.js", 200, "javascript"],
        // No credential for the decision records configured: their routes and page do not exist.
        ["/api/decisions", 404, "application/json"],
        ["/decisions/", 404, "application/json"],
      ];
      for (const [path, status, type] of expectations) {
        const response = await fetch(service.url + path);
        expect({ path, status: response.status }).toEqual({ path, status });
        expect(response.headers.get("content-type")).toContain(type);
        await response.arrayBuffer();
      }
      const ready = await (await fetch(`${service.url}/health/ready`)).json();
      expect(ready).toEqual({ status: "not_ready", forge_credentials: false, database: true, worker_enabled: true, reconciler_enabled: true, worker: true, reconciler: true });
      const identity = await (await fetch(`${service.url}/api/runtime-identity`)).json();
      expect(identity).toMatchObject({ schema_version: 1, database_backend: "sqlite", build_revision: null, forge_app_id: 0 });
    } finally {
      const { exitCode, ms } = await service.stop();
      expect(exitCode).toBe(0);
      expect(ms).toBeLessThan(10_000);
    }
  });
});

describe("secrets", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase("postgresql");
  });
  afterAll(async () => database.drop());

  test("in production, database migrate and check need only the database URL (no App secrets)", () => {
    const env = { SERVICE_ENVIRONMENT: "production", SERVICE_DATABASE_URL: database.url.replace("postgresql://postgres@", "postgresql://postgres:pw@") };
    expect(runBinary(["database", "migrate"], env).exitCode).toBe(0);
    expect(runBinary(["database", "check"], env).exitCode).toBe(0);
    const serve = runBinary(["serve"], env);
    expect(serve.exitCode).toBe(2);
    expect(serve.stderr).toContain("SERVICE_FORGE_APP_ID: is required in production");
  });

  test("known secret values never appear in the service's output", async () => {
    const webhookSecret = "webhook-secret-CANARY-0123456789abcdef";
    const key = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    const dbPassword = "db-password-CANARY-42";
    writeFileSync(join(dir, "webhook"), webhookSecret);
    writeFileSync(join(dir, "key.pem"), key);
    const url = database.url.replace("postgresql://postgres@", `postgresql://postgres:${dbPassword}@`);
    writeFileSync(join(dir, "db-url"), url);
    const env = {
      SERVICE_DATABASE_URL_FILE: join(dir, "db-url"),
      SERVICE_FORGE_APP_ID: "4242",
      SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"),
      SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "webhook"),
      SERVICE_ALLOW_INSECURE_CHANGES: "true",
      SERVICE_LOG_LEVEL: "trace",
    };
    const migrate = runBinary(["database", "migrate"], env);
    expect(migrate.exitCode).toBe(0);
    const check = runBinary(["config", "check"], env);
    const service = await startBinary(env);
    for (const path of ["/", "/api/runtime-identity", "/health/live", "/health/ready", "/metrics", "/api/openapi.json"]) {
      await (await fetch(service.url + path)).arrayBuffer();
    }
    const { exitCode } = await service.stop();
    expect(exitCode).toBe(0);
    const everything = [migrate.stdout, migrate.stderr, check.stdout, check.stderr, service.output()].join("\n");
    expect(everything).toContain("SERVICE_ALLOW_INSECURE_CHANGES=true"); // the high-severity warning is there
    expect(everything).toContain('"level":"error"');
    const keyBody = key.split("\n").filter((line) => line && !line.startsWith("-----"));
    for (const canary of [webhookSecret, dbPassword, ...keyBody.slice(0, 3), "PRIVATE KEY"]) {
      expect(everything).not.toContain(canary);
    }
  });
});

describe("validate", () => {
  test("validate runs offline with no settings: the tree on stdin, workflow annotations out, exit 1 on an invalid line", () => {
    const repo = join(dir, "validate-repo");
    mkdirSync(join(repo, ".forge"), { recursive: true });
    writeFileSync(join(repo, "CODEOWNERS"), "* @acme/core\n/docs/ @acme/docs\n/src/ bob\n");
    writeFileSync(join(repo, ".forge", "service-policy.toml"), "schema_version = 1\nenabled = true\n");
    // A setting the service would reject proves validate never loads the configuration.
    const env = { SERVICE_PORT: "not-a-port", SERVICE_DATABASE_URL: "postgresql://nowhere.invalid/x" };
    const result = runBinary(["validate", "--files-from", "-", "--format", "github"], env, { cwd: repo, stdin: "CODEOWNERS\nREADME.md\nsrc/a.ts\n" });
    expect(result.stdout.split("\n")).toEqual([
      "::warning file=CODEOWNERS,line=2,title=rule_owns_nothing::'/docs/' matches no path of the tree",
      "::error file=CODEOWNERS,line=3,title=invalid_codeowners_line::invalid owner 'bob'",
      "1 error, 1 warning, 0 notices (CODEOWNERS: 2 rules; 3 paths checked, 0 unowned)",
      "",
    ]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toBe("");
  });

  test("validate refuses a link out of the checkout and prints hostile names and tokens as no runner command, in every format", () => {
    const repo = join(dir, "validate-hostile");
    mkdirSync(join(repo, ".forge"), { recursive: true });
    writeFileSync(join(dir, "outside.env"), "TOKEN=canary-binary-secret canary-binary-owner\n");
    writeFileSync(join(repo, "CODEOWNERS"), "/src/ @a##[add-mask]x\n/lib/ @ok\n");
    symlinkSync(join(dir, "outside.env"), join(repo, ".forge", "service-policy.toml"));
    writeFileSync(join(repo, "::error::x ##[set-output name=y]z.toml"), "schema_version = 1\nenabled = yes\n");
    const tree = "##[set-output name=leak]value\n::add-mask::secret.txt\nlib/a.ts\n";
    for (const format of ["text", "json", "github"]) {
      const result = runBinary(["validate", "--files-from", "-", "--format", format], {}, { cwd: repo, stdin: tree });
      expect(result.exitCode).toBe(1);
      expect(result.stdout).not.toContain("canary-binary");
      const lines = result.stdout.split("\n");
      expect(lines.filter((line) => line.includes("##["))).toEqual([]);
      if (format !== "github") expect(lines.filter((line) => /^\s*::/.test(line))).toEqual([]);
      else expect(lines.filter((line) => line !== "" && !/^::(error|warning|notice) /.test(line))).toEqual([lines.at(-2)!]);
      expect(result.stdout).toContain(".forge/service-policy.toml is a symbolic link");
    }
    const named = runBinary(["validate", "--policy", "::error::x ##[set-output name=y]z.toml"], {}, { cwd: repo });
    expect(named.stdout.split("\n")[0]).toBe("\\u{003A}:error::x ##\\u{005B}set-output name=y]z.toml");
  });

  test("validate with a bad format value exits 2 and says why", () => {
    const result = runBinary(["validate", dir, "--format", "xml"], {});
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain("--format must be text, json or github");
  });
});

describe("build revision", () => {
  test("a revision given at build time is reported by runtime identity", async () => {
    const revision = "0123456789abcdef0123456789abcdef01234567";
    const binary = ensureBinary(join(dir, "service-rev"), revision);
    const env = { SERVICE_DATABASE_URL: `sqlite:${join(dir, "rev.db")}` };
    expect(runBinary(["database", "migrate"], env, { binary }).exitCode).toBe(0);
    const service = await startBinary(env, { binary });
    try {
      const identity = await (await fetch(`${service.url}/api/runtime-identity`)).json();
      expect(identity.build_revision).toBe(revision);
    } finally {
      await service.stop();
    }
  });
});

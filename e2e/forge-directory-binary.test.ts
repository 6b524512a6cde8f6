import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScenario, generateAppKeys, onlyFirstAppReceivesWebhooks } from "../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../server/simulator/simulator.ts";
import { BINARY, cleanEnv, ensureBinary, type RunningBinary, runBinary, simulatorEnv, startForSimulator } from "./support/binary.ts";
import { createTestDatabase, type TestDatabase } from "./support/databases.ts";

/**
 * The compiled executable run as on GitHub, with SERVICE_FORGE_DIRECTORY=.github: a repository's .github/CODEOWNERS decides
 * the check (its .forge/CODEOWNERS, which would decide otherwise, is not read), its .github/service-policy.toml opts it in,
 * the organization policy is read from the organization's .github repository, and the decision record names the directory
 * it was evaluated under, so that `service history replay` under today's default directory still reaches the same decision.
 */
const WEBHOOK_SECRET = "forge-directory-webhook-secret-0123456789";

/** Runs the binary without blocking this process, which serves the simulator the binary talks to. */
async function exec(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([BINARY, ...args], { cwd: "/", env: { ...cleanEnv(), ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, exitCode };
}

let dir: string;
beforeAll(() => {
  ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "svc-forge-dir-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("compiled binary with SERVICE_FORGE_DIRECTORY=.github", () => {
  let sim: ForgeSimulator | undefined;
  let database: TestDatabase | undefined;
  let service: RunningBinary | undefined;
  afterEach(async () => {
    await service?.stop();
    await sim?.stop();
    await database?.drop();
  });

  test("a repository's .github/CODEOWNERS drives the check, and the record replays under .github", async () => {
    const keys = generateAppKeys();
    sim = startForgeSimulator({ webhookSecret: WEBHOOK_SECRET });
    onlyFirstAppReceivesWebhooks(sim);
    const scenario = await createScenario(sim, { keys });
    const control = sim.control;
    // The scenario's .forge/CODEOWNERS gives src/ to @bob @acme/core; under .github only .github/CODEOWNERS counts: @alice.
    await control.commit({
      owner: scenario.org, repo: scenario.repo, branch: "main",
      files: { ".github/CODEOWNERS": "* @alice\n", ".github/service-policy.toml": "schema_version = 1\nenabled = true\n", ".forge/service-policy.toml": null },
    });
    // The organization policy repository follows the directory too: an invalid policy in the organization's .github
    // repository fails the check closed until it is mended (the scenario's .forge repository holds a valid one).
    control.createRepository({ owner: scenario.org, name: ".github", files: { ".github/service-policy.toml": "schema_version = 1\nunknown_key = 1\n" } });
    database = await createTestDatabase("sqlite");
    const base = simulatorEnv({ simUrl: sim.url, appId: scenario.appId, privateKey: keys.privateKey, webhookSecret: WEBHOOK_SECRET, databaseUrl: database.url, dir });
    const env = { ...base, SERVICE_FORGE_DIRECTORY: ".github" };
    service = await startForSimulator(sim, scenario.appId, env);

    const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
    const { sha } = await control.pushToPullRequest({ ...pr, files: { "src/index.ts": "export const changed = true;\n" } });
    type Run = { status: string; conclusion: string | null; output: { title: string | null; summary: string | null; text: string | null } };
    const check = () => (control.checkRuns({ owner: pr.owner, repo: pr.repo, headSha: sha }) as Run[])[0];
    const until = async (what: string, condition: () => boolean) => {
      const deadline = Date.now() + 30_000;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(`${what}: saw ${JSON.stringify(check())}\n${service!.output().split("\n").slice(-20).join("\n")}`);
        await Bun.sleep(50);
      }
    };
    const output = () => `${check()!.output.summary}\n${check()!.output.text}`;
    await until("a failure naming @alice", () => check()?.conclusion === "failure");
    expect(output()).toContain("Code owners read from <code>\\.github/CODEOWNERS</code>");
    expect(output()).toContain("Owners\\: <code>\\@alice</code>");
    expect(output()).not.toContain("@bob");

    // @bob, an owner of src/ only under .forge/CODEOWNERS, approves: nothing changes. @alice, the .github owner, approves: success.
    await control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await until("bob's review judged", () => output().includes("<code>bob</code> is not an owner of these paths"));
    expect(check()?.conclusion).toBe("failure");
    await control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await until("the organization policy's failure", () => check()?.status === "completed" && /organization policy is invalid/i.test(check()!.output.title ?? "") && output().includes("Approvals counted"));
    expect(check()?.conclusion).toBe("failure");
    // Mending the policy in the .github repository re-evaluates the pull request: @alice's approval now makes it succeed.
    await control.commit({ owner: scenario.org, repo: ".github", branch: "main", files: { ".github/service-policy.toml": "schema_version = 1\n" } });
    await until("success after the organization policy is mended", () => check()?.conclusion === "success");

    const history = runBinary(["history", "--repository", `${pr.owner}/${pr.repo}`, "--pull", String(pr.number)], env);
    expect(history.exitCode).toBe(0);
    expect(history.stdout).toContain("forge directory: .github");
    expect(history.stdout).toContain("CODEOWNERS: .github/CODEOWNERS");
    const success = /decision (d\d+) on [^:]+: success/.exec(history.stdout)![1]!;
    // Replayed by a process configured with the default directory: the record's .github is used, not today's .forge.
    const replay = await exec(["history", "replay", success], base);
    expect(replay.stderr).toBe("");
    expect(replay.stdout).toContain(`replay of ${success}`);
    expect(replay.stdout).toContain(": same: today's evaluation reaches the recorded success");
    expect(replay.exitCode).toBe(0);
  }, 120_000);

  test("a bad SERVICE_FORGE_DIRECTORY stops the binary with a configuration error naming the setting", () => {
    for (const bad of ["..", ".github/workflows", "github", ""]) {
      const result = runBinary(["config", "check"], { SERVICE_FORGE_DIRECTORY: bad });
      expect(result.exitCode).not.toBe(0);
      expect(result.stderr).toContain("SERVICE_FORGE_DIRECTORY");
    }
  });
});

// Test fixture (not part of the service): the worker publishes a check for a pull request on the forge simulator, then `explain
// --json` with the same App credentials produces that pull request's evidence document. Used by explain-simulator.test.ts and,
// as `bun e2e/support/explain-fixture.ts [--binary dist/service]` (prints {document, published} as JSON), by the
// playground's Playwright spec, which has the compiled executable run `service explain`.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServiceHarness, waitUntil } from "./service.ts";
import { loadConfig } from "../../server/config/index.ts";
import { runExplain } from "../../server/commands/explain.ts";

export interface PublishedFixture {
  /** The parsed output of `explain --json`. */
  readonly document: { decision: { kind: string; conclusion: string | null; title: string }; evidence: { pullRequest: { headSha: string } } } & Record<string, unknown>;
  readonly published: { conclusion: string | null; title: string | null; summary: string | null };
  readonly head: string;
  /** What `explain` printed for a person. */
  readonly human: readonly string[];
}

/** `binary`: run `<binary> explain …` as a process with the App settings in its environment; default: runExplain in-process. */
export async function publishedEvidenceFixture(options: { binary?: string } = {}): Promise<PublishedFixture> {
  const h = await startServiceHarness("sqlite");
  const dir = mkdtempSync(join(tmpdir(), "svc-explain-"));
  try {
    const { sim, scenario } = h;
    const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
    const { sha: head } = await sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "export const a = 1;\n" } });
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
    await sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await waitUntil(() => h.checks(head)[0]?.output.title === "1 of 2 owner sets not yet approved", "the check after bob's approval");
    const check = h.checks(head)[0]!;

    writeFileSync(join(dir, "key.pem"), scenario.privateKey);
    const env = {
      SERVICE_DATABASE_URL: `sqlite:${join(dir, "unused.db")}`,
      SERVICE_FORGE_API_URL: sim.url,
      SERVICE_FORGE_APP_ID: String(scenario.appId),
      SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"),
    };
    const args = ["--repository", `${scenario.org}/${scenario.repo}`, "--pull", String(scenario.pullNumber)];
    const run = async (extra: string[]): Promise<string[]> => {
      if (options.binary !== undefined) {
        const child = Bun.spawn([options.binary, "explain", ...args, ...extra], { cwd: dir, env: { PATH: process.env.PATH ?? "", ...env }, stdout: "pipe", stderr: "pipe" });
        const [text, errorText, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
        if (code !== 0) throw new Error(`service explain exited ${code}: ${errorText}`);
        return text.trimEnd().split("\n");
      }
      const lines: string[] = [];
      const errors: string[] = [];
      if ((await runExplain([...args, ...extra], loadConfig(env), { stdout: (l) => lines.push(l), stderr: (l) => errors.push(l) })) !== 0) throw new Error(errors.join("\n"));
      return lines;
    };
    const stdout = await run(["--json"]);
    const human = await run([]);
    return {
      document: JSON.parse(stdout.join("\n")),
      published: { conclusion: check.conclusion, title: check.output.title, summary: check.output.summary },
      head,
      human,
    };
  } finally {
    await h.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const flag = process.argv.indexOf("--binary");
  const fixture = await publishedEvidenceFixture(flag === -1 ? {} : { binary: process.argv[flag + 1]! });
  process.stdout.write(`${JSON.stringify(fixture)}\n`);
  process.exit(0);
}

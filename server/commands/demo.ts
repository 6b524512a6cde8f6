import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { createScenario, generateAppKeys, onlyFirstAppReceivesWebhooks } from "../simulator/scenario.ts";
import { startForgeSimulator } from "../simulator/simulator.ts";
import { loadConfig } from "../config/index.ts";
import { createLogger } from "../observability/logger.ts";
import { migrateDatabase } from "../store/index.ts";
import type { CheckTransition } from "../worker/context.ts";
import { EXIT_FAILURE, EXIT_OK } from "./exit-codes.ts";
import { runHistory } from "./history.ts";
import { type RunningService, startService } from "./serve.ts";

/**
 * `service demo`: the service on a fresh embedded database, against the forge simulator (in this process, its clock the real
 * one), walking one pull request through failure → owner approval → success → new commit → failure → approval of the new head →
 * success → merge, then merging a second pull request without approval, printing each completed check and each merge as the
 * service recorded it. It ends with the `service history` commands that read the story back from its database (kept after
 * exit) and the decisions page's address. Then both keep running, URLs printed, until interrupted (or exit at once with --once).
 */
const DEMO_REPOSITORY = "acme/web"; // createScenario's
type Out = { stdout: (line: string) => void; stderr: (line: string) => void };

export async function runDemo(args: string[], env: Record<string, string | undefined>, out: Out): Promise<number> {
  const once = args.includes("--once");
  // The database outlives the demo (the printed history commands read it); the App's key and webhook secret do not.
  const dataDir = mkdtempSync(join(tmpdir(), "service-demo-"));
  const secretsDir = mkdtempSync(join(tmpdir(), "service-demo-secrets-"));
  const databaseUrl = `sqlite:${join(dataDir, "demo.db")}`;
  const secret = randomBytes(32).toString("hex");
  const keys = generateAppKeys();
  writeFileSync(join(secretsDir, "app-private-key.pem"), keys.privateKey, { mode: 0o600 });
  writeFileSync(join(secretsDir, "webhook-secret"), secret, { mode: 0o600 });
  chmodSync(secretsDir, 0o700);

  const sim = startForgeSimulator({ webhookSecret: secret, realClock: true });
  onlyFirstAppReceivesWebhooks(sim);
  let service: RunningService | null = null;
  const stopAll = async () => {
    await service?.stop().catch(() => {});
    await sim.stop().catch(() => {});
    rmSync(secretsDir, { recursive: true, force: true });
  };
  try {
    const scenario = await createScenario(sim, { keys });
    // People read the decision records by signing in with the forge (the simulator's sign-in page): the App's client secret.
    const app = sim.control.mustApp(scenario.appId);
    writeFileSync(join(secretsDir, "client-secret"), app.clientSecret, { mode: 0o600 });
    const repo = { owner: scenario.org, repo: scenario.repo };
    const pr = { ...repo, number: scenario.pullNumber };
    const config = loadConfig({
      SERVICE_HOST: env.SERVICE_HOST ?? "127.0.0.1",
      SERVICE_PORT: env.SERVICE_PORT ?? "8080",
      SERVICE_LOG_LEVEL: env.SERVICE_LOG_LEVEL ?? "error",
      SERVICE_DATABASE_URL: databaseUrl,
      SERVICE_FORGE_API_URL: sim.url,
      SERVICE_FORGE_WEB_URL: sim.url,
      SERVICE_FORGE_APP_ID: String(scenario.appId),
      SERVICE_FORGE_PRIVATE_KEY_FILE: join(secretsDir, "app-private-key.pem"),
      SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(secretsDir, "webhook-secret"),
      SERVICE_FORGE_CLIENT_ID: app.clientId,
      SERVICE_FORGE_CLIENT_SECRET_FILE: join(secretsDir, "client-secret"),
      SERVICE_RECONCILE_ENABLED: "false",
    });
    await migrateDatabase(config.database, Date.now());
    const short = (sha: string) => sha.slice(0, 7);
    const transitions: CheckTransition[] = [];
    service = await startService(config, createLogger(config.logLevel), { onTransition: (t: CheckTransition) => void transitions.push(t) });
    // The second pull request's branch, pushed before the story starts (before the service receives deliveries).
    await sim.control.commit({ ...repo, branch: "hotfix", files: { "src/hotfix.ts": "export const hotfix = true;\n" }, sender: "erin" });
    app.webhookUrl = `${service.url}/webhooks/forge`;
    app.callbackUrls = [`${service.url}/auth/callback`];

    let seen = 0;
    // Each step waits for a new completed check on that head (not an earlier one) and prints it, so the story reads the same
    // every run (the resets to in_progress between them, and a closed pull request's check published again, are not printed).
    const expectCheck = async (headSha: string, conclusion: "success" | "failure") => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const index = transitions.findIndex((t, i) => i >= seen && t.headSha === headSha && t.status === "completed" && t.conclusion === conclusion);
        if (index !== -1) {
          seen = index + 1;
          out.stdout(`      check on ${short(headSha)}: ${conclusion.toUpperCase()}  "${transitions[index]!.title}"`);
          return;
        }
        if (Date.now() > deadline) throw new Error(`the check on ${short(headSha)} did not reach ${conclusion}`);
        await Bun.sleep(25);
      }
    };
    // A merge is recorded when the service accepts the forge's `closed` delivery. It is printed as `service history --commit`
    // prints it: who merged what, and whether a success of the service was current for the head at merge. The delivery also
    // has the closed pull request's check evaluated once more; the next step waits for that (a few seconds at most), so that
    // the records are numbered the same every run.
    const merge = async (number: number, by: string): Promise<string> => {
      const merged = await sim.control.mergePullRequest({ ...repo, number, by });
      const sha = merged.merged!.commitSha;
      const settled = Date.now() + 5_000;
      while (!transitions.some((t, i) => i >= seen && t.headSha === merged.headSha && t.status === "completed") && Date.now() < settled) await Bun.sleep(25);
      seen = transitions.length;
      const lines: string[] = [];
      const read = (line: string) => void lines.push(line);
      const deadline = Date.now() + 20_000;
      while (await runHistory(["--repository", `${repo.owner}/${repo.repo}`, "--commit", sha], config, { stdout: read, stderr: read }) !== EXIT_OK || !lines.some((l) => l.startsWith("merge "))) {
        if (Date.now() > deadline) throw new Error(`the merge of #${number} was not recorded`);
        lines.length = 0;
        await Bun.sleep(50);
      }
      out.stdout(`      ${lines.find((l) => l.startsWith("merge "))!.replace(sha, `${short(sha)}…`)}`);
      out.stdout(`        ${lines.find((l) => /^ {2}(approved|UNAPPROVED MERGE):/.test(l))!.trim()}`);
      return sha;
    };

    out.stdout(`1. erin pushes to acme/web#${pr.number} (docs/guide.md: owners @acme/docs @alice; src/: owners @bob @acme/core): each owner set must approve this head`);
    const { sha: head1 } = await sim.control.pushToPullRequest({ ...pr, files: { "src/feature.ts": "export const feature = true;\n" } });
    await expectCheck(head1, "failure");
    out.stdout(`2. alice approves (docs owner): the src/ owners have not approved yet`);
    await sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await expectCheck(head1, "failure");
    out.stdout(`3. bob approves (src/ owner): both owner sets approved this head`);
    await sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await expectCheck(head1, "success");
    out.stdout(`4. erin pushes another commit: approvals of the older head stop counting`);
    const { sha: head2 } = await sim.control.pushToPullRequest({ ...pr, files: { "src/feature.ts": "export const feature = 2;\n" } });
    await expectCheck(head2, "failure");
    out.stdout(`5. alice approves the new head, then bob; alice merges #${pr.number}`);
    await sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await expectCheck(head2, "failure");
    await sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await expectCheck(head2, "success");
    const approvedMerge = await merge(pr.number, "alice");
    out.stdout(`6. erin opens acme/web#${pr.number + 1} (src/hotfix.ts); nobody approves it, and dave, an administrator, merges it past the required check`);
    const second = await sim.control.openPullRequest({ ...repo, head: "hotfix", author: "erin", title: "Hotfix" });
    await expectCheck(second.headSha, "failure");
    const unapprovedMerge = await merge(second.number, "dave");

    const history = `SERVICE_DATABASE_URL=${databaseUrl} dist/service history --repository ${DEMO_REPOSITORY}`;
    out.stdout(`Why did each commit merge? Ask the demo's database (kept after the demo):`);
    out.stdout(`  ${history} --commit ${approvedMerge}`);
    out.stdout(`  ${history} --commit ${unapprovedMerge}`);
  } catch (error) {
    out.stderr(`demo failed: ${(error as Error).message}`);
    await stopAll();
    rmSync(dataDir, { recursive: true, force: true });
    return EXIT_FAILURE;
  }
  if (once) {
    await stopAll();
    return EXIT_OK;
  }
  out.stdout(`Decisions page: ${service!.url}/decisions/?repository=${DEMO_REPOSITORY}; sign in as alice on the forge simulator's sign-in page. The service (${service!.url}/api/docs, /metrics) and the forge simulator (${sim.url}) run until Ctrl-C.`);
  return new Promise<number>((resolve) => {
    const stop = () => void stopAll().then(() => resolve(EXIT_OK));
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}

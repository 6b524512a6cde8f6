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
import { type RunningService, startService } from "./serve.ts";

/**
 * `service demo`: the service on a fresh embedded database, against the forge simulator (in this process), walking one pull
 * request through failure → owner approval → success → new commit → failure → approval of the new head → success, printing
 * each check-run transition. Then both keep running, URLs printed, until interrupted (or exit at once with --once).
 */
type Out = { stdout: (line: string) => void; stderr: (line: string) => void };

export async function runDemo(args: string[], env: Record<string, string | undefined>, out: Out): Promise<number> {
  const once = args.includes("--once");
  const dir = mkdtempSync(join(tmpdir(), "service-demo-"));
  const secret = randomBytes(32).toString("hex");
  const keys = generateAppKeys();
  writeFileSync(join(dir, "app-private-key.pem"), keys.privateKey, { mode: 0o600 });
  writeFileSync(join(dir, "webhook-secret"), secret, { mode: 0o600 });
  chmodSync(dir, 0o700);

  const sim = startForgeSimulator({ webhookSecret: secret });
  onlyFirstAppReceivesWebhooks(sim);
  let service: RunningService | null = null;
  const stopAll = async () => {
    await service?.stop().catch(() => {});
    await sim.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const scenario = await createScenario(sim, { keys });
    const config = loadConfig({
      SERVICE_HOST: env.SERVICE_HOST ?? "127.0.0.1",
      SERVICE_PORT: env.SERVICE_PORT ?? "8080",
      SERVICE_LOG_LEVEL: env.SERVICE_LOG_LEVEL ?? "warn",
      SERVICE_DATABASE_URL: `sqlite:${join(dir, "demo.db")}`,
      SERVICE_FORGE_API_URL: sim.url,
      SERVICE_FORGE_WEB_URL: sim.url,
      SERVICE_FORGE_APP_ID: String(scenario.appId),
      SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "app-private-key.pem"),
      SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "webhook-secret"),
      SERVICE_RECONCILE_ENABLED: "false",
    });
    await migrateDatabase(config.database, Date.now());
    const short = (sha: string) => sha.slice(0, 7);
    const transitions: CheckTransition[] = [];
    service = await startService(config, createLogger(config.logLevel), {
      onTransition: (t: CheckTransition) => {
        transitions.push(t);
        out.stdout(`      check on ${short(t.headSha)}: ${t.status}${t.conclusion ? ` → ${t.conclusion.toUpperCase()}` : ""}  "${t.title}"`);
      },
    });
    sim.control.mustApp(scenario.appId).webhookUrl = `${service.url}/webhooks/forge`;

    out.stdout(`forge simulator   ${sim.url}`);
    out.stdout(`service           ${service.url}   (API reference ${service.url}/api/docs, playground ${service.url}/playground/)`);
    out.stdout("");
    out.stdout(`Pull request acme/web#${scenario.pullNumber} by erin changes docs/guide.md (owners @acme/docs @alice) and src/ files (owners @bob @acme/core).`);

    const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
    let seen = 0;
    // Each step waits for a new completed result on that head (not an earlier one), so the printed story stays in order.
    const waitFor = async (headSha: string, conclusion: "success" | "failure") => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const index = transitions.findIndex((t, i) => i >= seen && t.headSha === headSha && t.status === "completed" && t.conclusion === conclusion);
        if (index !== -1) {
          seen = index + 1;
          return;
        }
        if (Date.now() > deadline) throw new Error(`the check on ${short(headSha)} did not reach ${conclusion}`);
        await Bun.sleep(25);
      }
    };
    out.stdout(`\n1. erin pushes a commit: every owner set needs an approval of this exact head`);
    const { sha: head1 } = await sim.control.pushToPullRequest({ ...pr, files: { "src/feature.ts": "export const feature = true;\n" } });
    await waitFor(head1, "failure");
    out.stdout(`\n2. alice approves (docs owner): the src/ owners have not approved yet`);
    await sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await waitFor(head1, "failure");
    out.stdout(`\n3. bob approves (src/ owner): both owner sets approved this head`);
    await sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await waitFor(head1, "success");
    out.stdout(`\n4. erin pushes another commit: approvals of the older head stop counting`);
    const { sha: head2 } = await sim.control.pushToPullRequest({ ...pr, files: { "src/feature.ts": "export const feature = 2;\n" } });
    await waitFor(head2, "failure");
    out.stdout(`\n5. alice and bob approve the new head`);
    await sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await waitFor(head2, "success");
    out.stdout(`\nDemo complete: fail → approve → success → new commit → fail → approve → success.`);
  } catch (error) {
    out.stderr(`demo failed: ${(error as Error).message}`);
    await stopAll();
    return EXIT_FAILURE;
  }
  if (once) {
    await stopAll();
    return EXIT_OK;
  }
  out.stdout(`Both servers keep running (try ${service!.url}/metrics); press Ctrl-C to stop.`);
  return new Promise<number>((resolve) => {
    const stop = () => void stopAll().then(() => resolve(EXIT_OK));
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}

// Runs the forge simulator as a process (demo, Playwright, benchmarks):
//   bun server/simulator/serve.ts [--port N] [--webhook-url URL] [--webhook-secret-file PATH]
//                          [--seed --app-private-key-file PATH [--app-id N] [--extra-pull-requests N]] [--trial]
// --trial: a forge to rehearse the App setup on (docs/getting-started.md), its clock the real one: see seedTrial.
// Prints one JSON line: { url } (plus the seeded scenario's IDs with --seed), then serves until SIGINT/SIGTERM.
import { readFileSync } from "node:fs";
import { createScenario } from "./scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "./simulator.ts";

/**
 * The trial forge: organization `acme` (alice and bob active members with write access) and its repository `acme/web`, opted in
 * with `* @alice` as CODEOWNERS, and a branch `feature` by bob ready to become a pull request; carol, a member who reads only
 * `acme/api` (opted in, `* @carol`, a branch `fix` by bob), so that two people signed in read different records. An App created on the forge's
 * creation page for `acme` is installed on it at once, as if its administrator had pressed "Install".
 */
export async function seedTrial(sim: ForgeSimulator): Promise<void> {
  const c = sim.control;
  const org = "acme";
  c.createOrganization({ login: org });
  for (const login of ["alice", "bob", "carol"]) {
    c.createUser({ login });
    await c.setOrgMembership({ org, user: login, state: "active" });
  }
  c.createRepository({ owner: org, name: "web", files: { ".forge/CODEOWNERS": "* @alice\n", ".forge/service-policy.toml": "schema_version = 1\nenabled = true\n", "README.md": "# web\n" } });
  for (const login of ["alice", "bob"]) await c.setCollaborator({ owner: org, repo: "web", user: login, permission: "write" });
  await c.commit({ owner: org, repo: "web", branch: "feature", files: { "src/index.ts": "export const feature = true;\n" }, sender: "bob" });
  c.createRepository({ owner: org, name: "api", files: { ".forge/CODEOWNERS": "* @carol\n", ".forge/service-policy.toml": "schema_version = 1\nenabled = true\n", "README.md": "# api\n" } });
  await c.setCollaborator({ owner: org, repo: "api", user: "carol", permission: "write" });
  await c.commit({ owner: org, repo: "api", branch: "fix", files: { "src/fix.ts": "export const fix = true;\n" }, sender: "bob" });
  const createApp = c.createApp.bind(c);
  c.createApp = (args) => {
    const app = createApp(args);
    if (args.owner === org) c.createInstallation({ appId: app.id, account: org });
    return app;
  };
}

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function main(args: string[]): Promise<void> {
  const secretFile = option(args, "--webhook-secret-file");
  const sim = startForgeSimulator({
    port: Number(option(args, "--port") ?? 0),
    webhookUrl: option(args, "--webhook-url"),
    webhookSecret: secretFile ? readFileSync(secretFile, "utf8").trim() : undefined,
    realClock: args.includes("--trial"),
  });
  if (args.includes("--trial")) await seedTrial(sim);
  let seeded: Record<string, unknown> = {};
  if (args.includes("--seed")) {
    const keyFile = option(args, "--app-private-key-file");
    if (!keyFile) throw new Error("--seed needs --app-private-key-file");
    const privateKey = readFileSync(keyFile, "utf8");
    const appId = option(args, "--app-id");
    const s = await createScenario(sim, { keys: { privateKey, publicKey: privateKey }, appId: appId ? Number(appId) : undefined });
    // --extra-pull-requests N: N more open pull requests, each from its own branch (benchmarks spread load over them).
    const extra = Number(option(args, "--extra-pull-requests") ?? 0);
    const pulls: Array<{ number: number; headSha: string }> = [{ number: s.pullNumber, headSha: s.headSha }];
    for (let i = 0; i < extra; i++) {
      await sim.control.commit({ owner: s.org, repo: s.repo, branch: `extra-${i}`, from: "main", files: { [`src/extra/${i}.ts`]: `export const n = ${i};\n` } });
      const pr = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: `extra-${i}`, author: "erin", title: `Extra ${i}` });
      pulls.push({ number: pr.number, headSha: pr.headSha });
    }
    seeded = { appId: s.appId, installationId: s.installationId, repository: `${s.org}/${s.repo}`, repositoryId: sim.control.mustRepo(s.org, s.repo).id, pullNumber: s.pullNumber, headSha: s.headSha, pulls };
  }
  process.stdout.write(`${JSON.stringify({ url: sim.url, ...seeded })}\n`);
  const stop = () => { void sim.stop().then(() => process.exit(0)); };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

if (import.meta.main) await main(process.argv.slice(2));

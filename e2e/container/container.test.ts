import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScenario, generateAppKeys, type Scenario } from "../../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../../server/simulator/simulator.ts";
import { ensureBinary, ROOT } from "../support/binary.ts";
import { createTestDatabase, type TestDatabase } from "../support/databases.ts";
import { waitUntil, WEBHOOK_SECRET } from "../support/service.ts";
import { all, openStore } from "../../server/store/index.ts";
import { importDebianBase } from "./base-image.ts";
import { Podman, podmanAvailability } from "./podman.ts";

/**
 * The container image built and run the way an operator runs it (issue 12): built from locally made bases with
 * --network=none from a binary compiled on the host from this commit (`--target prebuilt`), then `database migrate` as a
 * one-shot container and `serve` with a read-only root filesystem, every capability dropped, the image's non-root user and
 * the secrets mounted read-only as files, against the test PostgreSQL on loopback and the forge simulator in this process.
 * Skipped, with the reason printed, where podman cannot run (see ./podman.ts).
 */
const availability = podmanAvailability();
if (!availability.ok) {
  console.log(`container test skipped: ${availability.reason}`);
  test.skip(`container image (skipped: ${availability.reason})`, () => {});
}

const IMAGE = "localhost/codeowner-approval-service:test";
const SECRETS = "/etc/codeowner-approval";
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const SOURCE = "https://forge.example/acme/codeowner-approval-service";

function sourceRevision(): string {
  const result = Bun.spawnSync(["git", "rev-parse", "HEAD"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const revision = result.stdout.toString().trim();
  return /^[0-9a-f]{40}$/.test(revision) ? revision : "0123456789abcdef0123456789abcdef01234567";
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

if (availability.ok) describe("container image", () => {
  const revision = sourceRevision();
  const measured: Record<string, number | boolean | string> = {};
  let podman: Podman;
  let work: string;
  let sim: ForgeSimulator;
  let scenario: Scenario;
  let database: TestDatabase;
  let privateKey: string;
  let url = "";
  let serving = false;
  let drainedHead = "";
  const container = `svc-serve-${process.pid}`;

  /** The run options every container of the service gets: what an operator's runtime (or the Kubernetes example) sets. */
  const hardening = () => [
    "--network", "host", "--read-only", "--read-only-tmpfs=false", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
    "--pull", "never", "--volume", `${join(work, "secrets")}:${SECRETS}:ro`,
  ];
  const serviceEnv = (port: number) => Object.entries({
    SERVICE_HOST: "127.0.0.1",
    SERVICE_PORT: String(port),
    SERVICE_DATABASE_URL_FILE: `${SECRETS}/database/database-url`,
    SERVICE_FORGE_API_URL: sim.url,
    SERVICE_FORGE_APP_ID: String(scenario.appId),
    SERVICE_FORGE_PRIVATE_KEY_FILE: `${SECRETS}/forge/private-key.pem`,
    SERVICE_FORGE_WEBHOOK_SECRET_FILE: `${SECRETS}/forge/webhook-secret`,
  }).flatMap(([name, value]) => ["--env", `${name}=${value}`]);

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "svc-container-"));
    podman = Podman.create();
    const cache = process.env.TEST_CONTAINER_CACHE ?? join(tmpdir(), "svc-container-cache");
    const base = await importDebianBase(podman, cache);
    measured.base_image_ms = Math.round(base.ms);
    measured.base_image_cached = base.cached;

    // The binary compiled on the host from this commit with its revision baked in, in a build context of its own so the
    // shared dist/service (built without a revision) stays as it is.
    const context = join(work, "context");
    let started = performance.now();
    ensureBinary(join(context, "dist", "service"), revision);
    measured.compile_ms = Math.round(performance.now() - started);
    copyFileSync(join(ROOT, ".dockerignore"), join(context, ".dockerignore"));
    started = performance.now();
    await podman.must([
      "build", "--network=none", "--pull=never", "--target", "prebuilt", "--file", join(ROOT, "Dockerfile"),
      "--build-arg", `BASE_IMAGE=${base.image}`, "--build-arg", `REVISION=${revision}`,
      "--build-arg", `VERSION=${VERSION}`, "--build-arg", `SOURCE=${SOURCE}`, "--tag", IMAGE, context,
    ], { timeoutMs: 180_000 });
    measured.image_build_ms = Math.round(performance.now() - started);
    const size = await podman.must(["image", "inspect", "--format", "{{.Size}}", IMAGE]);
    measured.image_size_bytes = Number(size.stdout.trim());

    sim = startForgeSimulator({ webhookSecret: WEBHOOK_SECRET });
    // Each App has its own webhook URL; deliveries for other Apps go nowhere.
    const createApp = sim.control.createApp.bind(sim.control);
    let ours = true;
    sim.control.createApp = (a) => {
      const app = createApp(ours ? a : { ...a, webhookUrl: a.webhookUrl ?? "http://127.0.0.1:9/another-app" });
      ours = false;
      return app;
    };
    const keys = generateAppKeys();
    privateKey = keys.privateKey;
    scenario = await createScenario(sim, { keys });
    database = await createTestDatabase("postgresql");
    const ca = process.env.TEST_POSTGRES_CA;
    const databaseUrl = ca ? `${database.url}?sslmode=verify-full&sslrootcert=${SECRETS}/database/ca.pem` : database.url;

    // Secret files as a Kubernetes secret volume presents them (defaultMode 0440, group 65532): readable by the service user.
    const secrets = join(work, "secrets");
    const files: Record<string, string> = {
      "forge/private-key.pem": keys.privateKey,
      "forge/webhook-secret": `${WEBHOOK_SECRET}\n`,
      "database/database-url": `${databaseUrl}\n`,
    };
    if (ca) files["database/ca.pem"] = readFileSync(ca, "utf8");
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(secrets, path, ".."), { recursive: true, mode: 0o750 });
      writeFileSync(join(secrets, path), content, { mode: 0o440 });
    }
    for (const path of [secrets, join(secrets, "forge"), join(secrets, "database"), ...Object.keys(files).map((p) => join(secrets, p))]) {
      chownSync(path, 0, 65532);
    }
    chmodSync(secrets, 0o750);
  }, 600_000);

  afterAll(async () => {
    if (Object.keys(measured).length > 0) console.log(`container measurements: ${JSON.stringify(measured)}`);
    await podman?.run(["rm", "--force", "--time", "0", container]).catch(() => undefined);
    await podman?.remove();
    await sim?.stop();
    await database?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 60_000);

  test("the image runs the executable as the fixed non-root user, serve by default on port 8080, with OCI labels", async () => {
    const [config] = JSON.parse((await podman.must(["image", "inspect", IMAGE])).stdout) as Array<{
      Config: { User: string; Entrypoint: string[]; Cmd: string[]; ExposedPorts: Record<string, unknown>; Labels: Record<string, string>; Env?: string[] };
    }>;
    expect(config!.Config.User).toBe("65532:65532");
    expect(config!.Config.Entrypoint).toEqual(["/service"]);
    expect(config!.Config.Cmd).toEqual(["serve"]);
    expect(Object.keys(config!.Config.ExposedPorts)).toEqual(["8080/tcp"]);
    expect(config!.Config.Labels).toMatchObject({
      "org.opencontainers.image.version": VERSION,
      "org.opencontainers.image.revision": revision,
      "org.opencontainers.image.source": SOURCE,
    });
    expect((config!.Config.Env ?? []).filter((e) => e.startsWith("SERVICE_"))).toEqual([]);
    const version = await podman.must(["run", "--rm", "--pull", "never", "--network", "none", IMAGE, "--version"]);
    expect(version.stdout.trim()).toBe(VERSION);
  });

  test("the image configuration and history contain no secret", async () => {
    const inspect = (await podman.must(["image", "inspect", IMAGE])).stdout;
    const history = (await podman.must(["history", "--no-trunc", "--format", "json", IMAGE])).stdout;
    const keyBody = privateKey.split("\n")[1]!;
    for (const text of [inspect, history]) {
      expect(text).not.toContain(WEBHOOK_SECRET);
      expect(text).not.toContain(keyBody);
      expect(text).not.toContain(database.url);
      expect(text).not.toMatch(/PRIVATE KEY|SERVICE_DATABASE_URL|WEBHOOK_SECRET/);
    }
  });

  test("database migrate runs as a one-shot container, then database check passes", async () => {
    const port = await freePort();
    const migrate = await podman.run(["run", "--rm", ...hardening(), ...serviceEnv(port), IMAGE, "database", "migrate"]);
    expect(migrate.exitCode, migrate.stdout + migrate.stderr).toBe(0);
    const check = await podman.run(["run", "--rm", ...hardening(), ...serviceEnv(port), IMAGE, "database", "check"]);
    expect(check.exitCode, check.stdout + check.stderr).toBe(0);
  }, 60_000);

  test("serve starts read-only with every capability dropped, as the non-root user, and goes ready", async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const started = performance.now();
    await podman.must(["run", "--detach", "--name", container, ...hardening(), ...serviceEnv(port), IMAGE]);
    serving = true;
    let ready: { status: string; forge_credentials: boolean; database: boolean } | null = null;
    await waitUntil(async () => {
      const response = await fetch(`${url}/health/ready`).catch(() => null);
      if (response?.status === 200) ready = await response.json() as typeof ready;
      return ready !== null;
    }, "the container to report ready", 60_000).catch(async (error) => {
      const logs = await podman.run(["logs", container]);
      throw new Error(`${(error as Error).message}\n${logs.stdout}${logs.stderr}`);
    });
    measured.start_to_ready_ms = Math.round(performance.now() - started);
    expect(ready!).toMatchObject({ status: "ready", forge_credentials: true, database: true });
    const live = await fetch(`${url}/health/live`);
    expect(live.status).toBe(200);

    // The process as the kernel sees it: the image's user, no capability, no privilege escalation.
    const pid = (await podman.must(["inspect", "--format", "{{.State.Pid}}", container])).stdout.trim();
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    expect(status).toMatch(/^Uid:\s+65532\s+65532\s+65532\s+65532$/m);
    expect(status).toMatch(/^Gid:\s+65532\s+65532\s+65532\s+65532$/m);
    expect(status).toMatch(/^CapEff:\s+0+$/m);
    expect(status).toMatch(/^CapBnd:\s+0+$/m);
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    const inspect = (await podman.must(["inspect", container])).stdout;
    for (const secret of [WEBHOOK_SECRET, privateKey.split("\n")[1]!, database.url]) expect(inspect).not.toContain(secret);
    const mounts = readFileSync(`/proc/${pid}/mounts`, "utf8").split("\n").map((line) => line.split(" "));
    expect(mounts.find((m) => m[1] === "/")?.[3]?.split(",")).toContain("ro");
    expect(mounts.find((m) => m[1] === SECRETS)?.[3]?.split(",")).toContain("ro");
  }, 90_000);

  test("/api/runtime-identity reports the build revision given at build time", async () => {
    expect(serving).toBe(true);
    const identity = await (await fetch(`${url}/api/runtime-identity`)).json() as Record<string, unknown>;
    expect(identity).toMatchObject({ build_revision: revision, application_version: VERSION, database_backend: "postgresql", forge_app_id: scenario.appId });
    expect(JSON.stringify(identity)).not.toContain(WEBHOOK_SECRET);
  });

  test("a signed webhook is accepted and the check run reaches the simulator", async () => {
    expect(serving).toBe(true);
    sim.control.mustApp(scenario.appId).webhookUrl = `${url}/webhooks/forge`;
    const deliveries = sim.control.deliveries.length;
    const { sha } = await sim.control.pushToPullRequest({ owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber, files: { "src/container.ts": "1\n" } });
    const ours = sim.control.deliveries.slice(deliveries).filter((d) => d.url === `${url}/webhooks/forge`);
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.map((d) => d.status)).toEqual(ours.map(() => 202));
    await waitUntil(() => sim.control.checkRuns({ owner: scenario.org, repo: scenario.repo, headSha: sha })[0]?.status === "completed", "the check run on the pushed head", 30_000);
    const [run] = sim.control.checkRuns({ owner: scenario.org, repo: scenario.repo, headSha: sha }) as Array<{ conclusion: string; name: string }>;
    expect(run!.conclusion).toBe("failure");
    expect(run!.name).toBe("Service / approval");
    // The counter moves just after the check write the simulator saw.
    await waitUntil(async () => /^service_evaluations_total\{conclusion="failure"\} [1-9]/m.test(await (await fetch(`${url}/metrics`)).text()), "the evaluation to be counted");
  }, 60_000);

  test("SIGTERM (podman stop) during an evaluation drains: exit code 0 within 10 seconds and no lease left behind", async () => {
    expect(serving).toBe(true);
    const reviewsPath = `/repos/${scenario.org}/${scenario.repo}/pulls/${scenario.pullNumber}/reviews`;
    sim.injectFault({ kind: "slow", delayMs: 7_000, path: reviewsPath, times: 1 });
    const before = sim.requests.length;
    drainedHead = (await sim.control.pushToPullRequest({ owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber, files: { "src/drain.ts": "1\n" } })).sha;
    await waitUntil(() => sim.requests.slice(before).some((r) => r.path === reviewsPath), "the evaluation to be in flight");
    const stop = await podman.must(["stop", "--time", "15", container], { timeoutMs: 30_000 });
    measured.shutdown_ms = Math.round(stop.ms);
    const state = JSON.parse((await podman.must(["inspect", "--format", "{{json .State}}", container])).stdout) as { ExitCode: number; Status: string };
    expect(state.Status).toBe("exited");
    expect(state.ExitCode).toBe(0);
    expect(stop.ms).toBeLessThan(10_000);
    const store = openStore(database.target);
    try {
      const leased = await store.execute(function* () { return yield* all("select kind from jobs where lease_owner is not null"); });
      expect(leased).toEqual([]);
      const pending = await store.execute(function* () { return yield* all("select state from jobs where kind = 'evaluation'"); });
      expect(pending).toContainEqual({ state: "pending" });
    } finally {
      await store.close();
    }
    const logs = await podman.must(["logs", container]);
    expect(logs.stdout + logs.stderr).not.toContain(WEBHOOK_SECRET);
    await podman.must(["rm", container]);
    serving = false;
  }, 60_000);

  test("a replacement container (Recreate) finishes the drained work, and an idle stop exits 0 at once", async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const started = performance.now();
    await podman.must(["run", "--detach", "--name", container, ...hardening(), ...serviceEnv(port), IMAGE]);
    await waitUntil(async () => (await fetch(`${url}/health/ready`).catch(() => null))?.status === 200, "the replacement to report ready", 60_000);
    measured.restart_to_ready_ms = Math.round(performance.now() - started);
    sim.control.mustApp(scenario.appId).webhookUrl = `${url}/webhooks/forge`;
    expect(drainedHead).not.toBe("");
    await waitUntil(() => sim.control.checkRuns({ owner: scenario.org, repo: scenario.repo, headSha: drainedHead })[0]?.status === "completed", "the drained evaluation to complete", 30_000);
    const stop = await podman.must(["stop", "--time", "15", container], { timeoutMs: 30_000 });
    measured.idle_shutdown_ms = Math.round(stop.ms);
    const state = JSON.parse((await podman.must(["inspect", "--format", "{{json .State}}", container])).stdout) as { ExitCode: number };
    expect(state.ExitCode).toBe(0);
    expect(stop.ms).toBeLessThan(10_000);
    await podman.must(["rm", container]);
  }, 90_000);
});

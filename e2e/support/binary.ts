import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ForgeSimulator } from "../../server/simulator/simulator.ts";

/** Spawning the compiled executable (dist/service) the way an operator runs it, with output captured for assertions. */
export const ROOT = join(import.meta.dir, "..", "..");
export const BINARY = join(ROOT, "dist", "service");

/** Builds dist/service once when it is missing (npm test builds it first; a lone `bun test` still works). */
export function ensureBinary(path = BINARY, revision?: string): string {
  if (existsSync(path) && revision === undefined) return path;
  const result = Bun.spawnSync([process.execPath, "scripts/build.ts", "--outfile", path], {
    cwd: ROOT,
    env: { ...cleanEnv(), ...(revision ? { BUILD_REVISION: revision } : {}) },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (result.exitCode !== 0) throw new Error(`build failed: ${result.stderr.toString()}`);
  return path;
}

/** The environment without any SERVICE_* or PG* variable of the test runner. */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("SERVICE_") && !name.startsWith("PG") && !name.startsWith("TEST_")) env[name] = value;
  }
  return env;
}

export type RunResult = { exitCode: number; stdout: string; stderr: string };

export function runBinary(args: string[], env: Record<string, string>, options: { cwd?: string; binary?: string; stdin?: string } = {}): RunResult {
  const stdin = options.stdin === undefined ? {} : { stdin: new TextEncoder().encode(options.stdin) };
  const result = Bun.spawnSync([options.binary ?? BINARY, ...args], { cwd: options.cwd ?? "/", env: { ...cleanEnv(), ...env }, stdout: "pipe", stderr: "pipe", ...stdin });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

export type RunningBinary = {
  readonly url: string;
  readonly process: ReturnType<typeof Bun.spawn>;
  output(): string;
  /** Sends SIGTERM and waits for the exit; returns the exit code and the milliseconds it took. */
  stop(signal?: NodeJS.Signals): Promise<{ exitCode: number | null; ms: number }>;
};

export async function startBinary(env: Record<string, string>, options: { cwd?: string; binary?: string; args?: string[] } = {}): Promise<RunningBinary> {
  const proc = Bun.spawn([options.binary ?? BINARY, ...(options.args ?? ["serve"])], {
    cwd: options.cwd ?? "/",
    env: { ...cleanEnv(), SERVICE_HOST: "127.0.0.1", SERVICE_PORT: "0", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const reader = stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      output += decoder.decode(value, { stream: true });
    }
  };
  const pumps = Promise.all([pump(proc.stdout as ReadableStream<Uint8Array>), pump(proc.stderr as ReadableStream<Uint8Array>)]);
  const deadline = Date.now() + 15_000;
  let url = "";
  while (!url) {
    const match = output.match(/"url":"(http:\/\/[^"]+)"[^\n]*"msg":"listening"/);
    if (match) url = match[1]!;
    else if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      await pumps.catch(() => {});
      throw new Error(`service did not start (exit ${proc.exitCode}):\n${output}`);
    } else await Bun.sleep(20);
  }
  return {
    url,
    process: proc,
    output: () => output,
    async stop(signal = "SIGTERM") {
      const started = performance.now();
      proc.kill(signal);
      const exitCode = await proc.exited;
      await pumps.catch(() => {});
      return { exitCode, ms: performance.now() - started };
    },
  };
}

/**
 * The settings of a compiled service against the forge simulator: the scenario App's ID, its private key and the webhook
 * secret written as files into `dir` (secrets reach the service only as files), the database, and the reconciler off.
 */
export function simulatorEnv(at: { simUrl: string; appId: number; privateKey: string; webhookSecret: string; databaseUrl: string; dir: string }): Record<string, string> {
  writeFileSync(join(at.dir, "key.pem"), at.privateKey);
  writeFileSync(join(at.dir, "webhook"), at.webhookSecret);
  return {
    SERVICE_DATABASE_URL: at.databaseUrl,
    SERVICE_FORGE_API_URL: at.simUrl,
    SERVICE_FORGE_APP_ID: String(at.appId),
    SERVICE_FORGE_PRIVATE_KEY_FILE: join(at.dir, "key.pem"),
    SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(at.dir, "webhook"),
    SERVICE_RECONCILE_ENABLED: "false",
  };
}

/** Migrates the database, starts the binary with `env` and points the App's webhooks at it. */
export async function startForSimulator(sim: ForgeSimulator, appId: number, env: Record<string, string>): Promise<RunningBinary> {
  const migrated = runBinary(["database", "migrate"], env);
  if (migrated.exitCode !== 0) throw new Error(`database migrate exited ${migrated.exitCode}: ${migrated.stderr}`);
  const service = await startBinary(env);
  sim.control.mustApp(appId).webhookUrl = `${service.url}/webhooks/forge`;
  return service;
}

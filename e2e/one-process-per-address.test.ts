import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, ROOT, cleanEnv, ensureBinary, type RunningBinary, runBinary, startBinary } from "./support/binary.ts";

/**
 * One process per address: a second process asked to listen where one already does fails to start, naming the address,
 * instead of sharing the port (requests would then land on either process).
 */
let dir: string;
let first: RunningBinary;
let port: number;
let env: Record<string, string>;
beforeAll(async () => {
  ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "svc-address-"));
  env = { SERVICE_DATABASE_URL: `sqlite:${join(dir, "first.db")}` };
  expect(runBinary(["database", "migrate"], env).exitCode).toBe(0);
  first = await startBinary(env);
  port = Number(new URL(first.url).port);
});
afterAll(async () => {
  await first?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the binary and waits for its exit, at most timeoutMs; a process still running then is killed and reported as such. */
async function runToExit(args: string[], extra: Record<string, string>, timeoutMs: number, command = [BINARY]): Promise<{ exitCode: number | "still running"; output: string }> {
  const proc = Bun.spawn([...command, ...args], { cwd: dir, env: { ...cleanEnv(), ...extra }, stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { exitCode: proc.signalCode === "SIGKILL" ? "still running" : exitCode, output: stdout + stderr };
}

async function firstStillAnswers(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    const response = await fetch(`${first.url}/health/live`);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
  }
  expect(first.process.exitCode).toBeNull();
}

describe("one process per address", () => {
  test("a second serve on the same host and port exits non-zero naming the address, and the first keeps answering", async () => {
    const second = { SERVICE_DATABASE_URL: `sqlite:${join(dir, "second.db")}`, SERVICE_HOST: "127.0.0.1", SERVICE_PORT: String(port) };
    expect(runBinary(["database", "migrate"], second).exitCode).toBe(0);
    const result = await runToExit(["serve"], second, 8_000);
    expect(result.exitCode).toBe(1);
    expect(result.output).toContain(`127.0.0.1:${port}`);
    expect(result.output).toContain("in use");
    await firstStillAnswers();
  }, 20_000);

  test("service demo on an address in use exits non-zero naming the address, and the first keeps answering", async () => {
    const result = await runToExit(["demo", "--once"], { SERVICE_HOST: "127.0.0.1", SERVICE_PORT: String(port) }, 30_000);
    expect(result.exitCode).toBe(1);
    expect(result.output).toContain(`127.0.0.1:${port}`);
    expect(result.output).toContain("in use");
    await firstStillAnswers();
  }, 45_000);

  test("the forge simulator on a fixed port in use exits non-zero naming the port, in production mode too", async () => {
    const simulator = [process.execPath, join(ROOT, "server", "simulator", "serve.ts")];
    const result = await runToExit(["--port", String(port)], { NODE_ENV: "production" }, 8_000, simulator);
    expect(result.exitCode).toBe(1);
    expect(result.output).toContain(`port ${port} in use`);
    await firstStillAnswers();
  }, 20_000);
});

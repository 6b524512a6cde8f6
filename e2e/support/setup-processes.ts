// Processes of the setup spec, started with Node's child_process (Playwright runs specs under Node, so e2e/support/binary.ts,
// which uses Bun APIs, cannot be imported here): the compiled service and the forge simulator, each with captured output.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const BINARY = join(ROOT, "dist", "service");

/** The environment without any SERVICE_*, PG* or TEST_* variable of the test runner (as in e2e/support/binary.ts). */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("SERVICE_") && !name.startsWith("PG") && !name.startsWith("TEST_")) env[name] = value;
  }
  return env;
}

export interface Running {
  readonly url: string;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  stop(): Promise<number | null>;
}

function capture(child: ChildProcess): { text: () => string } {
  let text = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => { text += chunk; });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => { text += chunk; });
  return { text: () => text };
}

async function waitFor(child: ChildProcess, out: { text: () => string }, find: (text: string) => string | null, what: string): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const found = find(out.text());
    if (found) return found;
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${what} did not start (exit ${child.exitCode}):\n${out.text()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

function stopper(child: ChildProcess): () => Promise<number | null> {
  return () => new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", (code) => { clearTimeout(timer); resolve(code); });
    child.kill("SIGTERM");
  });
}

/** `database migrate` on the given environment (the embedded database in the spec). */
export function migrate(env: Record<string, string>, cwd: string): void {
  execFileSync(BINARY, ["database", "migrate"], { cwd, env: { ...cleanEnv(), ...env }, stdio: "pipe" });
}

/** `serve` on 127.0.0.1 with a system-chosen port; resolves once the service logs "listening". */
export async function startService(env: Record<string, string>, cwd: string): Promise<Running> {
  const child = spawn(BINARY, ["serve"], { cwd, env: { ...cleanEnv(), SERVICE_HOST: "127.0.0.1", SERVICE_PORT: "0", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const out = capture(child);
  const url = await waitFor(child, out, (t) => /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"listening"/.exec(t)?.[1] ?? null, "the service");
  return { url, output: out.text, stop: stopper(child) };
}

/** The forge simulator as a process (`bun server/simulator/serve.ts`), trusting `caFile` for its webhook deliveries over HTTPS. */
export async function startSimulator(caFile: string): Promise<Running> {
  const bun = process.env.BUN_PATH ?? "bun";
  const child = spawn(bun, [join(ROOT, "server", "simulator", "serve.ts")], { cwd: ROOT, env: { ...cleanEnv(), NODE_EXTRA_CA_CERTS: caFile }, stdio: ["ignore", "pipe", "pipe"] });
  const out = capture(child);
  const url = await waitFor(child, out, (t) => /^\{"url":"(http:\/\/[^"]+)"/m.exec(t)?.[1] ?? null, "the forge simulator");
  return { url, output: out.text, stop: stopper(child) };
}

/** One call of the simulator's control API (`POST /_control/<operation>`). */
export async function control<T = unknown>(simulatorUrl: string, operation: string, body: unknown = {}): Promise<T> {
  const res = await fetch(`${simulatorUrl}/_control/${operation}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const json = (await res.json()) as T;
  if (!res.ok) throw new Error(`control ${operation}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

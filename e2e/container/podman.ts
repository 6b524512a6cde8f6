import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Podman as this machine runs it (RECIPES 12): runc, not crun (cgroups hybrid mode); explicit ulimits (root lacks
 * CAP_SYS_RESOURCE); all state — images, containers, runtime files, events — in one temp directory that `remove()` deletes.
 * Nothing here touches the machine's own podman configuration or storage.
 */
export type Availability = { ok: true } | { ok: false; reason: string };

/** Whether the container test can run here: podman, runc and debootstrap installed and the process running as root. */
export function podmanAvailability(): Availability {
  if (process.platform !== "linux") return { ok: false, reason: `podman containers need Linux (this is ${process.platform})` };
  const missing = ["podman", "runc", "debootstrap"].filter((tool) => !findTool(tool));
  if (missing.length > 0) return { ok: false, reason: `${missing.join(", ")} not installed (scripts/test.sh installs them with apt-get when it runs as root)` };
  if (process.getuid?.() !== 0) return { ok: false, reason: "debootstrap and rootful podman need root; run `npm test` as root" };
  // podman info with this configuration: the runtime and the overlay storage driver must work on this kernel.
  const probe = Podman.create();
  try {
    const info = Bun.spawnSync(["podman", "info", "--format", "{{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}}"], { env: probe.env, stdout: "pipe", stderr: "pipe" });
    if (info.exitCode !== 0) return { ok: false, reason: `podman cannot run here: ${info.stderr.toString().trim().split("\n")[0]}` };
  } finally {
    rmSync(probe.dir, { recursive: true, force: true });
  }
  return { ok: true };
}

function findTool(name: string): string | null {
  return Bun.which(name, { PATH: `${process.env.PATH ?? ""}:/usr/sbin:/sbin` });
}

export type CommandResult = { exitCode: number; stdout: string; stderr: string; ms: number };

export class Podman {
  private constructor(readonly dir: string, readonly env: Record<string, string>) {}

  /** A private podman configuration and storage under a new temp directory. */
  static create(): Podman {
    const dir = mkdtempSync(join(tmpdir(), "svc-podman-"));
    for (const sub of ["graph", "run", "tmp", "networks"]) mkdirSync(join(dir, sub));
    writeFileSync(join(dir, "containers.conf"), [
      "[containers]",
      'default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]',
      "[engine]",
      'runtime = "runc"',
      'cgroup_manager = "cgroupfs"',
      'events_logger = "file"',
      `tmp_dir = "${join(dir, "tmp")}"`,
      "[network]",
      `network_config_dir = "${join(dir, "networks")}"`,
      "",
    ].join("\n"));
    writeFileSync(join(dir, "storage.conf"), [
      "[storage]",
      'driver = "overlay"',
      `graphroot = "${join(dir, "graph")}"`,
      `runroot = "${join(dir, "run")}"`,
      "",
    ].join("\n"));
    const env: Record<string, string> = {
      PATH: `${process.env.PATH ?? "/usr/bin:/bin"}:/usr/sbin:/sbin`,
      HOME: process.env.HOME ?? "/root",
      CONTAINERS_CONF: join(dir, "containers.conf"),
      CONTAINERS_STORAGE_CONF: join(dir, "storage.conf"),
    };
    return new Podman(dir, env);
  }

  /** Runs `podman ARGS`; stdin may be a file path whose bytes are piped in. */
  async run(args: string[], options: { stdinFile?: string; timeoutMs?: number } = {}): Promise<CommandResult> {
    const started = performance.now();
    const proc = Bun.spawn(["podman", ...args], {
      env: this.env,
      stdin: options.stdinFile ? Bun.file(options.stdinFile) : "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const timer = setTimeout(() => proc.kill("SIGKILL"), options.timeoutMs ?? 120_000);
    const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    clearTimeout(timer);
    return { exitCode, stdout, stderr, ms: performance.now() - started };
  }

  /** Like run, but throws with podman's output when the command fails. */
  async must(args: string[], options: { stdinFile?: string; timeoutMs?: number } = {}): Promise<CommandResult> {
    const result = await this.run(args, options);
    if (result.exitCode !== 0) throw new Error(`podman ${args.slice(0, 2).join(" ")} exited ${result.exitCode}:\n${result.stdout}\n${result.stderr}`);
    return result;
  }

  /** Removes every container and image of this private store, then the directory itself. */
  async remove(): Promise<void> {
    await this.run(["rm", "--all", "--force", "--time", "0"]).catch(() => undefined);
    await this.run(["rmi", "--all", "--force"]).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The Debian mirror this machine's apt already uses (deb822 `URIs:` or one-line `deb` entries for bookworm). */
export function debianMirror(): string {
  const files = ["/etc/apt/sources.list"];
  if (existsSync("/etc/apt/sources.list.d")) {
    for (const name of readdirSync("/etc/apt/sources.list.d").sort()) files.push(join("/etc/apt/sources.list.d", name));
  }
  for (const file of files) {
    if (!existsSync(file) || !statSync(file).isFile()) continue;
    const text = readFileSync(file, "utf8");
    for (const stanza of text.split(/\n\s*\n/)) {
      const uris = stanza.match(/^URIs:\s*(\S+)/m)?.[1];
      const suites = stanza.match(/^Suites:\s*(.+)$/m)?.[1]?.split(/\s+/) ?? [];
      if (uris && suites.includes("bookworm")) return uris;
    }
    for (const line of text.split("\n")) {
      const match = line.match(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/);
      if (match) return match[1]!;
    }
  }
  return "http://deb.debian.org/debian";
}
